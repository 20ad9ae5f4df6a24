//go:build faults

package faults

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"leadpipe/internal/app"
	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestLinkedInChallengeWithMariaDBStopped: LinkedIn re-validates a webhook
// URL every 2 hours and blocks it after three failures, so a source the
// server has seen answers the challenge from memory while its private
// MariaDB is stopped (the shared one is never touched).
func TestLinkedInChallengeWithMariaDBStopped(t *testing.T) {
	m := startMariaDB(t)
	cfg := apptest.Config(t, m.dsn("leadpipe_linkedin"), apptest.Options{RedisDB: apptest.RedisJobs})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Tenants.PasswordCost = 4
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	e := &apptest.Env{T: t, App: a, Server: srv, URL: srv.URL}
	ten := e.Tenant("acme")
	src, secret, err := a.Sources.Create(ctx, ten.ID, sources.CreateInput{Slug: "linkedin", Name: "LinkedIn", Kind: kinds.LinkedIn})
	if err != nil {
		t.Fatal(err)
	}
	_ = src
	challenge := func(code string) (int, []byte) {
		c := http.Client{Timeout: 5 * time.Second}
		res, err := c.Get(srv.URL + "/hooks/acme/linkedin?challengeCode=" + code)
		if err != nil {
			t.Fatalf("challenge: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	code := "890e4665-4dfe-4ab1-b689-ed553bceeed0"
	want, _ := kinds.LinkedInChallenge(code, []string{secret})
	if st, b := challenge(code); st != 200 || !bytes.Equal(b, want) {
		t.Fatalf("with MariaDB up: %d %s", st, b)
	}

	m.signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for a.DB.PingContext(ctx) == nil {
		if time.Now().After(deadline) {
			t.Fatal("private MariaDB did not stop")
		}
		time.Sleep(100 * time.Millisecond)
	}
	code2 := "4c0f6b8e-2a8d-4f0e-9d5a-0c1f3c9f1e77"
	want2, _ := kinds.LinkedInChallenge(code2, []string{secret})
	for i := 0; i < 3; i++ { // LinkedIn's three tries
		start := time.Now()
		st, b := challenge(code2)
		if st != 200 || !bytes.Equal(b, want2) {
			t.Fatalf("with MariaDB stopped, try %d: %d %s", i, st, b)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the answer took %s", d)
		}
	}
	if st, _ := challenge(""); st != 400 {
		t.Fatalf("no code with MariaDB stopped: %d", st)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	a.Shutdown(sctx)
}
