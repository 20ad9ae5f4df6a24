package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/apptest"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
	"leadpipe/internal/web"
	"leadpipe/internal/webhooks"
)

// rig is a server whose only route creates a lead through the real
// leads service, behind the real middleware and store, on the real
// database. A test's hook runs inside the write's transaction, after the
// lead is written and before the key completes: where a crash, a failure
// or a stall hurts most.
type rig struct {
	t      *testing.T
	e      *apptest.Env
	store  *idempotency.Store
	url    string
	tenant string
	hook   atomic.Pointer[func(l leads.Lead) error]
}

func newRig(t *testing.T) *rig {
	e := apptest.New(t, "idem", apptest.Options{RedisDB: apptest.RedisIdempotency})
	r := &rig{t: t, e: e, store: idempotency.NewStore(e.App.DB, time.Hour, e.App.Tenants.ForEach, nil, nil), tenant: e.Tenant("idem-a").ID}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := web.NewIdempotent(r.store, log)
	svc := leads.NewService(e.App.DB, webhooks.NewReads(e.App.DB), nil)
	h := m.Wrap(func(ctx context.Context, req *http.Request, body []byte, key *idempotency.Key) (idempotency.Response, error) {
		in, err := leads.ParseCreate(body)
		if err != nil {
			return idempotency.Response{}, err
		}
		respond := func(l leads.Lead) (idempotency.Response, error) {
			if hook := r.hook.Load(); hook != nil {
				if err := (*hook)(l); err != nil {
					return idempotency.Response{}, err
				}
			}
			h := http.Header{}
			h.Set("Location", "/api/v1/leads/"+l.ID)
			h.Set("Content-Type", "application/json")
			return idempotency.Response{Status: 201, Header: h, Body: []byte(`{"id":"` + l.ID + `"}`)}, nil
		}
		l, err := svc.Create(ctx, req.Header.Get("X-Tenant"), tenants.Principal{Name: "test"}, in,
			idempotency.Once[leads.Lead]{Key: key, Respond: respond})
		if err != nil {
			return idempotency.Response{}, err
		}
		return respond(l)
	})
	// The acting tenant is the X-Tenant header's (no token to look up).
	asTenant := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h(w, req.WithContext(web.WithPrincipal(req.Context(), tenants.Principal{TenantID: req.Header.Get("X-Tenant")})))
	})
	srv := httptest.NewServer(web.RequestLog(log)(asTenant)) // RequestLog turns a panic into a 500
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// use sets the hook run inside the write's transaction (nil: none).
func (r *rig) use(hook func(l leads.Lead) error) {
	if hook == nil {
		r.hook.Store(nil)
		return
	}
	r.hook.Store(&hook)
}

type resp struct {
	status int
	header http.Header
	body   string
}

func (r *rig) post(tenant, key, body string) resp {
	r.t.Helper()
	req, _ := http.NewRequest("POST", r.url+"/api/v1/leads", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", tenant)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, string(b)}
}

func (r *rig) leads(tenant string) int {
	r.t.Helper()
	var n int
	if err := r.e.App.DB.Get(&n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, tenant); err != nil {
		r.t.Fatal(err)
	}
	return n
}

const body = `{"name":"Ada Lovelace","email":"ada@example.test"}`

func TestCrashAfterClaimIsReclaimedAfterLockDeadline(t *testing.T) {
	r := newRig(t)
	r.store.SetLockTimeout(700 * time.Millisecond)
	// The handler writes the lead, then the process "crashes" before commit.
	r.use(func(leads.Lead) error {
		panic("simulated crash between the business write and commit")
	})
	if got := r.post(r.tenant, "crash-1", body); got.status != 500 {
		t.Fatalf("crashing request: %d %s", got.status, got.body)
	}
	if n := r.leads(r.tenant); n != 0 {
		t.Fatalf("the crashed request left %d leads", n)
	}
	r.use(nil)
	// Before the lock deadline the claim is still held: 409 with Retry-After.
	got := r.post(r.tenant, "crash-1", body)
	if got.status != 409 || got.header.Get("Retry-After") == "" {
		t.Fatalf("retry before the lock deadline: %d %q %s", got.status, got.header.Get("Retry-After"), got.body)
	}
	time.Sleep(800 * time.Millisecond)
	first := r.post(r.tenant, "crash-1", body)
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after the lock deadline: %d %v %s", first.status, first.header, first.body)
	}
	again := r.post(r.tenant, "crash-1", body)
	if again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" ||
		again.header.Get("Location") != first.header.Get("Location") {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.body)
	}
	if n := r.leads(r.tenant); n != 1 {
		t.Fatalf("%d leads, want exactly 1", n)
	}
}

