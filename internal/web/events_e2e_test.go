package web_test

import (
	"bytes"
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
	"leadpipe/internal/webhooks/kinds"
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
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
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

// postStandard sends one signed `standard` delivery of record ref, its
// payload timestamped at, and fails the test unless it is accepted.
func postStandard(t *testing.T, e *apptest.Env, tenantSlug, secret, deliveryID, ref string, f kinds.Lead, at time.Time) {
	t.Helper()
	body := kinds.SampleBody(kinds.Standard, deliveryID, ref, f, at)
	h, body, err := kinds.Sign(kinds.Standard, nil, secret, deliveryID, body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/hooks/"+tenantSlug+"/web", bytes.NewReader(body))
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 && res.StatusCode != 202 {
		t.Fatalf("webhook %s: %d", deliveryID, res.StatusCode)
	}
}

// Webhook leads emit from the worker's batch transaction: lead.created for
// a new lead, lead.updated when a record changes sender-owned fields, and
// nothing for a duplicate, an unchanged or a stale record; only subscribed
// types; a tenant without endpoints writes no events at all.
func TestEventsFromWebhookLeads(t *testing.T) {
	e := apptest.New(t, "web_events_hooks", apptest.Options{RedisDB: apptest.RedisWeb, Worker: true})
	a, b, c := e.Tenant("acme"), e.Tenant("bolt"), e.Tenant("cold")
	ra, rb := newVerifyingReceiver(t), newVerifyingReceiver(t)
	ra.subscribe(t, e, a.Token, events.LeadCreated, events.LeadUpdated)
	rb.subscribe(t, e, b.Token, events.LeadCreated)
	secrets := map[string]string{}
	for _, tn := range []apptest.Tenant{a, b, c} {
		_, secret := e.Source(tn.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: kinds.Standard})
		secrets[tn.Slug] = secret
	}
	now := time.Now()
	ada := kinds.Lead{Name: "Ada Lovelace", Email: "ada@example.com"}
	postStandard(t, e, "acme", secrets["acme"], "d1", "r1", ada, now)
	apptest.Eventually(t, 20*time.Second, "lead.created", func() bool { return len(ra.envelopes()) >= 1 })
	postStandard(t, e, "acme", secrets["acme"], "d1", "r1", ada, now) // a duplicate
	moved := kinds.Lead{Name: "Ada Lovelace", Email: "ada@new.example.com"}
	postStandard(t, e, "acme", secrets["acme"], "d2", "r1", moved, now.Add(time.Second))
	postStandard(t, e, "acme", secrets["acme"], "d3", "r1", kinds.Lead{Name: "Ada", Email: "old@example.com"}, now.Add(-time.Hour)) // stale
	postStandard(t, e, "acme", secrets["acme"], "d4", "r1", moved, now.Add(time.Second))                                            // the same record again
	for _, tn := range []string{"bolt", "cold"} {
		postStandard(t, e, tn, secrets[tn], "d1", "r1", ada, now)
		postStandard(t, e, tn, secrets[tn], "d2", "r1", moved, now.Add(time.Second))
	}
	apptest.Eventually(t, 20*time.Second, "lead.updated", func() bool { return len(ra.envelopes()) >= 2 })
	// Tenant B's deliveries may be processed in a later batch than A's, and
	// its event relayed after A's: wait for it before "nothing more".
	apptest.Eventually(t, 20*time.Second, "tenant B's lead.created", func() bool { return len(rb.envelopes()) >= 1 })
	apptest.Eventually(t, 20*time.Second, "every delivery processed", func() bool {
		var n int
		_ = e.App.DB.Get(&n, `SELECT COUNT(*) FROM deliveries WHERE state = 'received'`)
		return n == 0
	})
	time.Sleep(500 * time.Millisecond) // nothing more should come

	got := ra.envelopes()
	if len(got) != 2 || got[0].Type != events.LeadCreated || got[1].Type != events.LeadUpdated {
		t.Fatalf("tenant A got %v, want lead.created then lead.updated", envTypes(got))
	}
	var first, second struct{ ID, Email string }
	_ = json.Unmarshal(got[0].Data, &first)
	_ = json.Unmarshal(got[1].Data, &second)
	if first.Email != "ada@example.com" || second.Email != "ada@new.example.com" || first.ID != second.ID ||
		got[0].Sequence != 1 || got[1].Sequence != 2 {
		t.Fatalf("events: %+v (seq %d) then %+v (seq %d)", first, got[0].Sequence, second, got[1].Sequence)
	}
	if gb := rb.envelopes(); len(gb) != 1 || gb[0].Type != events.LeadCreated {
		t.Fatalf("tenant B (lead.created only) got %v", envTypes(gb))
	}
	var n int
	if err := e.App.DB.Get(&n, `SELECT COUNT(*) FROM events WHERE tenant_id = ?`, c.ID); err != nil || n != 0 {
		t.Fatalf("tenant without endpoints: %d events (%v)", n, err)
	}
}

func envTypes(envs []events.Envelope) []string {
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = e.Type
	}
	return out
}
