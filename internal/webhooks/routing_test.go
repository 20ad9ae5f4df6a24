package webhooks_test

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

// ownerCounts counts a tenant's leads per owner ("" unassigned).
func ownerCounts(t *testing.T, e *apptest.Env, tenantID string) map[string]int {
	t.Helper()
	per := map[string]int{}
	for _, l := range ownedLeads(t, e, tenantID) {
		o := ""
		if l.OwnerID != nil {
			o = *l.OwnerID
		}
		per[o]++
	}
	return per
}

// Round robin with a daily cap of 2 and one member away: 30 leads posted
// at once by webhook (the worker's batches, reservations apart) → the
// capped member 2, the away member 0, the other two 14 each (±1 allowed
// by the contract; the day's positions make it exact). A second tenant
// creating leads at once through the API (the creating transaction's own
// reservation) with its own cap is counted apart. The cap starts again
// at midnight in the rule's zone (Europe/Berlin: still the same UTC day).
func TestRoutingCapsAndAwayUnderConcurrentWebhooks(t *testing.T) {
	clk := &apptest.Clock{}
	// 23:30 in Berlin.
	day1 := time.Date(2026, 12, 5, 22, 30, 0, 0, time.UTC)
	clk.Set(day1)
	e := apptest.New(t, "hooks_routing_caps", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true, Now: clk.Now})
	ctx := context.Background()
	ta, tb := e.Tenant("capa"), e.Tenant("capb")
	ada, bob, cy, dee := newUser(t, e, ta.ID, "Ada"), newUser(t, e, ta.ID, "Bob"), newUser(t, e, ta.ID, "Cy"), newUser(t, e, ta.ID, "Dee")
	if r := putRules(t, e, ta.Token, map[string]any{"time_zone": "Europe/Berlin", "rules": []any{
		map[string]any{"name": "Everyone", "strategy": "round_robin", "members": []string{ada.ID, bob.ID, cy.ID, dee.ID},
			"caps": map[string]int{ada.ID: 2}},
	}}); r.Status != 200 {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
	// Bob is away for two days (an admin marks it through the API).
	until := day1.Add(48 * time.Hour)
	if r := e.Do("PUT", "/api/v1/users/"+bob.ID+"/away", ta.Token, map[string]any{"until": until}); r.Status != 200 {
		t.Fatalf("away: %d %s", r.Status, r.Body)
	}
	// Another tenant's admin cannot mark Bob away: 404.
	if r := e.Do("PUT", "/api/v1/users/"+bob.ID+"/away", tb.Token, map[string]any{"until": until}); r.Status != 404 {
		t.Fatalf("other tenant's away: %d %s", r.Status, r.Body)
	}
	// Tenant B: three members, the first capped at 1.
	xa, xb, xc := newUser(t, e, tb.ID, "Xa"), newUser(t, e, tb.ID, "Xb"), newUser(t, e, tb.ID, "Xc")
	if r := putRules(t, e, tb.Token, map[string]any{"rules": []any{
		map[string]any{"name": "B team", "strategy": "round_robin", "members": []string{xa.ID, xb.ID, xc.ID}, "caps": map[string]int{xa.ID: 1}},
	}}); r.Status != 200 {
		t.Fatalf("put rules B: %d %s", r.Status, r.Body)
	}
	s := newSource(t, e, ta.ID, "std", kinds.Standard)

	post := func(prefix string, n int) {
		t.Helper()
		var g apptest.Group
		for i := 0; i < n; i++ {
			g.Go(func() error {
				h, body := signed(t, s, fmt.Sprintf("%s-dlv-%d", prefix, i), fmt.Sprintf("%s-ref-%d", prefix, i),
					kinds.Lead{Email: fmt.Sprintf("%s%d@example.com", prefix, i), Name: "P"}, clk.Now())
				if r := send(t, s.URL, h, body); r.Status != 200 || r.Ack.Status != "accepted" {
					return fmt.Errorf("hook %d: %d %s", i, r.Status, r.Body)
				}
				return nil
			})
			g.Go(func() error {
				if r := e.Do("POST", "/api/v1/leads", tb.Token, map[string]any{"name": "B", "email": fmt.Sprintf("%sb%d@example.com", prefix, i)},
					"Idempotency-Key", fmt.Sprintf("%s-%d", prefix, i)); r.Status != 201 {
					return fmt.Errorf("api %d: %d %s", i, r.Status, r.Body)
				}
				return nil
			})
		}
		g.Wait(t)
	}
	post("d1", 30)
	apptest.Eventually(t, 30*time.Second, "30 leads", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ta.ID) == 30
	})
	a := ownerCounts(t, e, ta.ID)
	if a[ada.ID] != 2 || a[bob.ID] != 0 || a[cy.ID]+a[dee.ID] != 28 || abs(a[cy.ID]-a[dee.ID]) > 1 || a[""] != 0 {
		t.Fatalf("tenant A day 1: Ada %d (cap 2), Bob %d (away), Cy %d, Dee %d, unassigned %d", a[ada.ID], a[bob.ID], a[cy.ID], a[dee.ID], a[""])
	}
	b := ownerCounts(t, e, tb.ID)
	c := []int{b[xb.ID], b[xc.ID]}
	sort.Ints(c)
	if b[xa.ID] != 1 || c[0]+c[1] != 29 || c[1]-c[0] > 1 {
		t.Fatalf("tenant B day 1: %v (Xa %s capped at 1)", b, xa.ID)
	}
	t.Logf("day 1: A Ada %d Bob %d Cy %d Dee %d; B Xa %d Xb %d Xc %d", a[ada.ID], a[bob.ID], a[cy.ID], a[dee.ID], b[xa.ID], b[xb.ID], b[xc.ID])

	// 00:30 in Berlin (22:30 → 23:30 UTC, the same UTC day): caps start
	// again. 6 leads: Ada, Cy, Dee twice each.
	clk.Set(day1.Add(time.Hour))
	post("d2", 6)
	apptest.Eventually(t, 30*time.Second, "36 leads", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ta.ID) == 36
	})
	a2 := ownerCounts(t, e, ta.ID)
	if a2[ada.ID]-a[ada.ID] != 2 || a2[bob.ID] != 0 || a2[cy.ID]-a[cy.ID] != 2 || a2[dee.ID]-a[dee.ID] != 2 {
		t.Fatalf("tenant A day 2: %v, day 1 %v", a2, a)
	}
	b2 := ownerCounts(t, e, tb.ID)
	// Tenant B's zone is UTC: 23:30 is still day 1 there, Xa stays at 1.
	if b2[xa.ID] != 1 || b2[""] != 0 || b2[xb.ID]+b2[xc.ID] != 35 {
		t.Fatalf("tenant B at 23:30 UTC: %v", b2)
	}
	// No lead of either tenant went to the other's people.
	if k := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND owner_id IN (?, ?, ?)`, ta.ID, xa.ID, xb.ID, xc.ID); k != 0 {
		t.Fatalf("%d of A's leads owned by B's users", k)
	}

	// Bob is back: he is in the rotation again.
	if r := e.Do("PUT", "/api/v1/users/"+bob.ID+"/away", ta.Token, map[string]any{"until": nil}); r.Status != 200 {
		t.Fatalf("back: %d %s", r.Status, r.Body)
	}
	u, err := e.App.Tenants.User(ctx, ta.ID, bob.ID)
	if err != nil || u.AwayUntil != nil {
		t.Fatalf("bob after back: %+v %v", u, err)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Escalation after 15 minutes overdue to the next member: every overdue
// unanswered lead is reassigned exactly once though two sweeps run at
// once, again and again: one timeline entry, one lead.updated, one
// "assigned to you" each; an answered lead and a lead not yet 15 minutes
// overdue stay; another tenant's leads are untouched.
func TestEscalationOnceWithConcurrentSweeps(t *testing.T) {
	clk := &apptest.Clock{}
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	clk.Set(t0)
	e := apptest.New(t, "hooks_routing_escalate", apptest.Options{RedisDB: apptest.RedisWebhooks, Now: clk.Now})
	ctx := context.Background()
	ta, tb := e.Tenant("esca"), e.Tenant("escb")
	ada, bob, cy := newUser(t, e, ta.ID, "Ada"), newUser(t, e, ta.ID, "Bob"), newUser(t, e, ta.ID, "Cy")
	if r := putRules(t, e, ta.Token, map[string]any{"first_response_minutes": 30, "rules": []any{
		map[string]any{"name": "Everyone", "strategy": "round_robin", "members": []string{ada.ID, bob.ID, cy.ID},
			"escalate": map[string]any{"after_minutes": 15, "to": "next_member"}},
	}}); r.Status != 200 {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
	xa, xb := newUser(t, e, tb.ID, "Xa"), newUser(t, e, tb.ID, "Xb")
	if r := putRules(t, e, tb.Token, map[string]any{"first_response_minutes": 30, "rules": []any{
		map[string]any{"name": "B", "strategy": "round_robin", "members": []string{xa.ID},
			"escalate": map[string]any{"after_minutes": 60, "to": xb.ID}},
	}}); r.Status != 200 {
		t.Fatalf("put rules B: %d %s", r.Status, r.Body)
	}
	// lead.updated is written only for a subscriber.
	if r := e.Do("POST", "/api/v1/endpoints", ta.Token, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"lead.updated"}}); r.Status != 201 {
		t.Fatalf("endpoint: %d %s", r.Status, r.Body)
	}
	var ids []string
	for i := 0; i < 12; i++ {
		var l struct {
			ID string `json:"id"`
		}
		r := e.Do("POST", "/api/v1/leads", ta.Token, map[string]any{"name": fmt.Sprintf("L%d", i), "email": fmt.Sprintf("l%d@example.com", i)},
			"Idempotency-Key", fmt.Sprintf("l-%d", i))
		if r.Status != 201 {
			t.Fatalf("lead: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &l)
		ids = append(ids, l.ID)
	}
	if r := e.Do("POST", "/api/v1/leads", tb.Token, map[string]any{"name": "B", "email": "b@example.com"}, "Idempotency-Key", "b-1"); r.Status != 201 {
		t.Fatalf("lead B: %d %s", r.Status, r.Body)
	}
	// One answered (a note: the first response) before it fell overdue.
	if r := e.Do("POST", "/api/v1/leads/"+ids[0]+"/notes", ta.Token, map[string]any{"body": "called"}, "Idempotency-Key", "n-1"); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
	// One created later, so not yet 15 minutes overdue at the sweep.
	clk.Set(t0.Add(10 * time.Minute))
	var late struct {
		ID string `json:"id"`
	}
	r := e.Do("POST", "/api/v1/leads", ta.Token, map[string]any{"name": "Late", "email": "late@example.com"}, "Idempotency-Key", "late")
	r.JSON(t, &late)
	before := map[string]string{}
	for _, l := range ownedLeads(t, e, ta.ID) {
		before[l.ID] = *l.OwnerID
	}

	updatedBefore := count(t, e, `SELECT COUNT(*) FROM events WHERE tenant_id = ? AND type = 'lead.updated'`, ta.ID)
	ls := e.App.Web.Leads
	// 44 minutes after t0: overdue by 14, nothing to do.
	clk.Set(t0.Add(44 * time.Minute))
	if n, err := ls.Escalate(ctx, ta.ID); err != nil || n != 0 {
		t.Fatalf("early sweep: %d %v", n, err)
	}
	// 46 minutes: two workers' sweeps at once, three times each.
	clk.Set(t0.Add(46 * time.Minute))
	var g apptest.Group
	var total atomic.Int64
	for w := 0; w < 2; w++ {
		g.Go(func() error {
			for k := 0; k < 3; k++ {
				n, err := ls.Escalate(ctx, ta.ID)
				total.Add(int64(n))
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Wait(t)
	if total.Load() != 11 {
		t.Fatalf("sweeps escalated %d leads, want 11", total.Load())
	}
	next := map[string]string{ada.ID: bob.ID, bob.ID: cy.ID, cy.ID: ada.ID}
	after := ownedLeads(t, e, ta.ID)
	for _, l := range after {
		want := next[before[l.ID]]
		if l.ID == ids[0] || l.ID == late.ID {
			want = before[l.ID]
		}
		if *l.OwnerID != want {
			t.Fatalf("lead %s: owner %s, want %s (was %s)", l.ID, *l.OwnerID, want, before[l.ID])
		}
	}
	if k := count(t, e, `SELECT COUNT(*) FROM lead_events WHERE tenant_id = ? AND kind = 'escalated'`, ta.ID); k != 11 {
		t.Fatalf("%d escalated timeline entries, want 11", k)
	}
	if k := count(t, e, `SELECT COUNT(DISTINCT lead_id) FROM lead_events WHERE tenant_id = ? AND kind = 'escalated'`, ta.ID); k != 11 {
		t.Fatalf("%d leads with an escalated entry, want 11", k)
	}
	if k := count(t, e, `SELECT COUNT(*) FROM events WHERE tenant_id = ? AND type = 'lead.updated'`, ta.ID) - updatedBefore; k != 11 {
		t.Fatalf("%d lead.updated events, want 11", k)
	}
	if k := count(t, e, `SELECT COUNT(*) FROM notifications WHERE tenant_id = ? AND nkey LIKE 'assigned:%:escalated'`, ta.ID); k != 11 {
		t.Fatalf("%d escalation notifications, want 11", k)
	}
	// The timeline says it, by which rule.
	tl, err := ls.Timeline(ctx, ta.ID, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, en := range tl {
		if en.Kind == leads.EventEscalated {
			found = true
		}
	}
	if !found {
		t.Fatalf("no escalated entry in the timeline: %+v", tl)
	}
	// The late lead goes at its own time, once.
	clk.Set(t0.Add(56 * time.Minute))
	if n, err := ls.Escalate(ctx, ta.ID); err != nil || n != 1 {
		t.Fatalf("late sweep: %d %v", n, err)
	}
	if n, err := ls.Escalate(ctx, ta.ID); err != nil || n != 0 {
		t.Fatalf("sweep after: %d %v", n, err)
	}
	// Tenant B's rule waits 60 minutes: its lead is untouched so far, then
	// goes to the named user.
	if k := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND owner_id = ?`, tb.ID, xa.ID); k != 1 {
		t.Fatalf("tenant B's lead moved: %d still Xa's", k)
	}
	clk.Set(t0.Add(91 * time.Minute))
	if n, err := ls.Escalate(ctx, tb.ID); err != nil || n != 1 {
		t.Fatalf("tenant B sweep: %d %v", n, err)
	}
	if k := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND owner_id = ?`, tb.ID, xb.ID); k != 1 {
		t.Fatalf("tenant B's lead not with Xb")
	}
	var _ tenants.User
}
