package leads_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
)

// The worker's batch path (UpsertFromSenderBatchDeferred, then Insert as
// the transaction's last statements): positions are handed out in record
// order; a record of a lead created earlier in the same batch updates it
// after its INSERT; a test lead and a disabled member get nothing; many
// concurrent batches share the rule fairly (counts differ by at most 1);
// the counter equals the positions handed out.
func TestRoundRobinInConcurrentBatches(t *testing.T) {
	d, one, now, users := assignDB(t, "leads_assign_batch", 4)
	ctx := context.Background()
	const ten, src = tenantA, sourceS
	svc := &leads.Service{DB: d}
	// Members in this order: A, D (disabled below), B, C.
	if _, err := svc.PutAssignment(ctx, ten, leads.Assignment{Rules: []leads.AssignmentRule{
		{Name: "Everyone", Strategy: leads.StrategyRoundRobin, Members: []string{users[0], users[3], users[1], users[2]}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`UPDATE users SET disabled_at = ? WHERE tenant_id = ? AND id = ?`, now, ten, users[3]); err != nil {
		t.Fatal(err)
	}
	rec := func(ref string, tags ...string) leads.BatchRecord {
		return leads.BatchRecord{SourceID: src, SenderRecord: leads.SenderRecord{SourceRef: ref, Name: ref, Email: ref + "@example.org",
			Payload: json.RawMessage(`{"n":"` + ref + `"}`), Sightings: 1, Tags: tags}}
	}
	batch := func(recs ...leads.BatchRecord) []leads.UpsertOutcome {
		t.Helper()
		var out []leads.UpsertOutcome
		if err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
			o, pending, err := leads.UpsertFromSenderBatchDeferred(ctx, tx, ten, recs, now)
			if err != nil {
				return err
			}
			// Something else of the batch's transaction in between, as
			// the worker marks its deliveries.
			if _, err := tx.ExecContext(ctx, `SELECT 1`); err != nil {
				return err
			}
			if err := pending.Insert(ctx, tx, one); err != nil {
				return err
			}
			out = o
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// One batch: positions in record order; r2's second record (a later
	// order key) updates the lead created by its first; the test lead is
	// not assigned.
	r2b := rec("r2")
	r2b.Name, r2b.OrderKey = "r2 later", leads.OrderKey(now.Add(time.Second), "z")
	out := batch(rec("r1"), rec("r2"), rec("t1", "test"), rec("r3"), r2b, rec("r4"))
	wantOwner := []string{users[0], users[1], "", users[2], "", users[0]}
	for i, o := range out {
		if o.OwnerID != wantOwner[i] {
			t.Errorf("record %d (%s): owner %q, want %q", i, o.Kind, o.OwnerID, wantOwner[i])
		}
	}
	if out[4].Kind != leads.OutcomeUpdated || out[4].LeadID != out[1].LeadID {
		t.Fatalf("second record of r2: %+v", out[4])
	}
	l2, err := leads.Get(ctx, d, ten, out[1].LeadID)
	if err != nil || l2.Name != "r2 later" || l2.OwnerID == nil || *l2.OwnerID != users[1] || l2.TimesSeen != 2 {
		t.Fatalf("r2: %+v %v", l2, err)
	}

	// 16 batches of 8 new leads at once (and retries where they collide):
	// counts differ by at most 1 over the 3 active members.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for b := 0; b < 16; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			var recs []leads.BatchRecord
			for i := 0; i < 8; i++ {
				recs = append(recs, rec(fmt.Sprintf("c%d-%d", b, i)))
			}
			// Half reserve apart (the worker), half in the transaction
			// (single-lead paths); every fourth rolls back once after
			// taking its positions in the transaction (a retry).
			reserve, tries := one, 0
			if b%2 == 1 {
				reserve = nil
			}
			errs <- db.InTx(ctx, d, func(tx *sqlx.Tx) error {
				tries++
				_, pending, err := leads.UpsertFromSenderBatchDeferred(ctx, tx, ten, recs, now)
				if err != nil {
					return err
				}
				// The worker starts its reservation apart as soon as the
				// plan knows its new leads (Reserve), then inserts.
				pending.Reserve(ctx, reserve)
				if err := pending.Insert(ctx, tx, reserve); err != nil {
					return err
				}
				if b%4 == 1 && tries == 1 {
					return leads.ErrConcurrentCreate // rolled back, retried
				}
				return nil
			})
		}(b)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var per []struct {
		Owner *string `db:"owner_id"`
		N     int     `db:"n"`
	}
	if err := d.Select(&per, `SELECT owner_id, COUNT(*) AS n FROM leads WHERE tenant_id = ? GROUP BY owner_id`, ten); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range per {
		if p.Owner == nil {
			counts[""] = p.N
		} else {
			counts[*p.Owner] = p.N
		}
	}
	if counts[""] != 1 || counts[users[3]] != 0 {
		t.Fatalf("unassigned or disabled: %v", counts)
	}
	c := []int{counts[users[0]], counts[users[1]], counts[users[2]]}
	sort.Ints(c)
	if c[0]+c[1]+c[2] != 4+16*8 || c[2]-c[0] > 1 {
		t.Fatalf("unfair: %v", counts)
	}
	var next int64
	if err := d.Get(&next, `SELECT next_pos FROM assignment_counters WHERE tenant_id = ?`, ten); err != nil || next != 4+16*8 {
		t.Fatalf("counter %d (%v), want %d", next, err, 4+16*8)
	}
	var entries, left int
	if err := d.Get(&entries, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND assigned_rule_id IS NOT NULL AND assigned_owner_id = owner_id`, ten); err != nil || entries != 4+16*8 {
		t.Fatalf("%d assignment entries (%v)", entries, err)
	}
	if err := d.Get(&left, `SELECT COUNT(*) FROM assignment_reservations WHERE tenant_id = ?`, ten); err != nil || left != 0 {
		t.Fatalf("%d reservations left (%v)", left, err)
	}
}

// A batch that reserved its positions apart and then rolled back leaves
// them; once they are older than a batch can be, the next batch hands
// them out first, in order, then reserves only what it needs more: the
// counter counts each position once.
func TestLeftReservationsAreUsedFirst(t *testing.T) {
	d, one, now, users := assignDB(t, "leads_assign_left", 3)
	ctx := context.Background()
	const ten, src = tenantA, sourceS
	if _, err := (&leads.Service{DB: d}).PutAssignment(ctx, ten, leads.Assignment{Rules: []leads.AssignmentRule{
		{Name: "Everyone", Strategy: leads.StrategyRoundRobin, Members: users}}}); err != nil {
		t.Fatal(err)
	}
	recs := func(prefix string, n int) []leads.BatchRecord {
		var out []leads.BatchRecord
		for i := 0; i < n; i++ {
			ref := fmt.Sprintf("%s%d", prefix, i)
			out = append(out, leads.BatchRecord{SourceID: src, SenderRecord: leads.SenderRecord{SourceRef: ref, Email: ref + "@example.org",
				Payload: json.RawMessage(`{}`), Sightings: 1}})
		}
		return out
	}
	at := now
	// run is a worker's batch: plan, start the reservation apart
	// (Reserve), insert, commit; with commit false it rolls back after
	// the insert, with insert false before it.
	run := func(rs []leads.BatchRecord, commit bool, insert ...bool) []leads.UpsertOutcome {
		t.Helper()
		var out []leads.UpsertOutcome
		tx, err := d.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		out, pending, err := leads.UpsertFromSenderBatchDeferred(ctx, tx, ten, rs, at)
		if err == nil {
			pending.Reserve(ctx, one)
			if len(insert) > 0 && !insert[0] {
				return out
			}
			err = pending.Insert(ctx, tx, one)
		}
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	state := func() (next int64, left int) {
		t.Helper()
		if err := d.Get(&next, `SELECT next_pos FROM assignment_counters WHERE tenant_id = ?`, ten); err != nil {
			t.Fatal(err)
		}
		if err := d.Get(&left, `SELECT COALESCE(SUM(n), 0) FROM assignment_reservations WHERE tenant_id = ?`, ten); err != nil {
			t.Fatal(err)
		}
		return next, left
	}
	run(recs("a", 1), true) // position 0: users[0]
	run(recs("b", 4), false)
	if next, left := state(); next != 5 || left != 4 {
		t.Fatalf("after a rolled-back batch of 4: counter %d, %d positions left, want 5 and 4", next, left)
	}
	// Too young to be taken: another batch gets new positions (5, 6).
	out := run(recs("y", 2), true)
	if out[0].OwnerID != users[2] || out[1].OwnerID != users[0] {
		t.Fatalf("owners %s %s, want positions 5 and 6", out[0].OwnerID, out[1].OwnerID)
	}
	if next, left := state(); next != 7 || left != 4 {
		t.Fatalf("counter %d, %d left, want 7 and 4", next, left)
	}
	// Half a minute later: 2 of the 4 left (positions 1, 2), then the
	// rest stays for later.
	at = now.Add(time.Minute)
	out = run(recs("c", 2), true)
	if out[0].OwnerID != users[1] || out[1].OwnerID != users[2] {
		t.Fatalf("owners %s %s, want positions 1 and 2", out[0].OwnerID, out[1].OwnerID)
	}
	if next, left := state(); next != 7 || left != 2 {
		t.Fatalf("counter %d, %d left, want 7 and 2", next, left)
	}
	// 5: the 2 left (positions 3, 4), then 3 new ones (7, 8, 9).
	out = run(recs("d", 5), true)
	want := []string{users[0], users[1], users[1], users[2], users[0]}
	for i, o := range out {
		if o.OwnerID != want[i] {
			t.Fatalf("lead %d: owner %s, want %s", i, o.OwnerID, want[i])
		}
	}
	if next, left := state(); next != 10 || left != 0 {
		t.Fatalf("counter %d, %d left, want 10 and 0", next, left)
	}
	// A batch that fails after its reservation started but before its
	// insert leaves the reservation (10, 11, 12) like any rolled-back
	// batch, and a later batch hands it out.
	run(recs("e", 3), false, false)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if next, left := state(); next == 13 && left == 3 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("counter %d, %d left, want 13 and 3", next, left)
		}
	}
	at = now.Add(2 * time.Minute)
	out = run(recs("f", 3), true)
	for i, o := range out {
		if o.OwnerID != users[(10+i)%3] {
			t.Fatalf("lead %d: owner %s, want position %d", i, o.OwnerID, 10+i)
		}
	}
	if next, left := state(); next != 13 || left != 0 {
		t.Fatalf("counter %d, %d left, want 13 and 0", next, left)
	}
}

// A rule replaced between a batch's plan and its positions: the batch
// fails with a retryable error (db.InTx re-runs it and reads the new
// rules), and nothing is assigned by the old rule.
func TestRulesReplacedMidBatch(t *testing.T) {
	d, one, now, users := assignDB(t, "leads_assign_replaced", 1)
	ctx := context.Background()
	const ten, src = tenantA, sourceS
	u := users[0]
	svc := &leads.Service{DB: d}
	put := func(name string) {
		if _, err := svc.PutAssignment(ctx, ten, leads.Assignment{Rules: []leads.AssignmentRule{
			{Name: name, Strategy: leads.StrategyRoundRobin, Members: []string{u}}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("Old")
	tries := 0
	err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		tries++
		_, pending, err := leads.UpsertFromSenderBatchDeferred(ctx, tx, ten, []leads.BatchRecord{{SourceID: src,
			SenderRecord: leads.SenderRecord{SourceRef: "r1", Email: "r1@example.org", Payload: json.RawMessage(`{}`), Sightings: 1}}}, now)
		if err != nil {
			return err
		}
		if tries == 1 {
			put("New")
		}
		err = pending.Insert(ctx, tx, one)
		if tries == 1 && err == nil {
			t.Error("the first try assigned by a replaced rule")
		}
		return err
	})
	if err != nil || tries != 2 {
		t.Fatalf("err %v after %d tries", err, tries)
	}
	var rule string
	if err := d.Get(&rule, `SELECT assigned_rule_name FROM leads WHERE tenant_id = ? AND assigned_rule_id IS NOT NULL`, ten); err != nil || rule != "New" {
		t.Fatalf("assigned by %q (%v)", rule, err)
	}
}

// assignDB opens a fresh database, the worker's one-trip pool on it and n
// (at most 4) staff users of tenantA, created now.
func assignDB(t *testing.T, name string, n int) (d, one *sqlx.DB, now time.Time, users []string) {
	t.Helper()
	d, dsn := dbtest.New(t, name)
	one = oneTrip(t, dsn)
	now = time.Now().UTC().Truncate(time.Microsecond)
	users = []string{"01HUSER00000000000000000A1", "01HUSER00000000000000000B2", "01HUSER00000000000000000C3", "01HUSER00000000000000000D4"}[:n]
	for i, u := range users {
		if _, err := d.Exec(`INSERT INTO users (tenant_id, id, email, name, password_hash, role, created_at) VALUES (?, ?, ?, ?, 'x', 'staff', ?)`,
			tenantA, u, fmt.Sprintf("u%d@example.test", i), fmt.Sprintf("User %d", i), now); err != nil {
			t.Fatal(err)
		}
	}
	return d, one, now, users
}

// oneTrip opens the worker's pool for one-round-trip reservations on the
// test's database.
func oneTrip(t *testing.T, dsn string) *sqlx.DB {
	t.Helper()
	one, err := db.OpenOneTrip(context.Background(), dsn, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Close() })
	return one
}
