package leads_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
)

// ResponseStats' medians per day and per owner, and the overdue counts,
// agree with a brute-force computation in Go over every row, on random
// data in a zone whose 40 days include a daylight-saving change (New York,
// 2026-11-01), with a second tenant's leads that must not count.
func TestResponseStatsAgreeWithBruteForce(t *testing.T) {
	d := seeded(t, "leads_frstats", 2500, 2500, 10)
	ctx := context.Background()
	const tenant, other = seedTenant, seedOther
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 12, 4, 15, 4, 5, 0, time.UTC)
	owners := []string{"01HOWNER000000000000000000", "01HOWNER000000000000000001", "01HOWNER000000000000000002", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tn := range []string{tenant, other} {
		var ids []string
		if err := d.Select(&ids, `SELECT id FROM leads WHERE tenant_id = ?`, tn); err != nil {
			t.Fatal(err)
		}
		tx := d.MustBegin()
		for _, id := range ids {
			if rng.IntN(10) == 0 {
				continue // never assigned: no clock
			}
			assigned := now.Add(-time.Duration(rng.Int64N(int64(45 * 24 * time.Hour)))).Truncate(time.Second)
			due := assigned.Add(time.Hour)
			var responded any
			if rng.IntN(10) < 7 {
				wait := time.Duration(rng.ExpFloat64() * float64(40*time.Minute))
				if rng.IntN(50) == 0 {
					wait *= 30 // a bad day's slow answer
				}
				if r := assigned.Add(wait).Truncate(time.Second); r.Before(now) {
					responded = r
				}
			}
			var owner any
			if o := owners[rng.IntN(len(owners))]; o != "" {
				owner = o
			}
			if _, err := tx.Exec(`UPDATE leads SET assigned_at = ?, first_response_due_at = ?, first_responded_at = ?, owner_id = ? WHERE tenant_id = ? AND id = ?`,
				assigned, due, responded, owner, tn, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}

	type row struct {
		Owner     *string    `db:"owner_id"`
		Assigned  *time.Time `db:"assigned_at"`
		Due       *time.Time `db:"first_response_due_at"`
		Responded *time.Time `db:"first_responded_at"`
	}
	var rows []row
	if err := d.Select(&rows, `SELECT owner_id, assigned_at, first_response_due_at, first_responded_at FROM leads WHERE tenant_id = ?`, tenant); err != nil {
		t.Fatal(err)
	}
	median := func(xs []time.Duration) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 1 {
			return xs[n/2]
		} else {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
	}

	svc := leads.NewService(d, webhooks.NewReads(d), nil)
	for _, days := range []int{1, 14, 30, 40} {
		got, err := svc.ResponseStats(ctx, tenant, days, loc, now)
		if err != nil {
			t.Fatal(err)
		}
		n := now.In(loc)
		today := time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, loc)
		from := today.AddDate(0, 0, 1-days)
		perDay := map[int][]time.Duration{}
		perOwner := map[string][]time.Duration{}
		overdue := map[string]int64{}
		var all []time.Duration
		var overdueAll int64
		for _, r := range rows {
			o := ""
			if r.Owner != nil {
				o = *r.Owner
			}
			if r.Responded == nil && r.Due != nil && r.Due.Before(now) {
				overdue[o]++
				overdueAll++
			}
			if r.Assigned == nil || r.Responded == nil {
				continue
			}
			at := r.Responded.In(loc)
			if at.Before(from) || !at.Before(today.AddDate(0, 0, 1)) {
				continue
			}
			dd := max(r.Responded.Sub(*r.Assigned).Truncate(time.Second), 0)
			day := -1
			for i := range days {
				if !at.Before(from.AddDate(0, 0, i)) && at.Before(from.AddDate(0, 0, i+1)) {
					day = i
				}
			}
			perDay[day] = append(perDay[day], dd)
			perOwner[o] = append(perOwner[o], dd)
			all = append(all, dd)
		}
		if len(got.Days) != days {
			t.Fatalf("days=%d: %d days back", days, len(got.Days))
		}
		near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Millisecond }
		for i, g := range got.Days {
			want := perDay[i]
			if !g.Day.Equal(from.AddDate(0, 0, i)) || g.Responded != int64(len(want)) || !near(g.Median, median(want)) {
				t.Errorf("days=%d day %d: got %v n=%d median=%v, want %v n=%d median=%v", days, i, g.Day, g.Responded, g.Median,
					from.AddDate(0, 0, i), len(want), median(want))
			}
		}
		if got.Responded != int64(len(all)) || !near(got.Median, median(all)) || got.Overdue != overdueAll {
			t.Errorf("days=%d overall: got n=%d median=%v overdue=%d, want n=%d median=%v overdue=%d", days, got.Responded, got.Median, got.Overdue,
				len(all), median(all), overdueAll)
		}
		seen := map[string]bool{}
		for _, g := range got.Owners {
			seen[g.OwnerID] = true
			want := perOwner[g.OwnerID]
			if g.Responded != int64(len(want)) || !near(g.Median, median(want)) || g.Overdue != overdue[g.OwnerID] {
				t.Errorf("days=%d owner %q: got n=%d median=%v overdue=%d, want n=%d median=%v overdue=%d", days, g.OwnerID,
					g.Responded, g.Median, g.Overdue, len(want), median(want), overdue[g.OwnerID])
			}
		}
		for o := range perOwner {
			if !seen[o] {
				t.Errorf("days=%d: owner %q missing", days, o)
			}
		}
		if days == 40 && len(all) < 500 {
			t.Fatalf("too little data to mean anything: %d responses", len(all))
		}
	}

	od, err := svc.OverdueCount(ctx, tenant, now)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	var oldest time.Time
	for _, r := range rows {
		if r.Responded == nil && r.Due != nil && r.Due.Before(now) {
			want++
			if oldest.IsZero() || r.Due.Before(oldest) {
				oldest = *r.Due
			}
		}
	}
	if od.Count != want || od.OldestDue == nil || !od.OldestDue.Equal(oldest) {
		t.Errorf("OverdueCount = %+v, want %d oldest %v", od, want, oldest)
	}
}

