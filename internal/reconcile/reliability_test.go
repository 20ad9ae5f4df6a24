package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/outbound"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/webhooks/kinds"
)

// run triggers a manual run and performs it synchronously with svc.
func (e *env) run(t *testing.T, svc *reconcile.Service, sourceID string) (reconcile.Run, time.Duration) {
	t.Helper()
	ctx := context.Background()
	id, err := svc.Trigger(ctx, e.ten.ID, sourceID)
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	start := time.Now()
	r, err := svc.RunNow(ctx, e.ten.ID, id)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r, time.Since(start)
}

func lastError(r reconcile.Run) string {
	if r.LastError == nil {
		return ""
	}
	return *r.LastError
}

// testFlakySenderAPI: 429 with Retry-After: 2 and then 503 twice — the run
// waits and completes; an endpoint that hangs is cut off by the timeout and
// the run records the error; nothing is half-done: the cursor only moves
// after a complete run, and the access token never reaches a run record.
func testFlakySenderAPI(t *testing.T, e *env) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	leads := fakeapi.MakeLeads(150, "ff", now.Add(-time.Hour), 10*time.Second)
	f := fakeapi.NewTypeform(t, "F1", leads)
	f.RequireToken("secret-token-123")
	src := e.createSource(t, map[string]any{"slug": "tf", "name": "TF", "kind": "typeform",
		"reconcile": map[string]any{"base_url": f.URL, "access_token": "secret-token-123", "form_id": "F1", "lookback_seconds": 600}})

	t.Run("429 Retry-After then 503 twice", func(t *testing.T) {
		f.FailNext(429, 503, 503)
		before := f.Requests()
		svc := *e.svc // short jittered backoffs after the 503s; Retry-After still says 2 s
		svc.Client = outbound.New(outbound.Options{AllowPrivate: true, BaseBackoff: 50 * time.Millisecond})
		r, took := e.run(t, &svc, src.ID)
		if r.State != reconcile.StateSucceeded || r.Records != 150 || r.New != 150 || r.Errors != 0 {
			t.Fatalf("run: %+v %s", r, lastError(r))
		}
		if took < 2*time.Second {
			t.Fatalf("run took %s; Retry-After: 2 was not honoured", took)
		}
		// 3 refused attempts + pages of 100, 50 and the empty last page.
		if n := f.Requests() - before; n != 6 {
			t.Fatalf("%d requests, want 6", n)
		}
		t.Logf("run: %d pages, %d records, %s", r.Pages, r.Records, took.Round(time.Millisecond))
	})

	t.Run("cursor with look-back", func(t *testing.T) {
		src0, err := e.App.Sources.Get(ctx, e.ten.ID, src.ID)
		if err != nil {
			t.Fatal(err)
		}
		newest := leads[len(leads)-1].Created
		if src0.ReconcileCursor == nil || !src0.ReconcileCursor.Equal(newest) {
			t.Fatalf("cursor %v, want the newest record %v", src0.ReconcileCursor, newest)
		}
		before := len(f.RequestURIs())
		r, _ := e.run(t, e.svc, src.ID)
		// since = cursor − 600 s: the last 61 leads (10 s apart) again, all known.
		if r.State != reconcile.StateSucceeded || r.New != 0 || r.Known != 61 {
			t.Fatalf("run: %+v", r)
		}
		u, _ := url.Parse(f.RequestURIs()[before])
		if got, want := u.Query().Get("since"), newest.Add(-600*time.Second).Format("2006-01-02T15:04:05"); got != want {
			t.Fatalf("since=%s, want %s", got, want)
		}
	})

	t.Run("hanging endpoint is cut off by the read timeout", func(t *testing.T) {
		f.Hang(time.Minute)
		defer f.Hang(0)
		svc := *e.svc
		svc.Client = outbound.New(outbound.Options{AllowPrivate: true, ReadTimeout: 300 * time.Millisecond, MaxAttempts: 2, BaseBackoff: 10 * time.Millisecond})
		cursor := e.cursor(t, src.ID)
		r, took := e.run(t, &svc, src.ID)
		if r.State != reconcile.StateFailed || r.FinishedAt == nil || r.Errors != 1 || !strings.Contains(lastError(r), "timeout awaiting response headers") {
			t.Fatalf("run: %+v %q", r, lastError(r))
		}
		if took > 5*time.Second {
			t.Fatalf("run took %s", took)
		}
		if c := e.cursor(t, src.ID); !c.Equal(cursor) {
			t.Fatalf("a failed run moved the cursor: %v → %v", cursor, c)
		}
		t.Logf("last_error: %s", lastError(r))
	})

	t.Run("hanging endpoint is cut off by the run deadline", func(t *testing.T) {
		f.Hang(time.Minute)
		defer f.Hang(0)
		svc := *e.svc
		svc.RunTimeout = 700 * time.Millisecond // the client's own read timeout is 15 s
		r, took := e.run(t, &svc, src.ID)
		if r.State != reconcile.StateFailed || !strings.Contains(lastError(r), "run deadline of 700ms exceeded") {
			t.Fatalf("run: %+v %q", r, lastError(r))
		}
		if took > 5*time.Second {
			t.Fatalf("run took %s", took)
		}
	})

	t.Run("errors never carry the access token", func(t *testing.T) {
		g := fakeapi.NewMeta(t, "55", nil)
		g.FailNext(400, 400, 400, 400)
		msrc := e.createSource(t, map[string]any{"slug": "fb", "name": "FB", "kind": "meta",
			"reconcile": map[string]any{"base_url": g.URL, "access_token": "EAAB-very-secret", "form_id": "55"}})
		r, _ := e.run(t, e.svc, msrc.ID)
		if r.State != reconcile.StateFailed || !strings.Contains(lastError(r), "HTTP 400") || strings.Contains(lastError(r), "EAAB-very-secret") {
			t.Fatalf("run: %+v %q", r, lastError(r))
		}
		if n := e.count(t, `SELECT COUNT(*) FROM reconcile_runs WHERE last_error LIKE '%very-secret%'`); n != 0 {
			t.Fatal("a run record holds the access token")
		}
	})
}

