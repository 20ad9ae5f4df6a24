package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/ids"
	"leadpipe/internal/monitor"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/webhooks/kinds"
)

// markReconciledBefore records a completed run of the source, as if it had
// been reconciled before the test (so a run is not its back-fill).
func (e *env) markReconciledBefore(t *testing.T, sourceID string) {
	t.Helper()
	at := time.Now().UTC().Add(-48 * time.Hour)
	if _, err := e.App.DB.Exec(`INSERT INTO reconcile_runs (tenant_id, id, source_id, state, trigger_kind, started_at, heartbeat_at, finished_at)
		VALUES (?, ?, ?, 'succeeded', 'test-seed', ?, ?, ?)`, e.ten.ID, ids.New(), sourceID, at, at, at); err != nil {
		t.Fatal(err)
	}
}

func (e *env) runNow(t *testing.T, sourceID string) reconcile.Run {
	t.Helper()
	run, err := e.svc.RunNow(context.Background(), e.ten.ID, e.trigger(t, sourceID))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (e *env) statSums(t *testing.T, sourceID string) (newN, known, backfill int) {
	t.Helper()
	if err := e.App.Stats.(*monitor.Recorder).Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		New, Known, Backfill int
	}
	if err := e.App.DB.QueryRow(`SELECT COALESCE(SUM(reconcile_new), 0), COALESCE(SUM(reconcile_known), 0), COALESCE(SUM(backfill), 0)
		FROM source_stats_minute WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, sourceID).Scan(&got.New, &got.Known, &got.Backfill); err != nil {
		t.Fatal(err)
	}
	return got.New, got.Known, got.Backfill
}

// The first run of a newly configured source is back-fill, not loss.
func TestReconcileFirstRunIsBackfill(t *testing.T) {
	e := newEnv(t, "rec_backfill", nil)
	now := time.Now().UTC().Truncate(time.Second)
	tf := fakeapi.NewTypeform(t, "F1", fakeapi.MakeLeads(30, "bf", now.Add(-3*time.Hour), time.Minute))
	src := e.createFreshSource(t, map[string]any{"slug": "tf", "name": "TF", "kind": "typeform",
		"reconcile": map[string]any{"base_url": tf.URL, "access_token": "x", "form_id": "F1"}})
	first := e.runNow(t, src.ID)
	if first.State != reconcile.StateSucceeded || first.New != 0 || first.Backfill != 30 || first.Records != 30 {
		t.Fatalf("first run: %+v", first)
	}
	if n, _, b := e.statSums(t, src.ID); n != 0 || b != 30 {
		t.Fatalf("stats: reconcile_new %d, backfill %d; want 0 and 30", n, b)
	}
	// Later finds are loss again.
	tf.Add(fakeapi.MakeLeads(1, "late", now.Add(-time.Hour), time.Minute)...)
	second := e.runNow(t, src.ID)
	if second.New != 1 || second.Backfill != 0 || second.Known != 30 {
		t.Fatalf("second run: %+v", second)
	}
	if c := e.count(t, `SELECT COUNT(*) FROM alerts WHERE tenant_id = ? AND rule = 'webhook_loss'`, e.ten.ID); c != 0 {
		t.Fatalf("%d loss alerts before evaluation", c)
	}
}

// A record whose delivery is stored but still queued is not loss (and the
// reconcile leaves its lead to the delivery); a record still settling is
// not judged yet; one no webhook ever brought is loss.
func TestReconcileQueuedDeliveryIsNotLoss(t *testing.T) {
	e := newEnv(t, "rec_queued", nil)
	now := time.Now().UTC().Truncate(time.Second)
	leads := fakeapi.MakeLeads(3, "q", now.Add(-2*time.Hour), time.Minute)
	fresh := fakeapi.MakeLeads(1, "fresh", now.Add(-time.Minute), time.Minute) // inside the 5 min settle delay
	tf := fakeapi.NewTypeform(t, "F2", append(leads, fresh...))
	src := e.createSource(t, map[string]any{"slug": "tf", "name": "TF", "kind": "typeform",
		"reconcile": map[string]any{"base_url": tf.URL, "access_token": "x", "form_id": "F2", "lookback_seconds": 86400}})
	e.markReconciledBefore(t, src.ID)

	// leads[0]'s webhook is stored and waits in the queue (no worker runs).
	body := fakeapi.TypeformWebhook("F2", leads[0])
	k, _ := kinds.New(kinds.Typeform, nil)
	recs, err := k.Parse(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.DB.Exec(`INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at, state)
		VALUES (?, ?, ?, ?, 'webhook', ?, ?, 'received')`, e.ten.ID, src.ID, ids.New(), recs[0].DeliveryID, []byte(recs[0].Raw), now); err != nil {
		t.Fatal(err)
	}

	run := e.runNow(t, src.ID)
	if run.State != reconcile.StateSucceeded || run.New != 2 || run.Known != 1 {
		t.Fatalf("run: %+v (want 2 new: the two no webhook brought; 1 known: the queued one; the fresh one not judged)", run)
	}
	if c := e.count(t, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = ?`, e.ten.ID, leads[0].ID); c != 0 {
		t.Fatalf("reconcile created the queued delivery's lead (%d): it is the delivery's to make", c)
	}
	if c := e.count(t, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = ?`, e.ten.ID, fresh[0].ID); c != 0 {
		t.Fatal("a record still settling was judged")
	}
	if n, kn, _ := e.statSums(t, src.ID); n != 2 || kn != 1 {
		t.Fatalf("stats: reconcile_new %d known %d, want 2 and 1", n, kn)
	}
	// The next run's window still reaches the settling record.
	var cursor time.Time
	if err := e.App.DB.QueryRow(`SELECT reconcile_cursor FROM sources WHERE tenant_id = ? AND id = ?`, e.ten.ID, src.ID).Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if !cursor.Before(fresh[0].Created) {
		t.Fatalf("cursor %s passed the settling record (%s)", cursor, fresh[0].Created)
	}
}

// A run stopped part-way saves its place after every page; the next run
// goes on from the last page instead of starting the window over.
func TestReconcileResumesFromLastPage(t *testing.T) {
	e := newEnv(t, "rec_resume", nil)
	now := time.Now().UTC().Truncate(time.Second)
	tf := fakeapi.NewTypeform(t, "F3", fakeapi.MakeLeads(30, "r", now.Add(-5*time.Hour), time.Minute))
	src := e.createSource(t, map[string]any{"slug": "tf", "name": "TF", "kind": "typeform",
		"reconcile": map[string]any{"base_url": tf.URL, "access_token": "x", "form_id": "F3", "lookback_seconds": 86400}})
	e.markReconciledBefore(t, src.ID)
	e.svc.PageSize = 10
	e.svc.MaxPages = 2 // the run is cut off after two pages
	first := e.runNow(t, src.ID)
	if first.State != reconcile.StateFailed || first.Pages != 2 || first.Records != 20 || first.PageCursor == "" {
		t.Fatalf("first run: %+v", first)
	}
	before := len(tf.RequestURIs())
	e.svc.MaxPages = 0
	second := e.runNow(t, src.ID)
	if second.State != reconcile.StateSucceeded || second.Records != 10 || second.PageCursor != "" {
		t.Fatalf("second run: %+v (want only the last 10 records)", second)
	}
	uris := tf.RequestURIs()[before:]
	if len(uris) == 0 || !strings.Contains(uris[0], "before=") {
		t.Fatalf("the second run started over: %v", uris)
	}
	if c := e.count(t, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, src.ID); c != 30 {
		t.Fatalf("%d leads, want 30", c)
	}
	third := e.runNow(t, src.ID)
	if third.State != reconcile.StateSucceeded || third.New != 0 {
		t.Fatalf("third run: %+v", third)
	}
}