// BenchmarkResponseStats: the monitor page's first-response figures for a
// tenant of 100,000 leads, about 60,000 of them answered in the 30 days,
// beside a neighbour tenant of the same size, on ix_leads_sla as migration
// 0706 widened it (covering: assigned_at, owner_id) and, in the same run,
// on its earlier shape (0684: the rows fetched one by one); and the
// evaluator's per-minute overdue count.
func BenchmarkResponseStats(b *testing.B) {
	d, _ := dbtest.New(b, "leads_frbench")
	ctx := context.Background()
	const tenant, other = seedTenant, seedOther
	now := time.Now().UTC().Truncate(time.Second)
	for i, tn := range []string{tenant, other} {
		if _, err := leads.Seed(ctx, d, tn, leads.SeedOptions{N: 100_000, RandSeed: uint64(20 + i)}); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Exec(`UPDATE leads SET owner_id = CONCAT('01HOWNER0000000000000000', LPAD(CRC32(id) % 20, 2, '0')),
			assigned_at = ? - INTERVAL (CRC32(id) % 3456000) SECOND,
			first_response_due_at = ? - INTERVAL (CRC32(id) % 3456000) SECOND + INTERVAL 1 HOUR,
			first_responded_at = IF(CRC32(CONCAT(id, 'r')) % 10 < 7 AND CRC32(id) % 3456000 > 7200, ? - INTERVAL (CRC32(id) % 3456000) SECOND + INTERVAL (CRC32(CONCAT(id, 'w')) % 7200) SECOND, NULL)
			WHERE tenant_id = ?`, now, now, now, tn); err != nil {
			b.Fatal(err)
		}
	}
	svc := leads.NewService(d, webhooks.NewReads(d), nil)
	stats := func(b *testing.B) {
		for b.Loop() {
			st, err := svc.ResponseStats(ctx, tenant, 30, time.UTC, now)
			if err != nil || st.Responded < 50_000 {
				b.Fatal(err, st.Responded)
			}
		}
	}
	b.Run("ResponseStats30d/covering", stats)
	b.Run("OverdueCount/covering", func(b *testing.B) {
		for b.Loop() {
			if od, err := svc.OverdueCount(ctx, tenant, now.Add(-30*time.Minute)); err != nil || od.Count == 0 {
				b.Fatal(err, od)
			}
		}
	})
	if _, err := d.Exec(`ALTER TABLE leads DROP KEY ix_leads_sla, ADD KEY ix_leads_sla (tenant_id, first_responded_at, first_response_due_at)`); err != nil {
		b.Fatal(err)
	}
	b.Run("ResponseStats30d/narrow-0684", stats)
}