func (e *env) cursor(t *testing.T, sourceID string) time.Time {
	t.Helper()
	src, err := e.App.Sources.Get(context.Background(), e.ten.ID, sourceID)
	if err != nil || src.ReconcileCursor == nil {
		t.Fatalf("cursor: %v %v", err, src.ReconcileCursor)
	}
	return *src.ReconcileCursor
}

// testGeneric pulls a generic JSON list with cursor paging; a
// record that cannot be mapped counts as an error without failing the
// rest, and a changed known lead gets a timeline entry.
func testGeneric(t *testing.T, e *env) {
	var items []json.RawMessage
	for i := range 25 {
		items = append(items, genericItem(fmt.Sprintf("g%d", i), fmt.Sprintf("g%d@x.test", i)))
	}
	items = append(items, json.RawMessage(`{"lead":{"email":"no-id@x.test"}}`))
	f := fakeapi.NewGeneric(t, "/v1/leads", items)
	cfg := kinds.SampleConfig(kinds.Generic)
	src := e.createSource(t, map[string]any{"slug": "gen", "name": "Generic", "kind": "generic", "config": json.RawMessage(cfg),
		"reconcile": map[string]any{"base_url": f.URL, "list_path": "/v1/leads"}})
	svc := *e.svc
	svc.PageSize = 10

	r, _ := e.run(t, &svc, src.ID)
	if r.State != reconcile.StateSucceeded || r.Pages != 3 || r.Records != 26 || r.New != 25 || r.Errors != 1 ||
		!strings.Contains(lastError(r), "no natural key") {
		t.Fatalf("run: %+v %q", r, lastError(r))
	}

	// The sender corrects an email: the lead changes and its timeline says so.
	f2 := fakeapi.NewGeneric(t, "/v1/leads", []json.RawMessage{genericItem("g3", "new-g3@x.test")})
	if _, err := e.App.DB.Exec(`UPDATE sources SET reconcile_base_url = ? WHERE tenant_id = ? AND id = ?`, f2.URL, e.ten.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	r, _ = e.run(t, &svc, src.ID)
	if r.State != reconcile.StateSucceeded || r.Known != 1 || r.Changed != 1 {
		t.Fatalf("run: %+v", r)
	}
	var detail string
	if err := e.App.DB.Get(&detail, `SELECT ev.detail FROM lead_events ev JOIN leads l ON l.tenant_id = ev.tenant_id AND l.id = ev.lead_id
		WHERE ev.tenant_id = ? AND l.source_ref = 'g3' AND ev.kind = 'reconcile' ORDER BY ev.id DESC LIMIT 1`, e.ten.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, `"changed":["email"]`) || !strings.Contains(detail, r.ID) {
		t.Fatalf("timeline detail %s", detail)
	}
}

func genericItem(id, email string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"event": map[string]string{"id": "evt-" + id},
		"lead": map[string]string{"id": id, "email": email, "name": "Lead " + id}})
	return b
}

