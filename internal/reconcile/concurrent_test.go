package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/reconcile"
	"leadpipe/internal/reconcile/fakeapi"
)

// TestReconcileConcurrentRunsOfOneSource: for a few seconds, clicks of
// "Reconcile now" race each other and the runs they start, two workers
// execute the same run at once (a task redelivered while RunNow runs it),
// and each finished run frees the source while new claims wait on it — the
// pattern MariaDB answers with deadlocks (a claim's row leaves the unique
// index while waiters hold shared locks on it). Nothing may fail: every
// trigger answers a run id, every execution records its outcome, the
// leads are the sender's records exactly once, and no run is left running.
func TestReconcileConcurrentRunsOfOneSource(t *testing.T) {
	e := newEnv(t, "rec_concurrent", nil)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	const records = 120
	tf := fakeapi.NewTypeform(t, "F1", fakeapi.MakeLeads(records, "cc", now.Add(-2*time.Hour), 30*time.Second))
	src := e.createSource(t, map[string]any{"slug": "tf", "name": "TF", "kind": "typeform",
		"reconcile": map[string]any{"base_url": tf.URL, "access_token": "x", "form_id": "F1", "lookback_seconds": 7200}})
	svc := *e.svc
	svc.PageSize = 25 // several pages per run, so runs overlap

	var (
		mu       sync.Mutex
		failures []string
		triggers atomic.Int64
		execs    atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	runIDs := make(chan string, 1024)
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range 6 { // clicks
		wg.Go(func() {
			for time.Now().Before(stop) {
				id, err := svc.Trigger(ctx, e.ten.ID, src.ID)
				if err != nil {
					fail("trigger: %v", err)
					return
				}
				triggers.Add(1)
				select {
				case runIDs <- id:
				default:
				}
			}
		})
	}
	for range 2 { // workers: both may take the same run id
		wg.Go(func() {
			for time.Now().Before(stop) {
				select {
				case id := <-runIDs:
					for range 2 {
						if _, err := svc.RunNow(ctx, e.ten.ID, id); err != nil {
							fail("run %s: %v", id, err)
							return
						}
						execs.Add(1)
					}
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
	// Finish whatever is still running.
	for _, r := range e.runs(t, src.ID) {
		if r.State == reconcile.StateRunning {
			if _, err := svc.RunNow(ctx, e.ten.ID, r.ID); err != nil {
				fail("final run %s: %v", r.ID, err)
			}
		}
	}
	t.Logf("%d triggers, %d executions", triggers.Load(), execs.Load())
	if len(failures) > 0 {
		t.Fatalf("%d failures: %v", len(failures), failures)
	}
	if execs.Load() < 4 {
		t.Fatalf("only %d executions: the runs did not overlap", execs.Load())
	}
	if n := e.count(t, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, src.ID); n != records {
		t.Fatalf("%d leads, want %d", n, records)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM reconcile_runs WHERE tenant_id = ? AND source_id = ? AND state = 'running'`, e.ten.ID, src.ID); n != 0 {
		t.Fatalf("%d runs left running", n)
	}
}
