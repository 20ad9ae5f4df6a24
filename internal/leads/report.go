package leads

import (
	"context"
	"sort"
	"time"
)

// SourceFigures are one source's leads over a period (SourceReport).
type SourceFigures struct {
	SourceID  string `db:"source_id"`
	Leads     int64  `db:"leads"`
	Qualified int64  `db:"qualified"` // status qualified or won (a won lead was qualified)
	Won       int64  `db:"won"`
	// Responded counts the leads with a first response; MedianResponse is
	// the median time from assignment to it (0 when none).
	Responded      int64         `db:"responded"`
	MedianResponse time.Duration `db:"-"`
}

// reportDimension is what SourceReport groups by. A campaign report is
// the same queries grouped by the attribution's campaign (e.g.
// JSON_UNQUOTE(JSON_EXTRACT(attribution, '$.last.utm_campaign'))) once
// leads carry one.
const reportDimension = "source_id"

// SourceReport returns, per source, the tenant's leads created in
// [from, to): how many, how many were qualified and won, and the median
// time from assignment to first response. Two reads of one range of
// ix_leads_report (migration 0871), which covers every column they need.
func (s *Service) SourceReport(ctx context.Context, tenantID string, from, to time.Time) ([]SourceFigures, error) {
	var out []SourceFigures
	err := s.DB.SelectContext(ctx, &out, `SELECT `+reportDimension+` AS source_id, COUNT(*) AS leads,
  SUM(status IN ('qualified', 'won')) AS qualified, SUM(status = 'won') AS won,
  SUM(first_responded_at IS NOT NULL AND assigned_at IS NOT NULL) AS responded
FROM leads FORCE INDEX (ix_leads_report)
WHERE tenant_id = ? AND created_at >= ? AND created_at < ?
GROUP BY `+reportDimension+` ORDER BY `+reportDimension, tenantID, from.UTC(), to.UTC())
	if err != nil || len(out) == 0 {
		return out, err
	}
	var med []struct {
		SourceID string  `db:"source_id"`
		Seconds  float64 `db:"seconds"`
	}
	err = s.DB.SelectContext(ctx, &med, `SELECT DISTINCT `+reportDimension+` AS source_id,
  MEDIAN(TIMESTAMPDIFF(MICROSECOND, assigned_at, first_responded_at) / 1000000) OVER (PARTITION BY `+reportDimension+`) AS seconds
FROM leads FORCE INDEX (ix_leads_report)
WHERE tenant_id = ? AND created_at >= ? AND created_at < ?
  AND first_responded_at IS NOT NULL AND assigned_at IS NOT NULL`, tenantID, from.UTC(), to.UTC())
	if err != nil {
		return nil, err
	}
	by := make(map[string]float64, len(med))
	for _, m := range med {
		by[m.SourceID] = m.Seconds
	}
	for i := range out {
		out[i].MedianResponse = time.Duration(by[out[i].SourceID] * float64(time.Second)).Round(time.Second)
	}
	return out, nil
}

// DailyLeads returns, per source, the tenant's leads created in each day
// of [from, to) in loc (index 0 is the day of from): counted per hour
// in MariaDB (the zone's part-hour offset applied), and the hours put on
// their local days here, so days stay right across daylight-saving
// changes. At most 400 days.
func (s *Service) DailyLeads(ctx context.Context, tenantID string, from, to time.Time, loc *time.Location) (map[string][]int64, error) {
	if loc == nil {
		loc = time.UTC
	}
	_, off := from.In(loc).Zone()
	shift := ((off % 3600) + 3600) % 3600 // seconds past a UTC hour at which local hours start
	var rows []struct {
		SourceID string `db:"source_id"`
		Hour     int64  `db:"h"`
		N        int64  `db:"n"`
	}
	err := s.DB.SelectContext(ctx, &rows, `SELECT `+reportDimension+` AS source_id,
  FLOOR((UNIX_TIMESTAMP(created_at) - ?) / 3600) AS h, COUNT(*) AS n
FROM leads FORCE INDEX (ix_leads_report)
WHERE tenant_id = ? AND created_at >= ? AND created_at < ?
GROUP BY `+reportDimension+`, h`, shift, tenantID, from.UTC(), to.UTC())
	if err != nil {
		return nil, err
	}
	var days []time.Time // local day starts
	for d := from.In(loc); d.Before(to); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	out := map[string][]int64{}
	for _, r := range rows {
		t := time.Unix(r.Hour*3600+int64(shift), 0).In(loc)
		i := sort.Search(len(days), func(i int) bool { return days[i].After(t) }) - 1
		if i < 0 {
			continue
		}
		if out[r.SourceID] == nil {
			out[r.SourceID] = make([]int64, len(days))
		}
		out[r.SourceID][i] += r.N
	}
	return out, nil
}
