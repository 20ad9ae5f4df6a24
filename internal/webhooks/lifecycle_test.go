package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apptest"
	"leadpipe/internal/jobs"
	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// runWorker starts the app's real Asynq worker (error handler included)
// for the rest of the test.
func runWorker(t *testing.T, e *apptest.Env) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = e.App.RunWorker(ctx, 4) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func inspector(t *testing.T, e *apptest.Env) *asynq.Inspector {
	return asynq.NewInspectorFromRedisClient(e.App.RDB)
}

// storeDelivery inserts a received delivery row directly (as if Redis had
// been down when it arrived) and returns its row id.
func storeDelivery(t *testing.T, e *apptest.Env, s source, deliveryID, ref, email string, at time.Time) string {
	t.Helper()
	h, body := signed(t, s, deliveryID, ref, kinds.Lead{Email: email}, time.Now())
	k, err := kinds.New(s.Kind, s.Config)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := k.Parse(h, body)
	if err != nil || len(recs) != 1 {
		t.Fatalf("parse sample: %v %d", err, len(recs))
	}
	return insertDelivery(t, e, s, recs[0].DeliveryID, []byte(recs[0].Raw), at.UTC(), 0)
}

// 600 deliveries at the head of a tenant's backlog whose tasks are stuck
// in the queue (scheduled an hour out: every enqueue conflicts) and 10
// good ones behind them: one sweep queues the 10, and they are processed.
// With a small budget the walk continues across sweeps from its cursor.
func TestSweepWalksPastStuckRows(t *testing.T) {
	e := apptest.New(t, "hooks_sweep", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ctx := context.Background()
	ten := e.Tenant("sweep")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	other := e.Tenant("other")
	osrc := newSource(t, e, other.ID, "landing", kinds.Standard)

	base := time.Now().Add(-time.Hour)
	for i := 0; i < 600; i++ {
		id := storeDelivery(t, e, s, fmt.Sprintf("stuck-%d", i), fmt.Sprintf("c-stuck-%d", i), "stuck@example.com", base.Add(time.Duration(i)*time.Millisecond))
		task, opts := webhooks.NewProcessTask(ten.ID, id, 0)
		if _, err := e.App.Queue.EnqueueContext(ctx, task, append(opts, asynq.ProcessIn(time.Hour))...); err != nil {
			t.Fatal(err)
		}
	}
	var good []string
	for i := 0; i < 10; i++ {
		good = append(good, storeDelivery(t, e, s, fmt.Sprintf("good-%d", i), fmt.Sprintf("c-good-%d", i),
			fmt.Sprintf("good%d@example.com", i), base.Add(time.Minute+time.Duration(i)*time.Millisecond)))
	}
	// Another tenant's backlog is swept too, and on its own.
	otherID := storeDelivery(t, e, osrc, "o-1", "c-o-1", "o@example.com", base)

	// A budget of 250 rows a sweep: the cursor carries the walk on, so the
	// third sweep reaches the good rows (250 + 250 + 100 stuck, then them).
	small := &webhooks.Processor{DB: e.App.DB, Sources: e.App.Sources, Queue: e.App.Queue, Log: e.App.Log, Now: time.Now,
		Lifecycle: webhooks.Lifecycle{SweepBudget: 250}}
	var got []int
	for i := 0; i < 3; i++ {
		n, err := small.Sweep(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if got[0]+got[1] != 0 || got[2] != 10 {
		// The first sweep's budget is used up by tenant "sweep" or "other",
		// whichever sorts first; either way no stuck row is queued and the
		// good ones come by the third sweep.
		if got[0]+got[1]+got[2] != 11 {
			t.Fatalf("budgeted sweeps queued %v, want the 10 good rows (and the other tenant's 1) by the third", got)
		}
	}
	insp := inspector(t, e)
	for _, id := range append(good, otherID) {
		ti, err := insp.GetTaskInfo(jobs.QueueCritical, id)
		if err != nil || ti.State != asynq.TaskStatePending {
			t.Fatalf("good delivery %s not pending after the sweeps: %v %v", id, ti, err)
		}
	}
	// Remove them again, then one default sweep queues all 11 at once.
	for _, id := range append(good, otherID) {
		if err := insp.DeleteTask(jobs.QueueCritical, id); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.App.Processor.Sweep(ctx, time.Second)
	if err != nil || n != 11 {
		t.Fatalf("one sweep queued %d (%v), want the 10 good rows and the other tenant's 1", n, err)
	}
	runWorker(t, e)
	apptest.Eventually(t, 20*time.Second, "the 10 good deliveries processed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND delivery_id LIKE 'good-%' AND state = 'processed'`, ten.ID) == 10
	})
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'received'`, ten.ID); c != 600 {
		t.Fatalf("%d stuck rows still received, want 600 (their own tasks are scheduled later)", c)
	}
	apptest.Eventually(t, 10*time.Second, "the other tenant's delivery processed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, other.ID) == 1
	})
}

// injectLeadFailure makes every lead upsert of an email starting "boom"
// fail with a database error (a transient error: Asynq retries it).
func injectLeadFailure(t *testing.T, e *apptest.Env) (fix func()) {
	t.Helper()
	if _, err := e.App.DB.Exec(`CREATE TRIGGER boom_leads BEFORE INSERT ON leads FOR EACH ROW
		BEGIN IF NEW.email LIKE 'boom%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected lead failure'; END IF; END`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := e.App.DB.Exec(`DROP TRIGGER IF EXISTS boom_leads`); err != nil {
			t.Fatal(err)
		}
	}
}

// A task failing past its retries: the delivery is failed with its error
// (by the error handler on the last run), the archived task is settled so
// its TaskID frees, the failure is counted and alerts; after the fix a
// reprocess makes the lead once, and a second reprocess changes nothing.
func TestRetriesExhaustedMarksFailedThenReprocess(t *testing.T) {
	e := apptest.New(t, "hooks_final", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ctx := context.Background()
	ten := e.Tenant("final")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	fix := injectLeadFailure(t, e)
	defer fix()

	h, b := signed(t, s, "msg-boom", "c-boom", kinds.Lead{Email: "boom@example.com"}, time.Now())
	r := send(t, s.URL, h, b)
	if r.Status != 200 || r.Ack.Status != "accepted" {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	id := r.Ack.DeliveryID
	// The dispatcher queued it with 12 retries; give it 2 so the test is quick.
	insp := inspector(t, e)
	apptest.Eventually(t, 5*time.Second, "the task queued", func() bool {
		n, err := insp.DeleteAllPendingTasks(jobs.QueueCritical)
		return err == nil && n > 0
	})
	task, opts := webhooks.NewProcessTask(ten.ID, id, 0)
	if _, err := e.App.Queue.EnqueueContext(ctx, task, append(opts, asynq.MaxRetry(2))...); err != nil {
		t.Fatal(err)
	}
	runWorker(t, e)

	apptest.Eventually(t, 30*time.Second, "the delivery marked failed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND id = ? AND state = 'failed'`, ten.ID, id) == 1
	})
	var d struct {
		Attempts  int     `db:"attempts"`
		LastError *string `db:"last_error"`
	}
	if err := e.App.DB.Get(&d, `SELECT attempts, last_error FROM deliveries WHERE tenant_id = ? AND id = ?`, ten.ID, id); err != nil {
		t.Fatal(err)
	}
	if d.Attempts != 3 || d.LastError == nil || !strings.Contains(*d.LastError, "injected lead failure") || !strings.Contains(*d.LastError, "after 3 attempts") {
		t.Fatalf("failed delivery: attempts %d, last_error %v", d.Attempts, d.LastError)
	}

	// The archived task is settled: deleted, its TaskID free.
	apptest.Eventually(t, 10*time.Second, "the task archived", func() bool {
		ti, err := insp.GetTaskInfo(jobs.QueueCritical, id)
		return err == nil && ti.State == asynq.TaskStateArchived
	})
	if n, err := e.App.Processor.SettleArchived(ctx); err != nil || n != 1 {
		t.Fatalf("settled %d archived tasks (%v), want 1", n, err)
	}
	if _, err := insp.GetTaskInfo(jobs.QueueCritical, id); err == nil {
		t.Fatal("archived task still there after settling")
	}

	// Counted once per source and minute, and the alert fires.
	svc := e.App.Web.Monitor
	if err := svc.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := count(t, e, `SELECT COALESCE(SUM(processing_failures), 0) FROM source_stats_minute WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); c != 1 {
		t.Fatalf("processing_failures = %d, want 1", c)
	}
	var stats struct {
		Buckets []struct {
			ProcessingFailures int `json:"processing_failures"`
		} `json:"buckets"`
	}
	e.Do("GET", "/api/v1/sources/"+s.ID+"/stats", ten.Token, nil).JSON(t, &stats)
	failures := 0
	for _, b := range stats.Buckets {
		failures += b.ProcessingFailures
	}
	if failures != 1 {
		t.Fatalf("the stats API counts %d processing failures, want 1", failures)
	}
	if err := svc.Evaluate(ctx, time.Now().Truncate(time.Minute).Add(time.Minute+monitor.EvaluateLag)); err != nil {
		t.Fatal(err)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM alerts WHERE tenant_id = ? AND source_id = ? AND rule = 'processing_failures' AND state = 'open'`, ten.ID, s.ID); c != 1 {
		t.Fatalf("%d open processing_failures alerts, want 1", c)
	}

	// Listed with its error.
	var list struct {
		Items []webhooks.DeliveryItem `json:"items"`
	}
	lr := e.Do("GET", "/api/v1/sources/"+s.ID+"/deliveries?state=failed", ten.Token, nil)
	if lr.Status != 200 {
		t.Fatalf("list failed: %d %s", lr.Status, lr.Body)
	}
	lr.JSON(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != id || list.Items[0].LastError == nil || list.Items[0].Attempts != 3 {
		t.Fatalf("failed list: %s", lr.Body)
	}

	// Fix, reprocess (twice, concurrently): one lead.
	fix()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := e.Do("POST", "/api/v1/deliveries/"+id+"/reprocess", ten.Token, nil)
			if rr.Status != 202 {
				t.Errorf("reprocess: %d %s", rr.Status, rr.Body)
			}
		}()
	}
	wg.Wait()
	apptest.Eventually(t, 15*time.Second, "the delivery processed after the fix", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND id = ? AND state = 'processed'`, ten.ID, id) == 1
	})
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND email = 'boom@example.com'`, ten.ID); c != 1 {
		t.Fatalf("%d leads after reprocess, want 1", c)
	}
	var seen int
	_ = e.App.DB.Get(&seen, `SELECT times_seen FROM leads WHERE tenant_id = ? AND email = 'boom@example.com'`, ten.ID)
	rr := e.Do("POST", "/api/v1/deliveries/"+id+"/reprocess", ten.Token, nil)
	if rr.Status != 202 || !strings.Contains(string(rr.Body), `"state":"processed"`) {
		t.Fatalf("second reprocess: %d %s", rr.Status, rr.Body)
	}
	time.Sleep(500 * time.Millisecond)
	var seen2 int
	_ = e.App.DB.Get(&seen2, `SELECT times_seen FROM leads WHERE tenant_id = ? AND email = 'boom@example.com'`, ten.ID)
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != 1 || seen2 != seen {
		t.Fatalf("a second reprocess changed something: %d leads, times_seen %d → %d", c, seen, seen2)
	}

	// Another tenant: 404 on the delivery and the source's list.
	intruder := e.Tenant("intruder")
	if r := e.Do("POST", "/api/v1/deliveries/"+id+"/reprocess", intruder.Token, nil); r.Status != 404 {
		t.Fatalf("other tenant's reprocess: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/sources/"+s.ID+"/deliveries", intruder.Token, nil); r.Status != 404 {
		t.Fatalf("other tenant's list: %d %s", r.Status, r.Body)
	}
}

