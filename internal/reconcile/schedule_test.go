package reconcile_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apptest"
	"leadpipe/internal/jobs"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/webhooks/kinds"
)

// TestReconcileSchedulersEnqueueEachWindowOnce: two schedulers ticking at once
// enqueue each source's window once, two workers handed the same window run
// it once, and a window that ran is not queued again even after Redis
// forgot its task.
func TestReconcileSchedulersEnqueueEachWindowOnce(t *testing.T) {
	e := newEnv(t, "rec_sched", nil)
	ctx := context.Background()
	f := fakeapi.NewGeneric(t, "/leads", []json.RawMessage{genericItem("a1", "a1@x.test")})
	cfg := json.RawMessage(kinds.SampleConfig(kinds.Generic))
	var ids []string
	for _, slug := range []string{"g-one", "g-two", "g-three"} {
		s := e.createSource(t, map[string]any{"slug": slug, "name": slug, "kind": "generic", "config": cfg,
			"reconcile": map[string]any{"base_url": f.URL, "list_path": "/leads", "interval_seconds": 900}})
		ids = append(ids, s.ID)
	}
	// Sources without pull settings are never scheduled.
	e.createSource(t, map[string]any{"slug": "plain", "name": "plain", "kind": "generic", "config": cfg})
	e.createSource(t, map[string]any{"slug": "std", "name": "std", "kind": "standard"})
	other := e.Tenant("other")
	if res := e.Do("POST", "/api/v1/sources", other.Token, map[string]any{"slug": "gen", "name": "gen", "kind": "generic", "config": cfg,
		"reconcile": map[string]any{"base_url": f.URL, "list_path": "/leads"}}); res.Status != 201 {
		t.Fatalf("other tenant's source: %d %s", res.Status, res.Body)
	}

	// The clock follows the real one: createSource seeds each source with a
	// completed run two days ago, so a fixed date goes stale as days pass.
	clock := time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second)
	insp := asynq.NewInspector(e.App.Redis)
	defer insp.Close()
	scheduler := func() *reconcile.Service {
		s := *e.svc
		s.Now = func() time.Time { return clock }
		return &s
	}
	tick := func() int {
		var g apptest.Group
		var n [2]int
		for i := range n { // two schedulers at once
			s := scheduler()
			g.Go(func() error {
				var err error
				n[i], err = s.EnqueueDue(ctx)
				return err
			})
		}
		g.Wait(t)
		return n[0] + n[1]
	}
	pending := func() []*asynq.TaskInfo {
		tasks, err := insp.ListPendingTasks(jobs.QueueLow)
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(tasks, func(ti *asynq.TaskInfo) bool { return ti.Type != reconcile.TypeSource })
	}

	// The periodic tick itself: two Asynq schedulers (a lease handover)
	// enqueue it once per minute.
	var wg sync.WaitGroup
	for i := range 2 {
		s := &jobs.Scheduler{Client: e.App.Queue, Log: slog.New(slog.DiscardHandler), Periodics: e.App.Jobs.Periodics(),
			ID: strconv.Itoa(i), Now: func() time.Time { return clock }}
		wg.Go(func() { s.EnqueueDue(ctx) })
	}
	wg.Wait()
	ticks, err := insp.ListPendingTasks(jobs.QueueDefault)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(ticks, func(ti *asynq.TaskInfo) bool { return ti.Type != reconcile.TypeTick })); n != 1 {
		t.Fatalf("%d reconcile:tick tasks from two schedulers, want 1", n)
	}

	if n := tick(); n != 4 {
		t.Fatalf("two schedulers enqueued %d tasks, want 4 (one per reconcilable source and window)", n)
	}
	tasks := pending()
	if len(tasks) != 4 {
		t.Fatalf("%d pending tasks, want 4", len(tasks))
	}
	for _, id := range ids {
		w := reconcile.WindowStart(clock, 15*time.Minute, id)
		want := "reconcile:" + id + ":" + strconv.FormatInt(w.Unix(), 10)
		if !slices.ContainsFunc(tasks, func(ti *asynq.TaskInfo) bool { return ti.ID == want }) {
			t.Errorf("no task %s", want)
		}
		if w.After(clock) || clock.Sub(w) >= 15*time.Minute {
			t.Errorf("window %v does not hold %v", w, clock)
		}
	}
	if n := tick(); n != 0 {
		t.Fatalf("second tick in the same window enqueued %d", n)
	}

	// Two workers handed the same window: one run.
	for _, ti := range tasks {
		task := asynq.NewTask(ti.Type, ti.Payload)
		var wg sync.WaitGroup
		for range 2 {
			s := scheduler()
			wg.Go(func() {
				if err := s.HandleSource(ctx, task); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if err := insp.DeleteTask(jobs.QueueLow, ti.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if n := e.count(t, `SELECT COUNT(*) FROM reconcile_runs WHERE tenant_id = ? AND source_id = ? AND state = 'succeeded'
			AND trigger_kind = 'scheduled'`, e.ten.ID, id); n != 1 {
			t.Fatalf("source %s: %d runs for one window", id, n)
		}
	}
	// Redis no longer knows the tasks; the runs table still says the window ran.
	if n := tick(); n != 0 {
		t.Fatalf("a window that ran was enqueued again: %d", n)
	}
	// The next window is due.
	clock = clock.Add(15 * time.Minute)
	if n := tick(); n != 4 {
		t.Fatalf("next window: %d tasks, want 4", n)
	}
}

// testTriggerIsIdempotent: concurrent "Reconcile now" clicks get one run;
// a stale run left by a dead worker stops blocking after StaleAfter.
func testTriggerIsIdempotent(t *testing.T, e *env) {
	ctx := context.Background()
	f := fakeapi.NewGeneric(t, "/leads", []json.RawMessage{genericItem("a1", "a1@x.test")})
	src := e.createSource(t, map[string]any{"slug": "gen", "name": "gen", "kind": "generic", "config": json.RawMessage(kinds.SampleConfig(kinds.Generic)),
		"reconcile": map[string]any{"base_url": f.URL, "list_path": "/leads"}})

	got := make([]string, 10)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = e.trigger(t, src.ID) })
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("double clicks started several runs: %v", got)
		}
	}
	if n := e.count(t, `SELECT COUNT(*) FROM reconcile_runs WHERE tenant_id = ? AND trigger_kind <> 'test-seed'`, e.ten.ID); n != 1 {
		t.Fatalf("%d runs", n)
	}
	insp := asynq.NewInspector(e.App.Redis)
	defer insp.Close()
	if _, err := insp.GetTaskInfo(jobs.QueueLow, "reconcile:"+got[0]); err != nil {
		t.Fatalf("task reconcile:%s: %v", got[0], err)
	}

	// The worker died with the run: after StaleAfter a click starts afresh.
	later := *e.svc
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	id, err := later.Trigger(ctx, e.ten.ID, src.ID)
	if err != nil || id == got[0] {
		t.Fatalf("after staleness: %s %v", id, err)
	}
	old, err := e.svc.GetRun(ctx, e.ten.ID, src.ID, got[0])
	if err != nil || old.State != reconcile.StateFailed || old.LastError == nil {
		t.Fatalf("stale run: %+v %v", old, err)
	}
	// Redelivered task of the abandoned run: nothing happens.
	b, _ := json.Marshal(map[string]string{"tenant_id": e.ten.ID, "source_id": src.ID, "run_id": got[0]})
	if err := e.svc.HandleSource(ctx, asynq.NewTask(reconcile.TypeSource, b)); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.svc.GetRun(ctx, e.ten.ID, src.ID, got[0]); r.State != reconcile.StateFailed {
		t.Fatalf("abandoned run ran: %+v", r)
	}
	r, err := e.svc.RunNow(ctx, e.ten.ID, id)
	if err != nil || r.State != reconcile.StateSucceeded || r.New != 1 {
		t.Fatalf("run: %+v %v", r, err)
	}

	// Finished runs go after the retention period (90 days).
	purger := *e.svc
	purger.Now = func() time.Time { return time.Now().Add(91 * 24 * time.Hour) }
	if err := purger.HandlePurge(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM reconcile_runs WHERE tenant_id = ?`, e.ten.ID); n != 0 {
		t.Fatalf("%d runs left after the purge", n)
	}
}
