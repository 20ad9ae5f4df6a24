package events_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"leadpipe/internal/atrest"
	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
)

// redisDB is this package's own Redis database number (see apptest).
const redisDB = 11

func redisAddr() string {
	if v := os.Getenv("LEADPIPE_TEST_REDIS_ADDR"); v != "" {
		return v
	}
	return "127.0.0.1:6379"
}

// clock is the injectable clock: tests jump days ahead in no time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	t        testing.TB
	DB       *sqlx.DB
	DSN      string
	S        *events.Service
	Clock    *clock
	Tenants  []string
	Queue    *asynq.Client
	disabled []string // endpoint ids the endpoint_disabled alert was opened for
	mu       sync.Mutex
}

type envOpts struct {
	allowPrivate bool
	maxInFlight  int
	noWorker     bool
	concurrency  int
	wallClock    bool
}

func newEnv(t *testing.T, o envOpts) *env { return newEnvTB(t, o) }

func newEnvTB(t testing.TB, o envOpts) *env {
	t.Helper()
	d, dsn := dbtest.New(t, "events")
	box, err := atrest.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ropt := asynq.RedisClientOpt{Addr: redisAddr(), DB: redisDB}
	rc := redis.NewClient(&redis.Options{Addr: redisAddr(), DB: redisDB})
	if err := rc.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", redisAddr(), err)
	}
	rc.Close()
	q := asynq.NewClient(ropt)
	t.Cleanup(func() { q.Close() })
	e := &env{t: t, DB: d, DSN: dsn, Clock: &clock{t: time.Now().UTC().Truncate(time.Microsecond)}, Queue: q,
		Tenants: []string{ids.New(), ids.New()}}
	allow := o.allowPrivate
	e.S = &events.Service{DB: d, Box: box, Queue: q, Client: events.NewClient(allow),
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:         e.Clock.Now,
		Rand:        func() float64 { return 0.5 },
		MaxInFlight: o.maxInFlight,
		Tenants:     func(context.Context) ([]string, error) { return e.Tenants, nil },
	}
	e.S.Alerts = endpointAlerts{e}
	if allow {
		e.S.CheckURL = func(string) error { return nil }
	}
	if o.wallClock {
		e.S.Now = nil
		e.S.Rand = nil
	}
	if !o.noWorker {
		conc := o.concurrency
		if conc == 0 {
			conc = 16
		}
		// The production server (its task check interval matters here).
		srv := jobs.NewEventsServer(ropt, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})), conc, events.Queue)
		mux := asynq.NewServeMux()
		mux.HandleFunc(events.TypeDeliver, e.S.HandleDeliver)
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
	}
	return e
}

// emit writes one event in its own transaction, as a business change would.
func (e *env) emit(tenant, typ, resource string, data any) {
	e.t.Helper()
	err := db.InTx(context.Background(), e.DB, func(tx *sqlx.Tx) error {
		return e.S.Outbox().Emit(context.Background(), tx, tenant, events.Event{Type: typ, ResourceID: resource, Data: data})
	})
	if err != nil {
		e.t.Fatalf("emit: %v", err)
	}
}

// relay runs the relay and the sweeper once over every tenant.
func (e *env) relay() {
	e.t.Helper()
	ctx := context.Background()
	for _, tn := range e.Tenants {
		for {
			n, err := e.S.RelayTenant(ctx, tn, events.RelayBatch)
			if err != nil {
				e.t.Fatalf("relay: %v", err)
			}
			if n < events.RelayBatch {
				break
			}
		}
		if err := e.S.SweepTenant(ctx, tn); err != nil {
			e.t.Fatalf("sweep: %v", err)
		}
	}
}

// settle relays and waits until no delivery is queued or being sent.
func (e *env) settle() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		e.relay()
		var busy int
		if err := e.DB.Get(&busy, `SELECT COUNT(*) FROM event_deliveries WHERE tenant_id IN (?, ?) AND state IN ('queued', 'sending')`,
			e.Tenants[0], e.Tenants[1]); err != nil {
			e.t.Fatal(err)
		}
		var pending int
		if err := e.DB.Get(&pending, `SELECT COUNT(*) FROM events WHERE tenant_id IN (?, ?) AND pending = 1`, e.Tenants[0], e.Tenants[1]); err != nil {
			e.t.Fatal(err)
		}
		var due int
		if err := e.DB.Get(&due, `SELECT COUNT(*) FROM event_deliveries WHERE tenant_id IN (?, ?) AND state = 'pending' AND next_attempt_at <= ?`,
			e.Tenants[0], e.Tenants[1], e.Clock.Now()); err != nil {
			e.t.Fatal(err)
		}
		if busy == 0 && pending == 0 && due == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("deliveries did not settle within 30 s")
}