// testMetaEnrichment: the Graph lead fills the sender-owned fields of a
// lead its webhook created from the leadgen id alone; transient Graph
// errors are retried, permanent ones are not.
func testMetaEnrichment(t *testing.T, e *env) {
	ctx := context.Background()
	leads := fakeapi.MakeLeads(2, "8", time.Now().Add(-time.Hour), time.Minute)
	g := fakeapi.NewMeta(t, "66", leads)
	src := e.createSource(t, map[string]any{"slug": "fb", "name": "FB", "kind": "meta",
		"reconcile": map[string]any{"base_url": g.URL, "access_token": "tok-1234", "form_id": "66"}})
	full, err := e.App.Sources.Get(ctx, e.ten.ID, src.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reconcile.CanEnrich(full) {
		t.Fatal("meta source with token and base URL cannot enrich")
	}
	// The webhook's upsert: a lead with its leadgen id and no fields yet.
	hook := json.RawMessage(`{"leadgen_id":"` + leads[0].ID + `","form_id":"66","created_time":1700000000}`)
	tx := e.App.DB.MustBegin()
	res, err := e.svc.Apply(ctx, tx, e.ten.ID, full, hook, time.Now().UTC())
	if err != nil || !res.New || res.Lead.Email != "" {
		t.Fatalf("webhook upsert: %+v %v", res, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	g.FailNext(503, 503) // retried by the outbound client
	got, err := e.svc.Enrich(ctx, e.ten.ID, src.ID, leads[0].ID)
	if err != nil || got.New || got.LeadID != res.LeadID {
		t.Fatalf("enrich: %+v %v", got, err)
	}
	var row leadRow
	if err := e.App.DB.Get(&row, `SELECT id, source_ref, email, name, phone, company, status, version FROM leads WHERE tenant_id = ? AND id = ?`,
		e.ten.ID, res.LeadID); err != nil {
		t.Fatal(err)
	}
	if row.Email != leads[0].Email || row.Name != leads[0].Name || row.Phone != leads[0].Phone || row.Company != leads[0].Company {
		t.Fatalf("lead after enrichment: %+v", row)
	}

	// A lead Graph does not know (400) is not retried.
	_, err = e.svc.Enrich(ctx, e.ten.ID, src.ID, "123404")
	if !errors.Is(err, asynq.SkipRetry) || strings.Contains(err.Error(), "tok-1234") {
		t.Fatalf("unknown lead: %v", err)
	}
	// A Graph outage is retried by Asynq.
	g.FailNext(503, 503, 503, 503)
	if _, err = e.svc.Enrich(ctx, e.ten.ID, src.ID, leads[1].ID); err == nil || errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("outage: %v", err)
	}
}
