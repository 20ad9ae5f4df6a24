// Package apptest starts the whole application for integration tests: a
// fresh MariaDB database, a Redis database number of the test package's
// own (so parallel packages never consume each other's tasks), and an
// httptest server with the real routes.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/jobs"
	"leadpipe/internal/tenants"
)

// Redis database numbers per test package (0 is the developer's demo).
const (
	RedisWeb = iota + 1
	RedisWebhooks
	RedisLeads
	RedisIdempotency
	RedisReconcile
	RedisMonitor
	RedisUI
	RedisServer
	RedisBench
	RedisJobs
	RedisApp
	RedisTracing
	RedisRetention
	// RedisSecond is for a second app a test opens while its first still
	// runs (apptest.New flushes its Redis database, which would take the
	// first one's queues and its claim on the database). 14 is
	// cmd/benchingest's default.
	RedisSecond = 15
)

// Options tune an Env.
type Options struct {
	RedisDB      int
	Worker       bool // run the Asynq worker and scheduler in the test
	Env          map[string]string
	PasswordCost int

	WorkerConcurrency int // the worker's task concurrency (default 8; cmd/worker's is 64)
	// Now is the clock every service is built with (nil: time.Now).
	Now func() time.Time
}

// Env is a running application.
type Env struct {
	T      testing.TB
	App    *app.App
	Server *httptest.Server
	URL    string
	DSN    string
	cancel context.CancelFunc
	done   chan struct{}
}

// RedisAddr is the test Redis.
func RedisAddr() string {
	if v := os.Getenv("LEADPIPE_TEST_REDIS_ADDR"); v != "" {
		return v
	}
	return "127.0.0.1:6379"
}

// Config returns a test configuration.
func Config(t testing.TB, dsn string, o Options) *config.Config {
	env := map[string]string{
		"LEADPIPE_MYSQL_DSN":             dsn,
		"LEADPIPE_REDIS_ADDR":            RedisAddr(),
		"LEADPIPE_REDIS_DB":              itoa(o.RedisDB),
		"LEADPIPE_ADMIN_TOKEN":           "test-admin-token-0123456789",
		"LEADPIPE_SECRET_KEY":            "dGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXktMzJieXQ=",
		"LEADPIPE_ALLOW_PRIVATE_TARGETS": "true",
		"LEADPIPE_LOG_LEVEL":             "warn",
		"LEADPIPE_SWEEP_AFTER":           "1s",
	}
	for k, v := range o.Env {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("apptest: config: %v", err)
	}
	return cfg
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// New starts the application on a fresh database.
func New(t testing.TB, prefix string, o Options) *Env {
	t.Helper()
	_, dsn := dbtest.New(t, prefix)
	cfg := Config(t, dsn, o)
	flushRedis(t, cfg)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	var opts []app.Option
	if o.Now != nil {
		opts = append(opts, app.WithClock(o.Now))
	}
	a, err := app.Open(ctx, cfg, log, opts...)
	if err != nil {
		cancel()
		t.Fatalf("apptest: open app: %v", err)
	}
	a.Tenants.PasswordCost = 4
	if o.PasswordCost > 0 {
		a.Tenants.PasswordCost = o.PasswordCost
	}
	e := &Env{T: t, App: a, DSN: dsn, cancel: cancel, done: make(chan struct{})}
	e.Server = httptest.NewServer(a.Handler())
	cfg.BaseURL = e.Server.URL
	a.Sources.BaseURL = e.Server.URL
	e.URL = e.Server.URL
	if o.Worker {
		conc := o.WorkerConcurrency
		if conc <= 0 {
			conc = 8
		}
		go func() { defer close(e.done); _ = a.RunWorker(ctx, conc) }()
	} else {
		close(e.done)
	}
	t.Cleanup(func() {
		e.Server.Close()
		cancel()
		<-e.done
		a.Shutdown(context.Background())
		a.Close()
	})
	return e
}

func flushRedis(t testing.TB, cfg *config.Config) {
	c := jobs.NewRedisClient(jobs.RedisConnOpt(cfg.Redis))
	defer c.Close()
	if err := jobs.FlushAll(context.Background(), c); err != nil {
		t.Fatalf("apptest: Redis at %s: %v (is redis-server running?)", cfg.Redis, err)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Tenant is a provisioned tenant with its API token and admin user.
type Tenant struct {
	ID, Slug, Token string
	Admin           tenants.User
	AdminPassword   string
}

// Tenant provisions a tenant through the service.
func (e *Env) Tenant(slug string) Tenant {
	e.T.Helper()
	pw := "password-" + slug + "-123"
	p, err := e.App.Tenants.Provision(context.Background(), tenants.ProvisionInput{Slug: slug, Name: strings.ToUpper(slug),
		AdminEmail: "admin@" + slug + ".test", AdminPassword: pw, AdminName: "Admin " + slug})
	if err != nil {
		e.T.Fatalf("apptest: provision %s: %v", slug, err)
	}
	return Tenant{ID: p.Tenant.ID, Slug: slug, Token: p.APIToken, Admin: p.Admin, AdminPassword: pw}
}

// Response is a read HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v (failing the test on error).
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Do sends a request with an optional bearer token and JSON body.
func (e *Env) Do(method, path, token string, body any, headers ...string) Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return Send(e.T, http.DefaultClient, req, headers...)
}

// Send sets the header pairs on req, sends it with c and reads the
// answer, failing the test if it cannot be sent.
func Send(t testing.TB, c *http.Client, req *http.Request, headers ...string) Response {
	t.Helper()
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// Eventually polls cond until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// Clock is a clock a test gives the app (Options.Now: clock.Now): the
// wall clock until Set stops it at a time.
type Clock struct{ at atomic.Pointer[time.Time] }

// Now is the set time, or the wall clock's.
func (c *Clock) Now() time.Time {
	if t := c.at.Load(); t != nil {
		return *t
	}
	return time.Now()
}

// Set stops the clock at t.
func (c *Clock) Set(t time.Time) { c.at.Store(&t) }

// Replica starts a second server of the same installation: the same
// database and Redis database (not flushed), its own process state, as
// a second replica behind a balancer is. Stopped with the test.
func (e *Env) Replica(t testing.TB, o Options) *Env {
	t.Helper()
	cfg := Config(t, e.DSN, o)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatalf("apptest: open replica: %v", err)
	}
	r := &Env{T: t, App: a, DSN: e.DSN, cancel: cancel, done: make(chan struct{})}
	r.Server = httptest.NewServer(a.Handler())
	cfg.BaseURL = r.Server.URL
	a.Sources.BaseURL = r.Server.URL
	r.URL = r.Server.URL
	close(r.done)
	t.Cleanup(func() {
		r.Server.Close()
		cancel()
		a.Shutdown(context.Background())
		a.Close()
	})
	return r
}
