package leads_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
)

// The inbox's views list by status ranges ("My open leads": one range per
// open status; "My follow-ups due": by due date): page after page they
// must return exactly what one plain query returns, in the same order, and
// the capped counts must match exact counts.
func TestViewListsAgreeWithBruteForce(t *testing.T) {
	d := seeded(t, "leads_views", 3000, 500, 5)
	ctx := context.Background()
	const tenant, other = seedTenant, seedOther
	const me = "01HUSER0000000000000000000"
	now := time.Now().UTC().Truncate(time.Second)
	// A quarter of the leads are mine; of those, most have a due date
	// spread over a week either side of now, many sharing one instant (ties
	// are broken by id across pages).
	for _, q := range []string{
		`UPDATE leads SET owner_id = ? WHERE tenant_id = ? AND MOD(CRC32(id), 4) = 0`,
		`UPDATE leads SET due_at = ? - INTERVAL MOD(CRC32(CONCAT(id, 'd')), 14 * 24) HOUR + INTERVAL 7 DAY
			WHERE tenant_id = ? AND owner_id IS NOT NULL AND MOD(CRC32(id), 3) > 0`,
		`UPDATE leads SET due_at = ? WHERE tenant_id = ? AND MOD(CRC32(id), 23) = 0`,
	} {
		var arg any = me
		if strings.Contains(q, "due_at") {
			arg = now
		}
		if _, err := d.Exec(q, arg, tenant); err != nil {
			t.Fatal(err)
		}
	}
	// The other tenant's leads are "mine" and due too: they must never show.
	if _, err := d.Exec(`UPDATE leads SET owner_id = ?, due_at = ? WHERE tenant_id = ?`, me, now, other); err != nil {
		t.Fatal(err)
	}

	open := []string{"new", "contacted", "qualified", "unqualified"}
	end := now.Add(24 * time.Hour)
	brute := func(f leads.Filter) []string {
		cond := "tenant_id = ? AND status IN ('" + strings.Join(f.AnyStatus, "','") + "')"
		args := []any{tenant}
		switch f.OwnerID {
		case leads.OwnerNone:
			cond += " AND owner_id IS NULL"
		case "":
		default:
			cond += " AND owner_id = ?"
			args = append(args, f.OwnerID)
		}
		order := "id DESC"
		if f.DueBefore != nil {
			cond += " AND due_at < ?"
			args = append(args, *f.DueBefore)
		}
		if f.ByDue {
			cond += " AND due_at IS NOT NULL"
			order = "due_at, id"
		}
		var ids []string
		if err := d.Select(&ids, `SELECT id FROM leads WHERE `+cond+` ORDER BY `+order, args...); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	svc := leads.NewService(d, webhooks.NewReads(d), nil)
	for _, f := range []leads.Filter{
		{OwnerID: me, AnyStatus: open},                                 // My open leads
		{OwnerID: me, AnyStatus: open, DueBefore: &end, ByDue: true},   // My follow-ups due
		{OwnerID: me, AnyStatus: []string{"won", "lost"}, ByDue: true}, // by due, no due limit
		{OwnerID: leads.OwnerNone, AnyStatus: []string{"new", "lost"}},
		{AnyStatus: open},
	} {
		want := brute(f)
		t.Run(fmt.Sprintf("owner=%v statuses=%v due=%v byDue=%v", f.OwnerID != "", f.AnyStatus, f.DueBefore != nil, f.ByDue), func(t *testing.T) {
			if len(want) < 40 {
				t.Fatalf("only %d leads: the test data does not span pages", len(want))
			}
			page := f
			page.Limit = 17
			got := listAll(ctx, t, svc, tenant, page)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("got %d leads, brute force %d", len(got), len(want))
			}

			counts, err := svc.CappedCountsFor(ctx, tenant, f, 100_000)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for i, c := range counts {
				if c.Status != f.AnyStatus[i] {
					t.Fatalf("counts %+v: want one per status of %v", counts, f.AnyStatus)
				}
				total += c.N
			}
			if exact := len(want); total != exact {
				t.Errorf("counts add up to %d, want %d", total, exact)
			}
		})
	}

	t.Run("a newest-first cursor is no due-order cursor", func(t *testing.T) {
		p, err := svc.List(ctx, tenant, leads.Filter{OwnerID: me, AnyStatus: open, Limit: 5})
		if err != nil || p.NextCursor == "" {
			t.Fatal(p, err)
		}
		_, err = svc.List(ctx, tenant, leads.Filter{OwnerID: me, AnyStatus: open, ByDue: true, Cursor: p.NextCursor})
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Fields["cursor"] == "" {
			t.Fatalf("want a cursor error, got %v", err)
		}
	})
}
