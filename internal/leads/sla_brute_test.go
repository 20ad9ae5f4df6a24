package leads_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
)

// sla=overdue and sla=due_soon, alone and with the status and owner
// filters, paged in random page sizes, agree with a brute-force
// computation in Go over the same random rows: two tenants, random
// statuses, owners (or none), assignment times, due times (some exactly
// at now and at the end of the due-soon window) and first responses.
func TestSLAFilterBruteForceWithStatusesAndOwners(t *testing.T) {
	d, _ := dbtest.New(t, "leads_sla_brute")
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	tenants := []string{tenantA, tenantB}
	owners := []string{"01HUSER00000000000000000A1", "01HUSER00000000000000000B2", "01HUSER00000000000000000C3"}
	rng := rand.New(rand.NewPCG(27, uint64(time.Now().UnixNano())))
	type row struct {
		tenant, id, status string
		owner              *string
		due, answered      *time.Time
	}
	var rows []row
	for i := 0; i < 1500; i++ {
		r := row{tenant: tenants[rng.IntN(2)], id: fmt.Sprintf("01J%023d", i), status: leads.Statuses[rng.IntN(len(leads.Statuses))]}
		if k := rng.IntN(4); k < 3 {
			r.owner = &owners[k]
		}
		var assigned *time.Time
		if rng.IntN(5) > 0 {
			a := now.Add(-time.Duration(rng.IntN(180)) * time.Minute).Add(-time.Duration(rng.IntN(60)) * time.Second)
			assigned = &a
			var due time.Time
			switch rng.IntN(8) {
			case 0:
				due = now // the boundary: overdue is strictly before now
			case 1:
				due = now.Add(leads.DueSoonWindow) // due_soon ends before it
			case 2:
				due = now.Add(-time.Microsecond)
			default:
				due = a.Add(time.Duration(rng.IntN(240)) * time.Minute)
			}
			r.due = &due
			if rng.IntN(3) == 0 {
				ans := a.Add(time.Duration(rng.IntN(300)) * time.Minute)
				r.answered = &ans
			}
		} else if rng.IntN(4) == 0 {
			ans := now.Add(-time.Hour) // answered without an assignment (a person's action on an unassigned lead)
			r.answered = &ans
		}
		if _, err := d.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, status, owner_id, last_seen_at, created_at, updated_at,
				assigned_at, first_response_due_at, first_responded_at) VALUES (?, ?, '', ?, '{}', ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.tenant, r.id, r.id, r.status, r.owner, now, now, now, assigned, r.due, r.answered); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	svc := &leads.Service{DB: d, Now: func() time.Time { return now }}
	brute := func(tenant string, f leads.Filter) []string {
		var out []string
		for _, r := range rows {
			if r.tenant != tenant || r.answered != nil || r.due == nil {
				continue
			}
			if f.Status != "" && r.status != f.Status {
				continue
			}
			switch f.OwnerID {
			case "":
			case leads.OwnerNone:
				if r.owner != nil {
					continue
				}
			default:
				if r.owner == nil || *r.owner != f.OwnerID {
					continue
				}
			}
			switch f.SLA {
			case leads.SLAOverdue:
				if !r.due.Before(now) {
					continue
				}
			case leads.SLADueSoon:
				if r.due.Before(now) || !r.due.Before(now.Add(leads.DueSoonWindow)) {
					continue
				}
			}
			out = append(out, r.id)
		}
		slices.Sort(out)
		slices.Reverse(out) // newest (largest id) first
		return out
	}
	checked, nonEmpty := 0, 0
	for _, tenant := range tenants {
		for _, sla := range []string{leads.SLAOverdue, leads.SLADueSoon} {
			for _, status := range append([]string{""}, leads.Statuses...) {
				for _, owner := range append([]string{"", leads.OwnerNone}, owners...) {
					f := leads.Filter{SLA: sla, Status: status, OwnerID: owner, Limit: 1 + rng.IntN(60)}
					want := brute(tenant, f)
					got := listAll(ctx, t, svc, tenant, f)
					if strings.Join(got, ",") != strings.Join(want, ",") {
						t.Fatalf("tenant %s sla=%s status=%q owner=%q: got %d %v\nwant %d %v", tenant, sla, status, owner, len(got), got, len(want), want)
					}
					checked++
					if len(want) > 0 {
						nonEmpty++
					}
				}
			}
		}
	}
	if nonEmpty < checked/3 {
		t.Fatalf("only %d of %d combinations had any lead: the data does not exercise the filter", nonEmpty, checked)
	}
}
