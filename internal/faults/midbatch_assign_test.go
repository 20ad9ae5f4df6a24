//go:build faults

package faults

import (
	"context"
	"fmt"
	"sort"
	"sync"
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
	s := &suite{t: t, sc: scale{settle: 3 * time.Minute}, acks: map[string]map[string]bool{}, msgRef: map[string]string{},
		keyLeads: map[string]map[string]bool{}, human: map[string]string{}}
	s.start("leadpipe_midbatch_assign")
	h := s.newTenant("midassign")
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
	for _, q := range []string{`CREATE TABLE midassign_gate (id INT PRIMARY KEY)`, `INSERT INTO midassign_gate VALUES (1)`,
		`CREATE TRIGGER midassign_gate BEFORE INSERT ON leads FOR EACH ROW BEGIN
			DECLARE g INT;
			IF NEW.source_ref LIKE 'gated-%' AND NEW.owner_id IS NOT NULL THEN
				SET g = GET_LOCK('midassign-arrived', 0);
				SELECT id INTO g FROM midassign_gate WHERE id = 1 FOR UPDATE;
			END IF;
		END`} {
		if _, err := s.check.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sent := map[string]string{} // msg → natural key
	var mu sync.Mutex
	send := func(msg, ref string) {
		s.deliverTo(h, msg, ref)
		mu.Lock()
		sent[msg] = ref
		mu.Unlock()
	}
	for i := 0; i < 10; i++ {
		send(fmt.Sprintf("first-%d", i), fmt.Sprintf("ref-%d", i))
	}
	s.waitProcessed(h.tenantID)

	// The backlog, with the worker stopped: 200 new leads, then 100 gated
	// new leads, then 100 more.
	s.worker.signal(syscall.SIGTERM)
	backlog := func(prefix, refPrefix string, n int) {
		work := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					send(fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("%s-%d", refPrefix, i))
				}
			}()
		}
		for i := 0; i < n; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	backlog("msg", "new", 200)
	backlog("gmsg", "gated", 100)
	backlog("late", "late", 100)

	gate, err := s.check.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback()
	if _, err := gate.ExecContext(ctx, `SELECT id FROM midassign_gate WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	s.worker.start(t)
	arrived := 0
	deadline := time.Now().Add(60 * time.Second)
	for arrived == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_ = s.check.GetContext(ctx, &arrived, `SELECT IS_USED_LOCK('midassign-arrived') IS NOT NULL`)
	}
	if arrived == 0 {
		t.Fatal("no batch transaction reached the gate within 60 s")
	}
	time.Sleep(time.Second) // the batches behind it reach the position row
	var blocked struct {
		N        int `db:"n"`
		Modified int `db:"modified"`
	}
	_ = s.check.GetContext(ctx, &blocked, `SELECT COUNT(*) AS n, COALESCE(SUM(trx_rows_modified), 0) AS modified
		FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`)
	var pos int
	_ = s.check.GetContext(ctx, &pos, `SELECT next_pos FROM assignment_counters WHERE tenant_id = ?`, h.tenantID)
	t.Logf("%d batch transactions wait on locks with %d rows written; committed counter %d; killing the worker", blocked.N, blocked.Modified, pos)
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
