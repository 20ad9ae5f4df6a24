//go:build faults

package faults

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
)

// The worker process SIGKILLed in the middle of its batch transactions
// (the backlog's first 200 deliveries flow; a batch that reaches the 100
// "gated" ones behind them writes its leads and waits, in the update that
// marks its deliveries processed, on a gate row the test holds, and the
// batches after it wait on its lead rows; the kill comes once batch
// transactions wait on locks, rows written): on restart
// every delivery is processed exactly once. Each acknowledged delivery is
// processed with attempts = 1 (one committed processing: the killed ones
// rolled back), onto the lead of its natural key; every lead's times_seen
// is its deliveries plus their duplicates (nothing counted twice or lost);
// one lead per natural key.
//
// It runs in the short suite too (CI). A batch's arrival at the gate is
// signalled by a user-level lock the trigger takes (GET_LOCK, neither
// transactional nor a table): the test sees it at once. A table written
// by the trigger cannot serve: every statement that fires the trigger
// prelocks the tables it names, so a non-transactional (Aria) arrivals
// table stayed write-locked by the batch held at the gate, and the
// test's probe and the server's duplicate-count flush (an upsert on
// deliveries) waited behind it until their timeouts.
func TestWorkerKilledMidBatch(t *testing.T) {
	s, h := startWithTenant(t, "leadpipe_midbatch", "midbatch")
	ctx := context.Background()
	// The gate: marking a received gated delivery processed first locks its
	// row.
	s.gate("midbatch", "UPDATE ON deliveries", "OLD.state = 'received' AND NEW.state = 'processed' AND OLD.delivery_id LIKE 'gated-%'")
	send, sent := s.sender(h)
	// Some leads exist before the backlog (its records update them).
	for i := 0; i < 10; i++ {
		send(fmt.Sprintf("first-%d", i), fmt.Sprintf("ref-%d", i), 1)
	}
	s.waitProcessed(h.tenantID)

	// The backlog, with the worker stopped: 200 deliveries, then 100 gated
	// ones, of 40 natural keys, every fourth sent twice (a duplicate).
	s.worker.signal(syscall.SIGTERM)
	backlog := func(prefix string, n int) {
		fanOut(n, func(i int) {
			send(fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("ref-%d", i%40), 1+boolInt(i%4 == 0))
		})
	}
	backlog("msg", 200)
	backlog("gated", 100)

	// Close the gate, start the worker, wait for a batch transaction that
	// has written rows and waits at the gate, and kill the worker there.
	gate, arrived, qerr := s.holdGate("midbatch")
	if !arrived {
		var states []struct {
			State string `db:"state"`
			N     int    `db:"n"`
		}
		_ = s.check.SelectContext(ctx, &states, `SELECT state, COUNT(*) AS n FROM deliveries WHERE tenant_id = ? GROUP BY state`, h.tenantID)
		t.Fatalf("no batch transaction reached the gate within 60 s (last query error %v; deliveries by state %v)", qerr, states)
	}
	time.Sleep(time.Second) // the rest of the in-flight batches reach the gate or the locks behind it
	blocked, modified := s.lockWaits()
	t.Logf("%d batch transactions wait on locks with %d rows written; killing the worker", blocked, modified)
	s.worker.signal(syscall.SIGKILL)
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	var processed, gated int
	_ = s.check.GetContext(ctx, &processed, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, h.tenantID)
	_ = s.check.GetContext(ctx, &gated, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed' AND delivery_id LIKE 'gated-%'`, h.tenantID)
	if gated != 0 || processed >= 10+200+100 {
		t.Fatalf("%d deliveries processed after the kill (%d gated ones): the gate did not hold", processed, gated)
	}
	t.Logf("after the kill: %d of %d deliveries processed", processed, len(sent))
	s.worker.start(t)
	start := time.Now()
	s.waitProcessed(h.tenantID)
	t.Logf("all processed %.1fs after the restart (tasks the killed worker held wait for their Asynq lease)", time.Since(start).Seconds())
	s.exactlyOnce(h, sent)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startWithTenant starts a suite (settle time 3 minutes) on database
// dbName, with one tenant.
func startWithTenant(t *testing.T, dbName, slug string) (*suite, hooks) {
	s := newSuite(t, scale{settle: 3 * time.Minute})
	s.start(dbName)
	return s, s.newTenant(slug)
}

// sender returns send, which delivers msg (of natural key ref) to h times
// times, from any goroutine, and sent, msg → natural key of every message
// send delivered.
func (s *suite) sender(h hooks) (send func(msg, ref string, times int), sent map[string]string) {
	sent = map[string]string{}
	var mu sync.Mutex
	send = func(msg, ref string, times int) {
		for k := 0; k < times; k++ {
			s.deliverTo(h, msg, ref)
		}
		mu.Lock()
		sent[msg] = ref
		mu.Unlock()
	}
	return send, sent
}

// fanOut calls f(0) … f(n-1) in order from 8 goroutines at once and waits
// for them.
func fanOut(n int, f func(i int)) { apptest.FanOut(n, 8, f) }

// gate creates the gate table name_gate (its one row) and a trigger
// BEFORE event that, for the rows where cond holds, first takes the
// user-level lock name-arrived (without waiting: one holder is signal
// enough), then waits on the gate row.
func (s *suite) gate(name, event, cond string) {
	for _, q := range []string{`CREATE TABLE ` + name + `_gate (id INT PRIMARY KEY)`, `INSERT INTO ` + name + `_gate VALUES (1)`,
		`CREATE TRIGGER ` + name + `_gate BEFORE ` + event + ` FOR EACH ROW BEGIN
			DECLARE g INT;
			IF ` + cond + ` THEN
				SET g = GET_LOCK('` + name + `-arrived', 0);
				SELECT id INTO g FROM ` + name + `_gate WHERE id = 1 FOR UPDATE;
			END IF;
		END`} {
		if _, err := s.check.Exec(q); err != nil {
			s.t.Fatal(err)
		}
	}
}

// holdGate closes the gate made by gate(name, …), starts the worker and
// waits up to 60 s for a batch transaction at the gate. It returns the
// transaction holding the gate row (rolled back at the end of the test at
// the latest), whether a batch arrived, and the last probe's error.
func (s *suite) holdGate(name string) (*sqlx.Tx, bool, error) {
	t := s.t
	t.Helper()
	gate, err := s.check.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gate.Rollback() })
	if _, err := gate.Exec(`SELECT id FROM ` + name + `_gate WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	s.worker.start(t)
	arrived := 0
	deadline := time.Now().Add(60 * time.Second)
	var qerr error
	for arrived == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		qerr = s.check.Get(&arrived, `SELECT IS_USED_LOCK(?) IS NOT NULL`, name+"-arrived")
	}
	return gate, arrived != 0, qerr
}

// lockWaits counts the transactions waiting on locks and the rows they
// have written.
func (s *suite) lockWaits() (n, modified int) {
	var w struct {
		N        int `db:"n"`
		Modified int `db:"modified"`
	}
	_ = s.check.Get(&w, `SELECT COUNT(*) AS n, COALESCE(SUM(trx_rows_modified), 0) AS modified
		FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`)
	return w.N, w.Modified
}

// waitProcessed waits until none of the tenant's deliveries is left
// received.
func (s *suite) waitProcessed(tenantID string) {
	t := s.t
	t.Helper()
	if n, ok := s.untilNone(`SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state <> 'processed'`, tenantID); !ok {
		t.Fatalf("%d deliveries of tenant %s not processed after %s", n, tenantID, s.sc.settle)
	}
}

// exactlyOnce checks that every delivery sent to the tenant was stored
// once and processed exactly once, onto the one lead of its natural key.
func (s *suite) exactlyOnce(h hooks, sent map[string]string) {
	t := s.t
	t.Helper()
	var rows []struct {
		DeliveryID string  `db:"delivery_id"`
		State      string  `db:"state"`
		Attempts   int     `db:"attempts"`
		LeadID     *string `db:"lead_id"`
		Ref        *string `db:"source_ref"`
		Dups       int     `db:"dup_count"`
	}
	if err := s.check.Select(&rows, `SELECT d.delivery_id, d.state, d.attempts, d.lead_id, l.source_ref, d.dup_count
		FROM deliveries d LEFT JOIN leads l ON l.tenant_id = d.tenant_id AND l.id = d.lead_id
		WHERE d.tenant_id = ?`, h.tenantID); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(sent) {
		t.Errorf("tenant %s: %d deliveries stored, %d sent", h.tenantID, len(rows), len(sent))
	}
	sightings := map[string]int{} // lead id → deliveries + duplicates
	for _, r := range rows {
		ref, ok := sent[r.DeliveryID]
		switch {
		case !ok:
			t.Errorf("delivery %s stored, never sent", r.DeliveryID)
		case r.State != "processed" || r.Attempts != 1 || r.LeadID == nil || r.Ref == nil || *r.Ref != ref:
			t.Errorf("delivery %s: %s, attempts %d, lead ref %v (want processed once onto %s)", r.DeliveryID, r.State, r.Attempts, r.Ref, ref)
		default:
			sightings[*r.LeadID] += 1 + r.Dups
		}
	}
	refs := map[string]bool{}
	for _, ref := range sent {
		refs[ref] = true
	}
	// The duplicates reach times_seen within the sightings' flush interval.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var leads []struct {
			ID        string `db:"id"`
			TimesSeen int    `db:"times_seen"`
		}
		if err := s.check.Select(&leads, `SELECT id, times_seen FROM leads WHERE tenant_id = ?`, h.tenantID); err != nil {
			t.Fatal(err)
		}
		var wrong []string
		for _, l := range leads {
			if l.TimesSeen != sightings[l.ID] {
				wrong = append(wrong, fmt.Sprintf("lead %s times_seen %d, want %d", l.ID, l.TimesSeen, sightings[l.ID]))
			}
		}
		if len(leads) != len(refs) {
			wrong = append(wrong, fmt.Sprintf("%d leads for %d natural keys", len(leads), len(refs)))
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, w := range wrong {
				t.Errorf("tenant %s: %s", h.tenantID, w)
			}
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}
