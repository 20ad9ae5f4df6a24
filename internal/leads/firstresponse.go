package leads

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"leadpipe/internal/apperr"
)

// First-response statistics (docs/ARCHITECTURE.md, "Assignment and first response") for the monitor area: the
// sla_breach alert rule and the monitor page's charts. They read the
// leads table, which this area owns; monitor asks through these.

// Overdue is how many of a tenant's leads wait for their first response
// past its due time, and the oldest due time among them.
type Overdue struct {
	Count     int64
	OldestDue *time.Time
}

// OverdueCount counts the tenant's unanswered leads whose first response
// was due before dueBefore (sla=overdue at that time: first_responded_at
// IS NULL and first_response_due_at < dueBefore), on ix_leads_sla.
func (s *Service) OverdueCount(ctx context.Context, tenantID string, dueBefore time.Time) (Overdue, error) {
	var row struct {
		N      int64        `db:"n"`
		Oldest sql.NullTime `db:"oldest"`
	}
	err := s.DB.GetContext(ctx, &row, `SELECT COUNT(*) AS n, MIN(first_response_due_at) AS oldest FROM leads FORCE INDEX (ix_leads_sla)
WHERE tenant_id = ? AND first_responded_at IS NULL AND first_response_due_at < ?`, tenantID, dueBefore.UTC())
	if err != nil {
		return Overdue{}, err
	}
	out := Overdue{Count: row.N}
	if row.Oldest.Valid {
		t := row.Oldest.Time.UTC()
		out.OldestDue = &t
	}
	return out, nil
}

// ResponseDay is one day (midnight to midnight in the reader's zone) of
// first responses: how many leads got theirs that day and the median time
// from assignment to it. Median is 0 when Responded is 0.
type ResponseDay struct {
	Day       time.Time // the day's midnight, in the zone asked for
	Responded int64
	Median    time.Duration
}

// OwnerResponse is one owner's first responses over the period (their
// count and median) and their leads overdue now. OwnerID "" holds the
// leads without an owner.
type OwnerResponse struct {
	OwnerID   string
	Responded int64
	Median    time.Duration
	Overdue   int64
}

// ResponseStats are the monitor page's first-response figures.
type ResponseStats struct {
	Days      []ResponseDay   // oldest first, one per day, the last being today
	Owners    []OwnerResponse // owners with a response in the period or an overdue lead
	Responded int64           // over the whole period
	Median    time.Duration   // over the whole period
	Overdue   int64           // now
}

// MaxResponseDays bounds ResponseStats' period.
const MaxResponseDays = 92

