package leads

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// ReportBy is what the "Sources and campaigns" report groups leads by.
type ReportBy string

const (
	// BySource: one row per source.
	BySource ReportBy = "source"
	// ByCampaign: one row per campaign and source. The campaign is the
	// lead's first touch (leads.report_campaign, migration 0880): it is
	// set once, so a period's figures do not move when a lead comes back
	// through another campaign, and it is the campaign that brought the
	// person ("original source"), which is what "which campaign brings
	// leads that get won" asks. A lead without one is in the campaign "".
	ByCampaign ReportBy = "campaign"
)

// reportGroup returns the SELECT list naming a row's key (source_id,
// campaign) and the GROUP BY columns for a grouping. Every column is in
// ix_leads_report, so a query reads the index alone.
func reportGroup(by ReportBy) (sel, group string) {
	if by == ByCampaign {
		return "source_id, report_campaign AS campaign", "report_campaign, source_id"
	}
	return "source_id, '' AS campaign", "source_id"
}

// ReportKey names one row of the report: a source, and with ByCampaign a
// campaign ("" for leads without one).
type ReportKey struct {
	SourceID string `db:"source_id"`
	Campaign string `db:"campaign"`
}

// SourceFigures are one row's leads over a period (SourceReport).
type SourceFigures struct {
	ReportKey
	Leads     int64 `db:"leads"`
	Qualified int64 `db:"qualified"` // status qualified or won (a won lead was qualified)
	Won       int64 `db:"won"`
	// Responded counts the leads with a first response; MedianResponse is
	// the median time from assignment to first response (0 when none).
	Responded      int64         `db:"responded"`
	MedianResponse time.Duration `db:"-"`
}

// SourceReport returns, per source (or per campaign and source), the
// tenant's leads created in [from, to): how many, how many were qualified
// and won, and the median time from assignment to first response.
//
// One read of a range of ix_leads_report (migrations 0871, 0880), which
// covers every column it needs, streamed and counted here: a lead is a
// short row (its key, a status code, its response time in microseconds).
// MariaDB's GROUP BY and its MEDIAN window over the same range took two
// passes and a sort each, 190–260 ms for 82,000 leads against about half
// that for the one pass (docs/BENCHMARKS.md).
func (s *Service) SourceReport(ctx context.Context, tenantID string, by ReportBy, from, to time.Time) ([]SourceFigures, error) {
	campaign := "''"
	if by == ByCampaign {
		campaign = "report_campaign"
	}
	type group struct {
		figs  SourceFigures
		times []int64 // microseconds from assignment to first response
	}
	var groups map[string]map[string]*group // by source, then campaign
	// A report tolerates lag: on the replica when it is usable.
	err := s.lagged(ctx, func(x *sqlx.DB) error {
		groups = map[string]map[string]*group{}
		rows, err := x.QueryContext(ctx, `SELECT source_id, `+campaign+`,
  (status IN ('qualified', 'won')) + (status = 'won'),
  TIMESTAMPDIFF(MICROSECOND, assigned_at, first_responded_at)
FROM leads FORCE INDEX (ix_leads_report)
WHERE tenant_id = ? AND created_at >= ? AND created_at < ?`, tenantID, from.UTC(), to.UTC())
		if err != nil {
			return err
		}
		defer rows.Close()
		var src, camp sql.RawBytes
		var stage int
		var took sql.NullInt64
		for rows.Next() {
			if err := rows.Scan(&src, &camp, &stage, &took); err != nil {
				return err
			}
			// m[string(b)] looks up without a copy of b.
			bySrc := groups[string(src)]
			if bySrc == nil {
				bySrc = map[string]*group{}
				groups[string(src)] = bySrc
			}
			g := bySrc[string(camp)]
			if g == nil {
				g = &group{figs: SourceFigures{ReportKey: ReportKey{SourceID: string(src), Campaign: string(camp)}}}
				bySrc[string(camp)] = g
			}
			g.figs.Leads++
			if stage >= 1 {
				g.figs.Qualified++
			}
			if stage == 2 {
				g.figs.Won++
			}
			if took.Valid {
				g.times = append(g.times, took.Int64)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	var out []SourceFigures
	for _, bySrc := range groups {
		for _, g := range bySrc {
			g.figs.Responded = int64(len(g.times))
			g.figs.MedianResponse = (time.Duration(median(g.times)) * time.Microsecond).Round(time.Second)
			out = append(out, g.figs)
		}
	}
	// The order of the GROUP BY it replaces: by campaign, then source.
	slices.SortFunc(out, func(a, b SourceFigures) int {
		if c := strings.Compare(a.Campaign, b.Campaign); c != 0 {
			return c
		}
		return strings.Compare(a.SourceID, b.SourceID)
	})
	return out, nil
}

// median is the middle of xs (the mean of the two middle values of an
// even count, as MariaDB's MEDIAN), 0 for none; it sorts xs.
func median(xs []int64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return float64(xs[m])
	}
	return (float64(xs[m-1]) + float64(xs[m])) / 2
}

// DailyLeads returns, per row of the grouping, the tenant's leads created
// in each day of [from, to) in loc (index 0 is the day of from). MariaDB
// puts each lead on its local day by the days' starts computed here
// (INTERVAL() is a binary search over them), so days stay right across
// daylight-saving changes and a row has at most one group a day. At most
// 400 days.
func (s *Service) DailyLeads(ctx context.Context, tenantID string, by ReportBy, from, to time.Time, loc *time.Location) (map[ReportKey][]int64, error) {
	if loc == nil {
		loc = time.UTC
	}
	sel, group := reportGroup(by)
	var days []time.Time // local day starts
	for d := from.In(loc); d.Before(to); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	if len(days) == 0 {
		return map[ReportKey][]int64{}, nil
	}
	args := []any{}
	for _, d := range days {
		args = append(args, d.Unix())
	}
	args = append(args, tenantID, from.UTC(), to.UTC())
	var rows []struct {
		ReportKey
		Day int   `db:"d"` // 1 is days[0]
		N   int64 `db:"n"`
	}
	err := s.lagged(ctx, func(x *sqlx.DB) error {
		rows = nil
		return x.SelectContext(ctx, &rows, `SELECT `+sel+`,
  INTERVAL(UNIX_TIMESTAMP(created_at)`+strings.Repeat(", ?", len(days))+`) AS d, COUNT(*) AS n
FROM leads FORCE INDEX (ix_leads_report)
WHERE tenant_id = ? AND created_at >= ? AND created_at < ?
GROUP BY `+group+`, d`, args...)
	})
	if err != nil {
		return nil, err
	}
	out := map[ReportKey][]int64{}
	for _, r := range rows {
		if r.Day < 1 || r.Day > len(days) {
			continue
		}
		if out[r.ReportKey] == nil {
			out[r.ReportKey] = make([]int64, len(days))
		}
		out[r.ReportKey][r.Day-1] += r.N
	}
	return out, nil
}
