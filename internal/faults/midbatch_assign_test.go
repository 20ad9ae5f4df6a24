//go:build faults

package faults

import (
	"context"
	"fmt"
	"sort"
	"syscall"
	"testing"
	"time"
)

// The worker SIGKILLed in the middle of batch transactions that have
// taken their round-robin positions (docs/ARCHITECTURE.md, "Assignment and first response"): the
// tenant has one round-robin rule among 3 users; a backlog of new leads
// flows until a batch inserts a "gated" new lead with its owner (its
// positions reserved, the counter advanced and committed apart, the
// reservation used in the batch's transaction, its leads being written)
// and waits on a gate row the test holds, inside the INSERT. The kill
// rolls the batches back and leaves their reservations. After the
// restart, and a wave of new leads once those reservations are older
// than a batch can be (30 s), every lead is assigned exactly once: each
// has an owner, an assignment time and exactly one "assigned" timeline
// entry; the rule's counter equals the leads assigned and no reservation
// is left (the positions the killed batches reserved were handed out
// later, none twice, none lost); the counts per member differ by at most
// 1; every delivery processed exactly once (as TestWorkerKilledMidBatch).
func TestWorkerKilledMidBatchAssigns(t *testing.T) {
	s, h := startWithTenant(t, "leadpipe_midbatch_assign", "midassign")
	ctx := context.Background()
	var members []string
	for _, n := range []string{"ada", "bob", "cy"} {
		var u struct {
			ID string `json:"id"`
		}
		s.mustJSON("POST", "/api/v1/users", h.token, map[string]string{"email": n + "@midassign.test", "name": n, "role": "staff",
			"password": "faults-password-123"}, 201, &u)
		members = append(members, u.ID)
	}
	s.mustJSON("PUT", "/api/v1/assignment", h.token, map[string]any{"rules": []any{
		map[string]any{"name": "Everyone", "strategy": "round_robin", "members": members}}}, 200, &map[string]any{})

	// The gate: inserting a gated new lead with an owner (its batch has
	// reserved its positions) first signals, then waits on the gate row.
	s.gate("midassign", "INSERT ON leads", "NEW.source_ref LIKE 'gated-%' AND NEW.owner_id IS NOT NULL")
	send, sent := s.sender(h)
	for i := 0; i < 10; i++ {
		send(fmt.Sprintf("first-%d", i), fmt.Sprintf("ref-%d", i), 1)
	}
	s.waitProcessed(h.tenantID)

	// The backlog, with the worker stopped: 200 new leads, then 100 gated
	// new leads, then 100 more.
	s.worker.signal(syscall.SIGTERM)
	backlog := func(prefix, refPrefix string, n int) {
		fanOut(n, func(i int) { send(fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("%s-%d", refPrefix, i), 1) })
	}
	backlog("msg", "new", 200)
	backlog("gmsg", "gated", 100)
	backlog("late", "late", 100)

	gate, arrived, _ := s.holdGate("midassign")
	if !arrived {
		t.Fatal("no batch transaction reached the gate within 60 s")
	}
	time.Sleep(time.Second) // the batches behind it reach the position row
	blocked, modified := s.lockWaits()
	var pos int
	_ = s.check.GetContext(ctx, &pos, `SELECT next_pos FROM assignment_counters WHERE tenant_id = ?`, h.tenantID)
	t.Logf("%d batch transactions wait on locks with %d rows written; committed counter %d; killing the worker", blocked, modified, pos)
	s.worker.signal(syscall.SIGKILL)
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	var gated int
	_ = s.check.GetContext(ctx, &gated, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref LIKE 'gated-%'`, h.tenantID)
	if gated != 0 {
		t.Fatalf("%d gated leads committed after the kill: the gate did not hold", gated)
	}
	var left int
	_ = s.check.GetContext(ctx, &left, `SELECT COALESCE(SUM(n), 0) FROM assignment_reservations WHERE tenant_id = ?`, h.tenantID)
	t.Logf("after the kill: %d reserved positions left by the killed batches", left)
	s.worker.start(t)
	s.waitProcessed(h.tenantID)
	// The killed batches' reservations are handed out once they are older
	// than a batch can be (30 s): a wave of new leads after that takes them.
	time.Sleep(31 * time.Second)
	backlog("after", "after", 150)
	s.waitProcessed(h.tenantID)
	s.exactlyOnce(h, sent)

	var ls []struct {
		ID       string     `db:"id"`
		Owner    *string    `db:"owner_id"`
		Assigned *time.Time `db:"assigned_at"`
		Due      *time.Time `db:"first_response_due_at"`
		Entries  int        `db:"entries"`
	}
	if err := s.check.SelectContext(ctx, &ls, `SELECT l.id, l.owner_id, l.assigned_at, l.first_response_due_at,
			(l.assigned_rule_id IS NOT NULL AND l.assigned_owner_id = l.owner_id) +
			(SELECT COUNT(*) FROM lead_events e WHERE e.tenant_id = l.tenant_id AND e.lead_id = l.id AND e.kind = 'assigned') AS entries
		FROM leads l WHERE l.tenant_id = ?`, h.tenantID); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 560 {
		t.Fatalf("%d leads, want 560", len(ls))
	}
	per := map[string]int{}
	for _, l := range ls {
		if l.Owner == nil || l.Assigned == nil || l.Due == nil || l.Entries != 1 {
			t.Fatalf("lead %s: owner %v, assigned %v, due %v, %d assignment entries (want one)", l.ID, l.Owner, l.Assigned, l.Due, l.Entries)
		}
		per[*l.Owner]++
	}
	if err := s.check.GetContext(ctx, &pos, `SELECT next_pos FROM assignment_counters WHERE tenant_id = ?`, h.tenantID); err != nil || pos != len(ls) {
		t.Fatalf("counter %d (%v), want %d: positions of killed batches survived", pos, err, len(ls))
	}
	if err := s.check.GetContext(ctx, &left, `SELECT COUNT(*) FROM assignment_reservations WHERE tenant_id = ?`, h.tenantID); err != nil || left != 0 {
		t.Fatalf("%d reservations left (%v)", left, err)
	}
	c := []int{per[members[0]], per[members[1]], per[members[2]]}
	sort.Ints(c)
	if c[2]-c[0] > 1 || c[0]+c[1]+c[2] != len(ls) {
		t.Fatalf("unfair after the restart: %v", per)
	}
	t.Logf("per member %v, counter %d", c, pos)
}