// ResponseStats returns, for the days days ending with today in loc, the
// median time to first response per day and per owner. A response counts
// on the day (in loc) it was given; its time is first_responded_at −
// assigned_at (leads never assigned by a rule have no clock and do not
// count). Medians are MariaDB's MEDIAN (the mean of the two middle values
// of an even count), at whole seconds; the database sorts, this process
// only receives one row per day and per owner.
func (s *Service) ResponseStats(ctx context.Context, tenantID string, days int, loc *time.Location, now time.Time) (ResponseStats, error) {
	if days < 1 || days > MaxResponseDays {
		return ResponseStats{}, apperr.InvalidFields(map[string]string{"days": fmt.Sprintf("must be between 1 and %d", MaxResponseDays)})
	}
	if loc == nil {
		loc = time.UTC
	}
	n := now.In(loc)
	today := time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, loc)
	bounds := make([]time.Time, days+1) // midnights, oldest first; the last is tomorrow's
	for i := range bounds {
		bounds[i] = today.AddDate(0, 0, i-days+1)
	}
	out := ResponseStats{Days: make([]ResponseDay, days)}
	for i := range out.Days {
		out.Days[i].Day = bounds[i]
	}

	// The day of each response: a CASE over the midnights (the zone's
	// offsets and daylight-saving days are Go's; MariaDB has no zone
	// tables here).
	var c strings.Builder
	var dayArgs []any
	c.WriteString("CASE")
	for i := 1; i < days; i++ {
		c.WriteString(" WHEN first_responded_at < ? THEN ?")
		dayArgs = append(dayArgs, bounds[i].UTC(), i-1)
	}
	fmt.Fprintf(&c, " ELSE %d END", days-1)
	dayExpr := c.String()
	if days == 1 {
		dayExpr = "0"
	}
	rangeArgs := []any{tenantID, bounds[0].UTC(), bounds[days].UTC()}
	const secs = `GREATEST(0, TIMESTAMPDIFF(SECOND, assigned_at, first_responded_at))`
	const inRange = `FROM leads FORCE INDEX (ix_leads_sla) WHERE tenant_id = ? AND first_responded_at >= ? AND first_responded_at < ? AND assigned_at IS NOT NULL`

	type group struct {
		Key    sql.NullString  `db:"k"`
		N      int64           `db:"n"`
		Median sql.NullFloat64 `db:"m"`
	}
	var byDay []group
	err := s.DB.SelectContext(ctx, &byDay, `SELECT DISTINCT k, COUNT(*) OVER (PARTITION BY k) AS n, MEDIAN(secs) OVER (PARTITION BY k) AS m
FROM (SELECT `+dayExpr+` AS k, `+secs+` AS secs `+inRange+`) r`, append(dayArgs, rangeArgs...)...)
	if err != nil {
		return ResponseStats{}, err
	}
	for _, g := range byDay {
		var i int
		if _, err := fmt.Sscan(g.Key.String, &i); err != nil || i < 0 || i >= days {
			continue
		}
		out.Days[i].Responded = g.N
		out.Days[i].Median = seconds(g.Median.Float64)
	}

	var all []group
	if err := s.DB.SelectContext(ctx, &all, `SELECT DISTINCT '' AS k, COUNT(*) OVER () AS n, MEDIAN(secs) OVER () AS m
FROM (SELECT `+secs+` AS secs `+inRange+`) r`, rangeArgs...); err != nil {
		return ResponseStats{}, err
	}
	if len(all) == 1 {
		out.Responded, out.Median = all[0].N, seconds(all[0].Median.Float64)
	}

	var byOwner []group
	if err := s.DB.SelectContext(ctx, &byOwner, `SELECT DISTINCT k, COUNT(*) OVER (PARTITION BY k) AS n, MEDIAN(secs) OVER (PARTITION BY k) AS m
FROM (SELECT COALESCE(owner_id, '') AS k, `+secs+` AS secs `+inRange+`) r`, rangeArgs...); err != nil {
		return ResponseStats{}, err
	}
	var overdue []group
	if err := s.DB.SelectContext(ctx, &overdue, `SELECT COALESCE(owner_id, '') AS k, COUNT(*) AS n, NULL AS m FROM leads FORCE INDEX (ix_leads_sla)
WHERE tenant_id = ? AND first_responded_at IS NULL AND first_response_due_at < ? GROUP BY owner_id`, tenantID, now.UTC()); err != nil {
		return ResponseStats{}, err
	}
	idx := map[string]int{}
	for _, g := range byOwner {
		idx[g.Key.String] = len(out.Owners)
		out.Owners = append(out.Owners, OwnerResponse{OwnerID: g.Key.String, Responded: g.N, Median: seconds(g.Median.Float64)})
	}
	for _, g := range overdue {
		out.Overdue += g.N
		i, ok := idx[g.Key.String]
		if !ok {
			i = len(out.Owners)
			idx[g.Key.String] = i
			out.Owners = append(out.Owners, OwnerResponse{OwnerID: g.Key.String})
		}
		out.Owners[i].Overdue += g.N
	}
	return out, nil
}

// seconds turns a median in seconds (possibly x.5) into a duration.
func seconds(f float64) time.Duration {
	return time.Duration(f * float64(time.Second))
}