func (e *env) endpoint(tenant, url string, types ...string) events.Endpoint {
	e.t.Helper()
	ep, err := e.S.Create(context.Background(), tenant, events.CreateInput{URL: url, Events: types})
	if err != nil {
		e.t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

// envWithReceiver is an env that may deliver to loopback addresses and a
// receiver there.
func envWithReceiver(t *testing.T) (*env, *receiver) {
	t.Helper()
	return newEnv(t, envOpts{allowPrivate: true}), newReceiver(t)
}

// subscribe creates the first tenant's endpoint for lead.created at r,
// whose requests r verifies with the endpoint's secret.
func (e *env) subscribe(r *receiver) events.Endpoint {
	e.t.Helper()
	ep := e.endpoint(e.Tenants[0], r.URL(), events.LeadCreated)
	r.setSecrets(ep.Secret)
	return ep
}

// emitLead emits lead.created for a new lead of the first tenant and
// returns the lead's id.
func (e *env) emitLead() string {
	e.t.Helper()
	id := ids.New()
	e.emit(e.Tenants[0], events.LeadCreated, id, lead{ID: id})
	return id
}

func (e *env) delivery(tenant, endpointID, eventID string) events.DeliveryRow {
	e.t.Helper()
	v, err := e.S.Event(context.Background(), tenant, eventID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range v.Deliveries {
		if d.EndpointID == endpointID {
			return d
		}
	}
	e.t.Fatalf("no delivery of %s to %s", eventID, endpointID)
	return events.DeliveryRow{}
}

// received is one request a receiver got.
type received struct {
	ID       string
	Sig      string
	At       time.Time // the webhook-timestamp
	Envelope events.Envelope
	Verified bool
}

// receiver is a local endpoint that verifies every delivery with the
// Standard Webhooks reference library (not our code). answer decides the
// response to the n-th request (1-based).
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	got     []received
	answer  func(n int, w http.ResponseWriter)
	delay   time.Duration
}

// downUntil makes the receiver answer down until bringUp is called, then
// up.
func (r *receiver) downUntil(down, up int) (bringUp func()) {
	var isUp atomic.Bool
	r.answer = func(n int, w http.ResponseWriter) {
		if isUp.Load() {
			w.WriteHeader(up)
			return
		}
		w.WriteHeader(down)
	}
	return func() { isUp.Store(true) }
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) URL() string { return r.srv.URL + "/hook" }

func (r *receiver) setSecrets(s ...string) { r.mu.Lock(); r.secrets = s; r.mu.Unlock() }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	r.mu.Lock()
	secrets := r.secrets
	r.mu.Unlock()
	sec, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
	ts := time.Unix(sec, 0).UTC()
	verified := len(secrets) > 0
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			r.t.Errorf("receiver: secret: %v", err)
			verified = false
			continue
		}
		// The library checks the timestamp against the wall clock; the
		// tests that jump days ahead sign with their clock's time, so past
		// 5 minutes only the signature is checked (and the timestamp is
		// compared with the test clock by the test).
		if d := time.Since(ts); d < 5*time.Minute && d > -5*time.Minute {
			err = wh.Verify(body, req.Header)
		} else {
			err = wh.VerifyIgnoringTimestamp(body, req.Header)
		}
		if err != nil {
			verified = false
			r.t.Errorf("receiver: verification with one of the secrets failed: %v", err)
		}
	}
	var env events.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		r.t.Errorf("receiver: body is not an envelope: %v: %s", err, body)
	}
	r.mu.Lock()
	r.got = append(r.got, received{ID: req.Header.Get("webhook-id"), Sig: req.Header.Get("webhook-signature"), At: ts, Envelope: env, Verified: verified})
	n := len(r.got)
	answer := r.answer
	r.mu.Unlock()
	if answer != nil {
		answer(n, w)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) }

// jumpToNextDue moves the clock to the earliest pending retry if it is
// before limit, and reports whether it did.
func (e *env) jumpToNextDue(limit time.Time) bool {
	e.t.Helper()
	var next *time.Time
	if err := e.DB.Get(&next, `SELECT MIN(next_attempt_at) FROM event_deliveries WHERE tenant_id IN (?, ?) AND state = 'pending'`,
		e.Tenants[0], e.Tenants[1]); err != nil {
		e.t.Fatal(err)
	}
	if next == nil || next.After(limit) {
		return false
	}
	if d := next.Sub(e.Clock.Now()); d > 0 {
		e.Clock.Advance(d)
	}
	return true
}

// newBenchEnv is newEnv for benchmarks: wall clock, 64 delivery workers.
func newBenchEnv(b *testing.B) *env {
	return newEnvTB(b, envOpts{allowPrivate: true, concurrency: 64, wallClock: true})
}

// endpointAlerts records the endpoints whose endpoint_disabled alert opens.
type endpointAlerts struct{ e *env }

func (a endpointAlerts) OpenEndpointAlert(_ context.Context, _ db.Ext, _, endpointID string, _ map[string]any) error {
	a.e.mu.Lock()
	a.e.disabled = append(a.e.disabled, endpointID)
	a.e.mu.Unlock()
	return nil
}

func (endpointAlerts) ResolveEndpointAlert(context.Context, db.Ext, string, string) error { return nil }
