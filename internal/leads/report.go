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
	// Daily counts the leads per day of the period (Report only).
	Daily []int64 `db:"-"`
}

// SourceReport returns, per source (or per campaign and source), the
// tenant's leads created in [from, to): how many, how many were qualified
// and won, and the median time from assignment to first response.
func (s *Service) SourceReport(ctx context.Context, tenantID string, by ReportBy, from, to time.Time) ([]SourceFigures, error) {
	return s.report(ctx, tenantID, by, from, to, nil)
}

// Report is SourceReport with each row's leads per day of [from, to) in
// loc (Daily; index 0 is the day of from), counted in the same pass: the
// report page's figures and chart in one read. Days are calendar days in
// loc, so they stay right across daylight-saving changes. At most 400
// days.
func (s *Service) Report(ctx context.Context, tenantID string, by ReportBy, from, to time.Time, loc *time.Location) ([]SourceFigures, error) {
	if loc == nil {
		loc = time.UTC
	}
	return s.report(ctx, tenantID, by, from, to, loc)
}

// report reads one range of ix_leads_report (migrations 0871, 0880),
// which covers every column it needs, and counts as the rows stream: a
// lead is a short row (its key, a status code, its response time and,
// with loc, its age in the period, in microseconds). MariaDB's GROUP BY
// and its MEDIAN window over the same range took two passes and a sort
// each, about twice the time of the one pass (docs/BENCHMARKS.md). With
// loc nil there are no days.
func (s *Service) report(ctx context.Context, tenantID string, by ReportBy, from, to time.Time, loc *time.Location) ([]SourceFigures, error) {
	campaign := "''"
	if by == ByCampaign {
		campaign = "report_campaign"
	}
	// The days' starts as microseconds since from: a lead is on the last
	// day that starts at or before it.
	var starts []int64
	age, args := "0", []any{tenantID, from.UTC(), to.UTC()}
	if loc != nil {
		for d := from.In(loc); d.Before(to); d = d.AddDate(0, 0, 1) {
			starts = append(starts, d.Sub(from).Microseconds())
		}
		age, args = "TIMESTAMPDIFF(MICROSECOND, ?, created_at)", append([]any{from.UTC()}, args...)
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
  TIMESTAMPDIFF(MICROSECOND, assigned_at, first_responded_at), `+age+`
FROM leads FORCE INDEX (ix_leads_report)
WHERE tenant_id = ? AND created_at >= ? AND created_at < ?`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var src, camp sql.RawBytes
		var stage int
		var took sql.NullInt64
		var at int64
		for rows.Next() {
			if err := rows.Scan(&src, &camp, &stage, &took, &at); err != nil {
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
				if starts != nil {
					g.figs.Daily = make([]int64, len(starts))
				}
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
			if starts != nil {
				// The number of days starting at or before the lead, less one.
				if d, found := slices.BinarySearch(starts, at); found {
					g.figs.Daily[d]++
				} else if d > 0 {
					g.figs.Daily[d-1]++
				}
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
	// By campaign, then source.
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