// A generic source with a wrong natural-key path: its deliveries fail;
// the preview under the fixed mapping shows the right keys and changes
// nothing; save + reprocess makes one lead each; again, nothing new;
// another tenant gets 404 on every route.
func TestGenericWrongPathFixAndReprocess(t *testing.T) {
	e := apptest.New(t, "hooks_fix", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("fix")
	good := kinds.SampleConfig(kinds.Generic)
	wrong := []byte(strings.Replace(string(good), `"$.lead.id"`, `"$.lead.uuid"`, 1))
	src, secret, err := e.App.Sources.Create(context.Background(), ten.ID, sourcesInput("form", kinds.Generic, wrong))
	if err != nil {
		t.Fatal(err)
	}
	s := source{Source: src, Secret: secret, URL: e.URL + "/hooks/" + ten.Slug + "/form"}
	const n = 5
	for i := 0; i < n; i++ {
		body := kinds.SampleBody(kinds.Generic, fmt.Sprintf("evt-%d", i), fmt.Sprintf("lead-%d", i), kinds.Lead{Email: fmt.Sprintf("p%d@example.com", i)}, time.Now())
		h, b, err := kinds.Sign(kinds.Generic, wrong, secret, fmt.Sprintf("evt-%d", i), body, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if r := send(t, s.URL, h, b); r.Status != 200 || r.Ack.Status != "accepted" {
			t.Fatalf("ingest %d: %d %s", i, r.Status, r.Body)
		}
	}
	apptest.Eventually(t, 20*time.Second, "the deliveries failed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'failed'`, ten.ID) == n
	})
	var list struct {
		Items []webhooks.DeliveryItem `json:"items"`
	}
	e.Do("GET", "/api/v1/sources/"+src.ID+"/deliveries?state=failed&limit=2", ten.Token, nil).JSON(t, &list)
	if len(list.Items) != 2 || list.Items[0].LastError == nil || !strings.Contains(*list.Items[0].LastError, "no natural key") {
		t.Fatalf("failed list: %+v", list.Items)
	}

	// Preview under the fixed mapping: the right keys, nothing changed.
	var pv struct {
		Items []webhooks.PreviewItem `json:"items"`
	}
	pr := e.Do("POST", "/api/v1/sources/"+src.ID+"/preview", ten.Token, map[string]any{"config": json.RawMessage(good), "limit": 20})
	if pr.Status != 200 {
		t.Fatalf("preview: %d %s", pr.Status, pr.Body)
	}
	pr.JSON(t, &pv)
	if len(pv.Items) != n {
		t.Fatalf("preview items: %s", pr.Body)
	}
	for _, it := range pv.Items {
		if it.NaturalKey == nil || !strings.HasPrefix(*it.NaturalKey, "lead-") || it.Error != nil || it.State != "failed" ||
			!strings.HasSuffix(it.Fields["email"], "@example.com") {
			t.Fatalf("preview item: %+v", it)
		}
	}
	// With an event time path, each item carries the record's own time.
	var timed map[string]any
	if err := json.Unmarshal(good, &timed); err != nil {
		t.Fatal(err)
	}
	timed["event_time_path"] = "$.event.created_at"
	e.Do("POST", "/api/v1/sources/"+src.ID+"/preview", ten.Token, map[string]any{"config": timed}).JSON(t, &pv)
	for _, it := range pv.Items {
		if it.EventTime == nil || time.Since(*it.EventTime) > time.Hour {
			t.Fatalf("preview item without the event time: %+v", it)
		}
	}
	// The current (wrong) mapping previews as the error it is.
	e.Do("POST", "/api/v1/sources/"+src.ID+"/preview", ten.Token, map[string]any{"config": json.RawMessage(wrong)}).JSON(t, &pv)
	if len(pv.Items) != n || pv.Items[0].Error == nil || pv.Items[0].NaturalKey != nil {
		t.Fatalf("preview under the wrong mapping: %+v", pv.Items)
	}
	if r := e.Do("POST", "/api/v1/sources/"+src.ID+"/preview", ten.Token, map[string]any{"config": map[string]any{"natural_key_path": "lead.id"}}); r.Status != 422 || !strings.Contains(string(r.Body), "natural_key_path") {
		t.Fatalf("preview of an invalid config: %d %s", r.Status, r.Body)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != 0 {
		t.Fatalf("preview created %d leads", c)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'failed'`, ten.ID); c != n {
		t.Fatalf("preview changed delivery states: %d failed", c)
	}

	// Another tenant: 404 on every route, nothing changes.
	intruder := e.Tenant("intruder")
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/sources/" + src.ID + "/deliveries?state=failed", nil},
		{"POST", "/api/v1/sources/" + src.ID + "/preview", map[string]any{"config": json.RawMessage(good)}},
		{"POST", "/api/v1/sources/" + src.ID + "/reprocess", map[string]any{"state": "failed"}},
		{"POST", "/api/v1/deliveries/" + list.Items[0].ID + "/reprocess", nil},
		{"PATCH", "/api/v1/sources/" + src.ID, map[string]any{"config": json.RawMessage(good)}},
	} {
		if r := e.Do(c.method, c.path, intruder.Token, c.body); r.Status != 404 {
			t.Fatalf("intruder %s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}

	// Save the fix, reprocess: one lead each.
	if r := e.Do("PATCH", "/api/v1/sources/"+src.ID, ten.Token, map[string]any{"config": json.RawMessage(good)}); r.Status != 200 {
		t.Fatalf("save config: %d %s", r.Status, r.Body)
	}
	var q struct {
		Queued int `json:"queued"`
	}
	rr := e.Do("POST", "/api/v1/sources/"+src.ID+"/reprocess", ten.Token, map[string]any{"state": "failed"})
	if rr.Status != 202 {
		t.Fatalf("reprocess: %d %s", rr.Status, rr.Body)
	}
	rr.JSON(t, &q)
	if q.Queued != n {
		t.Fatalf("reprocess queued %d, want %d", q.Queued, n)
	}
	apptest.Eventually(t, 20*time.Second, "the deliveries processed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID) == n
	})
	if c := count(t, e, `SELECT COUNT(DISTINCT source_ref) FROM leads WHERE tenant_id = ? AND source_ref LIKE 'lead-%'`, ten.ID); c != n {
		t.Fatalf("%d leads, want %d", c, n)
	}
	// Again: nothing to do, nothing new.
	e.Do("POST", "/api/v1/sources/"+src.ID+"/reprocess", ten.Token, map[string]any{"state": "failed"}).JSON(t, &q)
	time.Sleep(300 * time.Millisecond)
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); q.Queued != 0 || c != n {
		t.Fatalf("second reprocess: queued %d, %d leads", q.Queued, c)
	}
	if r := e.Do("POST", "/api/v1/sources/"+src.ID+"/reprocess", ten.Token, map[string]any{"state": "processed"}); r.Status != 422 || !strings.Contains(string(r.Body), "state") {
		t.Fatalf("reprocess state=processed: %d %s", r.Status, r.Body)
	}
}

func sourcesInput(slug, kind string, config []byte) sources.CreateInput {
	return sources.CreateInput{Slug: slug, Name: slug, Kind: kind, Config: config}
}

// A reprocess resets a failed delivery; a late final failure of the task
// queued before it (Asynq's error handler, the archive settle) must not
// fail it again, while a failure of the task the reprocess queued does.
func TestLateFailureOfAnOldTaskLeavesAReprocessedDelivery(t *testing.T) {
	e := apptest.New(t, "hooks_late_failure", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("late")
	s := newSource(t, e, ten.ID, "web", kinds.Standard)
	id := storeDelivery(t, e, s, "evt-late", "ref-late", "late@example.com", time.Now())
	ctx := context.Background()
	p := e.App.Processor
	old := webhooks.ProcessPayload{TenantID: ten.ID, DeliveryID: id} // queued at ingest: attempts 0
	if ok, err := p.MarkFailed(ctx, old, 1, "the mapping was wrong"); err != nil || !ok {
		t.Fatalf("first failure: changed %v, %v", ok, err)
	}
	// Reprocessed: received again, its failure still counted in attempts.
	if _, err := e.App.DB.Exec(`UPDATE deliveries SET state = 'received', processed_at = NULL WHERE tenant_id = ? AND id = ?`, ten.ID, id); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.MarkFailed(ctx, old, 1, "late: the old task's failure"); err != nil || ok {
		t.Fatalf("the old task's late failure changed the reprocessed delivery (%v, %v)", ok, err)
	}
	var st struct {
		State    string `db:"state"`
		Attempts int    `db:"attempts"`
	}
	if err := e.App.DB.Get(&st, `SELECT state, attempts FROM deliveries WHERE tenant_id = ? AND id = ?`, ten.ID, id); err != nil || st.State != "received" || st.Attempts != 1 {
		t.Fatalf("after the late failure: %+v (%v)", st, err)
	}
	again := webhooks.ProcessPayload{TenantID: ten.ID, DeliveryID: id, Runs: st.Attempts} // what Requeue queues
	if ok, err := p.MarkFailed(ctx, again, 1, "failed again"); err != nil || !ok {
		t.Fatalf("the reprocess task's failure: changed %v, %v", ok, err)
	}
}