func TestOutcomes(t *testing.T) {
	r := newRig(t)

	t.Run("5xx is not stored: the client may retry", func(t *testing.T) {
		r.use(func(leads.Lead) error { return apperr.New(apperr.Unavailable, "downstream is down") })
		if got := r.post(r.tenant, "k-5xx", body); got.status != 503 {
			t.Fatalf("%d %s", got.status, got.body)
		}
		if n := r.leads(r.tenant); n != 0 {
			t.Fatalf("the failed request left %d leads", n)
		}
		r.use(nil)
		if got := r.post(r.tenant, "k-5xx", body); got.status != 201 || got.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry after a 5xx: %d %s", got.status, got.body)
		}
	})

	t.Run("422 is not stored: the fixed body runs under the same key", func(t *testing.T) {
		bad := `{"email":"not-an-email"}`
		for range 2 {
			got := r.post(r.tenant, "k-422", bad)
			if got.status != 422 || !strings.Contains(got.body, `"email"`) || got.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%d %v %s", got.status, got.header, got.body)
			}
		}
		fixed := r.post(r.tenant, "k-422", `{"email":"ada@example.test"}`)
		if fixed.status != 201 || fixed.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("fixed body under the same key: %d %s", fixed.status, fixed.body)
		}
		if again := r.post(r.tenant, "k-422", `{"email":"ada@example.test"}`); again.body != fixed.body ||
			again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay of the fixed body: %d %s", again.status, again.body)
		}
	})

	t.Run("other 4xx are stored and replayed", func(t *testing.T) {
		r.use(func(leads.Lead) error { return apperr.New(apperr.NotFound, "owner not found") })
		first := r.post(r.tenant, "k-404", body)
		r.use(nil)
		if first.status != 404 {
			t.Fatalf("%d %s", first.status, first.body)
		}
		again := r.post(r.tenant, "k-404", body)
		if again.status != 404 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" ||
			again.header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("replayed 404: %d %v %s", again.status, again.header, again.body)
		}
	})

	t.Run("key validation happens before claiming", func(t *testing.T) {
		if got := r.post(r.tenant, "", body); got.status != 400 {
			t.Fatalf("missing key: %d", got.status)
		}
		if got := r.post(r.tenant, strings.Repeat("x", 256), body); got.status != 400 {
			t.Fatalf("long key: %d", got.status)
		}
		if got := r.post(r.tenant, "k-badjson", `{"name":`); got.status != 400 {
			t.Fatalf("malformed JSON: %d", got.status)
		}
		// The malformed request claimed nothing: the key still works.
		if got := r.post(r.tenant, "k-badjson", body); got.status != 201 {
			t.Fatalf("key after a 400: %d %s", got.status, got.body)
		}
	})

	t.Run("quoted and bare forms are the same key", func(t *testing.T) {
		first := r.post(r.tenant, "k-quoted", body)
		again := r.post(r.tenant, `"k-quoted"`, body)
		if first.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.body != first.body {
			t.Fatalf("%d / %d %v", first.status, again.status, again.header)
		}
	})

	t.Run("body canonicalised: key order and spaces do not matter, values do", func(t *testing.T) {
		first := r.post(r.tenant, "k-canon", `{"name":"Bo","email":"bo@example.test"}`)
		again := r.post(r.tenant, "k-canon", "{ \"email\" : \"bo@example.test\",\n \"name\":\"Bo\" }")
		if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%d / %d", first.status, again.status)
		}
		if got := r.post(r.tenant, "k-canon", `{"name":"Bo2","email":"bo@example.test"}`); got.status != 422 ||
			!strings.Contains(got.body, "Idempotency-Key") {
			t.Fatalf("changed body: %d %s", got.status, got.body)
		}
	})

	t.Run("expired key is new", func(t *testing.T) {
		first := r.post(r.tenant, "k-exp", body)
		r.store.SetClock(func() time.Time { return time.Now().Add(2 * time.Hour) })
		defer r.store.SetClock(nil)
		again := r.post(r.tenant, "k-exp", `{"name":"Someone else"}`) // even another body: the old use is gone
		if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replayed") != "" || again.body == first.body {
			t.Fatalf("%d %s / %d %s", first.status, first.body, again.status, again.body)
		}
	})
}

