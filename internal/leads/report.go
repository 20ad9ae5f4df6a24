package leads

import (
	"context"
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
