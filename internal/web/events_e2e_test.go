package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"leadpipe/internal/apptest"
	"leadpipe/internal/events"
	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
)

// verifyingReceiver checks every delivery with the Standard Webhooks
// reference library and keeps the envelopes.
type verifyingReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	got    []events.Envelope
	srv    *httptest.Server
}

func newVerifyingReceiver(t *testing.T) *verifyingReceiver {
	v := &verifyingReceiver{t: t}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v.mu.Lock()
		defer v.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(v.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			t.Errorf("delivery failed verification: %v", err)
			w.WriteHeader(400)
			return
		}
		var env events.Envelope
		if err := json.Unmarshal(body, &env); err != nil || env.ID != r.Header.Get("webhook-id") {
			t.Errorf("bad envelope %s (%v)", body, err)
		}
		v.got = append(v.got, env)
		w.WriteHeader(204)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *verifyingReceiver) envelopes() []events.Envelope {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]events.Envelope(nil), v.got...)
}

func (v *verifyingReceiver) subscribe(t *testing.T, e *apptest.Env, token string, types ...string) {
	res := e.Do("POST", "/api/v1/endpoints", token, map[string]any{"url": v.srv.URL, "events": types})
	if res.Status != 201 {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	var ep struct{ Secret string }
	res.JSON(t, &ep)
	v.mu.Lock()
	v.secret = ep.Secret
	v.mu.Unlock()
}

// The product paths emit in their own transactions and the worker's relay
// delivers: a manual lead (lead.created), a PATCH (lead.status_changed), an
// alert firing (alert.fired); only subscribed types, nothing across tenants,
// in sequence order per lead.
func TestEventsFromProductPaths(t *testing.T) {
	e := apptest.New(t, "web_events_e2e", apptest.Options{RedisDB: apptest.RedisWeb, Worker: true})
	a, b := e.Tenant("acme"), e.Tenant("bolt")
	ra, rb := newVerifyingReceiver(t), newVerifyingReceiver(t)
	ra.subscribe(t, e, a.Token, events.LeadCreated, events.LeadStatusChanged, events.AlertFired)
	rb.subscribe(t, e, b.Token, events.LeadCreated, events.LeadUpdated, events.LeadStatusChanged, events.AlertFired)

	res := e.Do("POST", "/api/v1/leads", a.Token, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"}, "Idempotency-Key", "lead-1")
	if res.Status != 201 {
		t.Fatalf("create lead: %d %s", res.Status, res.Body)
	}
	var lead struct {
		ID      string
		Version int
	}
	res.JSON(t, &lead)
	for i, st := range []string{"contacted", "qualified", "won"} {
		res := e.Do("PATCH", "/api/v1/leads/"+lead.ID, a.Token, map[string]any{"status": st}, "If-Match", `"`+strconv.Itoa(lead.Version+i)+`"`)
		if res.Status != 200 {
			t.Fatalf("patch %s: %d %s", st, res.Status, res.Body)
		}
	}
	// A PATCH that changes only tags emits no status event.
	if res := e.Do("PATCH", "/api/v1/leads/"+lead.ID, a.Token, map[string]any{"tags": []string{"vip"}}, "If-Match", "*"); res.Status != 200 {
		t.Fatalf("patch tags: %d %s", res.Status, res.Body)
	}

	// An alert fires: a dead letter counted in the last minute.
	ctx := context.Background()
	src, _, err := e.App.Sources.Create(ctx, a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	if err != nil {
		t.Fatal(err)
	}
	rec := e.App.Stats.(*monitor.Recorder)
	rec.Add(a.ID, src.ID, monitor.DeadLetters, 1, time.Now().Add(-time.Minute))
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Web.Monitor.EvaluateTenant(ctx, a.ID, time.Now()); err != nil {
		t.Fatal(err)
	}

	apptest.Eventually(t, 20*time.Second, "1 created + 3 status changes + 1 alert", func() bool { return len(ra.envelopes()) >= 5 })
	time.Sleep(500 * time.Millisecond) // nothing more should come
	got := ra.envelopes()
	if len(got) != 5 {
		t.Fatalf("tenant A got %d events, want 5", len(got))
	}
	var seqs []int64
	types := map[string]int{}
	for _, env := range got {
		types[env.Type]++
		if env.Type != events.AlertFired {
			if !strings.Contains(string(env.Data), lead.ID) {
				t.Fatalf("%s is not about the lead: %s", env.Type, env.Data)
			}
			seqs = append(seqs, env.Sequence)
		} else if !strings.Contains(string(env.Data), `"rule":"dead_letters"`) {
			t.Fatalf("alert.fired data: %s", env.Data)
		}
	}
	if types[events.LeadCreated] != 1 || types[events.LeadStatusChanged] != 3 || types[events.AlertFired] != 1 {
		t.Fatalf("types: %v", types)
	}
	// Sequence numbers of the lead: 1..4; sorted by them the statuses read in PATCH order.
	order := map[int64]string{}
	for _, env := range got {
		if env.Type == events.LeadStatusChanged {
			var l struct{ Status string }
			_ = json.Unmarshal(env.Data, &l)
			order[env.Sequence] = l.Status
		}
	}
	if order[2] != "contacted" || order[3] != "qualified" || order[4] != "won" || len(seqs) != 4 {
		t.Fatalf("status by sequence: %v (sequences %v)", order, seqs)
	}
	if n := len(rb.envelopes()); n != 0 {
		t.Fatalf("tenant B received %d of tenant A's events", n)
	}
}