// A request slower than its lock deadline loses the claim to a retry and
// rolls back: exactly one lead, the retry's.
func TestSlowOriginalLosesToRetry(t *testing.T) {
	r := newRig(t)
	r.store.SetLockTimeout(300 * time.Millisecond)
	release := make(chan struct{})
	var calls atomic.Int32
	r.use(func(leads.Lead) error {
		if calls.Add(1) == 1 {
			<-release // the original stalls after its write
		}
		return nil
	})
	var wg sync.WaitGroup
	var slow resp
	wg.Add(1)
	go func() { defer wg.Done(); slow = r.post(r.tenant, "k-slow", body) }()
	time.Sleep(450 * time.Millisecond)
	retry := r.post(r.tenant, "k-slow", body)
	close(release)
	wg.Wait()
	if retry.status != 201 {
		t.Fatalf("retry: %d %s", retry.status, retry.body)
	}
	if slow.status != 409 {
		t.Fatalf("superseded original: %d %s", slow.status, slow.body)
	}
	if n := r.leads(r.tenant); n != 1 {
		t.Fatalf("%d leads, want 1", n)
	}
	if again := r.post(r.tenant, "k-slow", body); again.body != retry.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after takeover: %d %s", again.status, again.body)
	}
}

func TestPurge(t *testing.T) {
	r := newRig(t)
	other := r.e.Tenant("idem-b").ID
	for i, tn := range []string{r.tenant, other} {
		for j := 0; j < 3; j++ {
			if got := r.post(tn, "purge-"+string(rune('a'+i))+string(rune('0'+j)), body); got.status != 201 {
				t.Fatal(got.status, got.body)
			}
		}
	}
	// A claim still in progress (lock held) survives a purge even when old.
	ctx := context.Background()
	_, err := r.e.App.DB.ExecContext(ctx, `INSERT INTO idempotency_keys (tenant_id, idem_key, fingerprint, state, lock_token,
		locked_until, created_at, expires_at) VALUES (?, 'held', ?, 'in_progress', 'T', ?, ?, ?)`,
		r.tenant, bytes.Repeat([]byte{1}, 32), time.Now().Add(10*time.Hour), time.Now(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.store.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("nothing expired yet: purged %d, %v", n, err)
	}
	r.store.SetClock(func() time.Time { return time.Now().Add(3 * time.Hour) })
	n, err := r.store.Purge(ctx)
	if err != nil || n != 6 {
		t.Fatalf("purged %d, %v; want 6", n, err)
	}
	var left []string
	_ = r.e.App.DB.Select(&left, `SELECT idem_key FROM idempotency_keys`)
	if len(left) != 1 || left[0] != "held" {
		t.Fatalf("left %v", left)
	}
	// The periodic task is registered.
	found := false
	for _, p := range r.e.App.Jobs.Periodics() {
		found = found || p.Type == idempotency.TypePurge
	}
	if !found {
		t.Fatal("idempotency:purge is not scheduled")
	}
}

// A replay is one primary-key read: no claim, no write, no second query.
func TestReplayIsOnePrimaryKeyRead(t *testing.T) {
	r := newRig(t)
	if got := r.post(r.tenant, "k-cost", body); got.status != 201 {
		t.Fatal(got.status, got.body)
	}
	// One connection, so session counters see every statement of Begin.
	d, err := sqlx.Open("mysql", r.e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetMaxOpenConns(1)
	store := idempotency.NewStore(d, time.Hour, nil, nil, nil)
	status := func() map[string]int {
		var rows []struct {
			Name  string `db:"Variable_name"`
			Value int    `db:"Value"`
		}
		if err := d.Select(&rows, `SHOW SESSION STATUS WHERE Variable_name IN
			('Com_select','Com_insert','Com_update','Com_delete','Handler_read_key','Handler_read_next','Handler_write','Handler_update')`); err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, row := range rows {
			m[row.Name] = row.Value
		}
		return m
	}
	diff := func(a, b map[string]int) map[string]int {
		out := map[string]int{}
		for k := range a {
			out[k] = b[k] - a[k]
		}
		return out
	}
	canon, _ := idempotency.Canonical([]byte(body))
	fp := idempotency.Fingerprint("POST", "/api/v1/leads", canon)
	s0 := status()
	s1 := status() // the cost of looking at the counters
	res, err := store.Begin(context.Background(), r.tenant, "k-cost", fp)
	s2 := status()
	if err != nil || res.Decision != idempotency.Replay {
		t.Fatalf("Begin: %+v %v", res, err)
	}
	base, got := diff(s0, s1), diff(s1, s2)
	for k := range got {
		got[k] -= base[k]
	}
	want := map[string]int{"Com_select": 1, "Com_insert": 0, "Com_update": 0, "Com_delete": 0,
		"Handler_read_key": 1, "Handler_read_next": 0, "Handler_write": 0, "Handler_update": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
