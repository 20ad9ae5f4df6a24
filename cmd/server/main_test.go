package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestDemoServeAndSend runs scripts/run.sh's path: `server demo`
// brings up the app with a demo tenant; `demo-send` posts signed
// deliveries of every kind; the worker turns them into leads; a second
// start on the same database is fine; SIGTERM-style cancel shuts down.
func TestDemoServeAndSend(t *testing.T) {
	dsn := dbtest.DSN(t, "server_demo")
	t.Cleanup(func() { _ = db.DropDatabase(context.Background(), dsn) })
	addr := freeAddr(t)
	env := map[string]string{
		"LEADPIPE_ADDR":       addr,
		"LEADPIPE_BASE_URL":   "http://" + addr,
		"LEADPIPE_MYSQL_DSN":  dsn,
		"LEADPIPE_REDIS_ADDR": apptest.RedisAddr(),
		"LEADPIPE_REDIS_DB":   fmt.Sprint(apptest.RedisServer),
		"LEADPIPE_LOG_LEVEL":  "warn",
	}
	getenv := func(k string) string { return env[k] }
	t.Cleanup(func() { runtime.SetDefaultGOMAXPROCS() }) // serving set LEADPIPE_PROCS's default, shared, for this process
	for round := 0; round < 2; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		var out, logs syncBuf
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"demo"}, getenv, &out, &logs) }()
		waitReady(t, "http://"+addr, done)
		for i := 0; i < 1200 && !strings.Contains(out.String(), "Leadpipe demo is running"); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(out.String(), "Leadpipe demo is running") {
			t.Fatalf("no demo banner; output:\n%s\nlogs:\n%s", out.String(), logs.String())
		}
		for _, want := range []string{demoAdminEmail, demoStaffEmail, "/login", "/hooks/demo/typeform", "API token: lp_",
			"secret leadpipe-demo-typeform", "curl -s http://" + addr + "/hooks/demo/google-ads",
			"demo-send -n 60 -dup 0.1 -url http://" + addr, "a stand-in: Facebook leads get their names"} {
			if !strings.Contains(out.String(), want) {
				t.Fatalf("demo output lacks %q:\n%s", want, out.String())
			}
		}
		if round == 0 {
			var sendOut syncBuf
			if err := run(context.Background(), []string{"demo-send", "-n", "24", "-dup", "0.5", "-c", "4"}, getenv, &sendOut, &logs); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sendOut.String(), "error") || strings.Contains(sendOut.String(), " 4") && !strings.Contains(sendOut.String(), "200") {
				t.Fatalf("demo-send:\n%s", sendOut.String())
			}
			if !strings.Contains(sendOut.String(), "200 accepted") {
				t.Fatalf("demo-send got no acceptance:\n%s", sendOut.String())
			}
			d, err := db.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			apptest.Eventually(t, 20*time.Second, "24 leads", func() bool {
				var n int
				_ = d.Get(&n, `SELECT COUNT(*) FROM leads`)
				return n == 24
			})
			// Meta's webhooks carry only ids: the names come from the
			// stand-in Graph API through enrichment.
			apptest.Eventually(t, 20*time.Second, "every lead named, Facebook's too", func() bool {
				var n int
				// (LinkedIn's webhook carries the lead's id only, and one
				// HubSpot propertyChange one property: the email.)
				_ = d.Get(&n, `SELECT COUNT(*) FROM leads l JOIN sources s ON s.tenant_id = l.tenant_id AND s.id = l.source_id
					WHERE l.name = '' AND s.kind NOT IN ('linkedin', 'hubspot')`)
				return n == 0
			})
			d.Close()
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run returned %v; logs:\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("server did not shut down")
		}
		if t.Failed() {
			t.Log(logs.String())
		}
	}
}

func waitReady(t *testing.T, base string, done chan error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("server exited early: %v", err)
		default:
		}
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("server never became ready")
}

func TestBadConfigFailsStart(t *testing.T) {
	var out, logs syncBuf
	err := run(context.Background(), []string{"serve"}, func(k string) string {
		if k == "LEADPIPE_WORKER" {
			return "sometimes"
		}
		return ""
	}, &out, &logs)
	if err == nil || !strings.Contains(err.Error(), "LEADPIPE_WORKER") {
		t.Fatalf("got %v", err)
	}
}

// In demo mode the per-request lines go to debug: at the default level they
// are dropped (the banner stays on screen), at debug they show as debug.
func TestQuietRequests(t *testing.T) {
	for _, c := range []struct {
		level slog.Level
		want  string
	}{{slog.LevelInfo, "msg=ready\n"}, {slog.LevelDebug, "level=DEBUG msg=http a=1 path=/x\nlevel=INFO msg=ready\n"}} {
		var b strings.Builder
		h := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: c.level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || (a.Key == slog.LevelKey && c.level == slog.LevelInfo) {
				return slog.Attr{}
			}
			return a
		}})
		log := slog.New(quietRequests{h}).With("a", 1)
		log.Info("http", "path", "/x")
		log.Info("ready")
		got := strings.ReplaceAll(b.String(), " a=1\n", "\n")
		if got != c.want {
			t.Errorf("at %v: %q, want %q", c.level, got, c.want)
		}
	}
}
