package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/app"
	"leadpipe/internal/apperr"
	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
)

// BenchmarkLeadsList measures server time of GET /api/v1/leads (the whole
// handler: auth, query, JSON) for a first page and a deep page, without
// and with a status filter and a search term, and reports p50/p95 per case.
//
//	LEADPIPE_BENCH_LEADS=1000000   leads to seed into a fresh database (default 20000)
//	LEADPIPE_BENCH_DSN=…           use this database instead, seeded before with
//	                               go run ./cmd/seed -tenant bench -n 1000000 (kept between runs)
//
//	go test -run '^$' -bench BenchmarkLeadsList -benchtime 200x ./internal/web/
func BenchmarkLeadsList(b *testing.B) {
	ctx := context.Background()
	n := benchSize(b, "LEADPIPE_BENCH_LEADS", 20_000)
	var a *app.App
	var tenantID, token string
	if dsn := os.Getenv("LEADPIPE_BENCH_DSN"); dsn != "" {
		cfg := apptest.Config(b, dsn, apptest.Options{RedisDB: apptest.RedisBench})
		var err error
		a, err = app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		t, err := a.Tenants.TenantBySlug(ctx, "bench")
		if apperr.Is(err, apperr.NotFound) {
			b.Fatalf("no tenant \"bench\" in LEADPIPE_BENCH_DSN: seed it with go run ./cmd/seed -dsn … -tenant bench -n %d", n)
		} else if err != nil {
			b.Fatal(err)
		}
		tenantID = t.ID
		_, token, err = a.Tenants.CreateToken(ctx, t.ID, "benchmark", nil)
		if err != nil {
			b.Fatal(err)
		}
	} else {
		e := apptest.New(b, "bench_leads", apptest.Options{RedisDB: apptest.RedisBench})
		a = e.App
		te := e.Tenant("bench")
		tenantID, token = te.ID, te.Token
		start := time.Now()
		if _, err := leads.Seed(ctx, a.DB, tenantID, leads.SeedOptions{N: n, RandSeed: 1}); err != nil {
			b.Fatal(err)
		}
		b.Logf("seeded %d leads in %s", n, time.Since(start).Round(time.Millisecond))
	}
	var total int
	if err := a.DB.Get(&total, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, tenantID); err != nil {
		b.Fatal(err)
	}
	// The deep page starts 90% of the way down the list.
	var deepID string
	if err := a.DB.Get(&deepID, `SELECT id FROM leads WHERE tenant_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?`, tenantID, total*9/10); err != nil {
		b.Fatal(err)
	}
	deep := url.QueryEscape(leads.CursorFor(deepID))
	h := a.Handler()

	type benchCase struct{ name, query string }
	cases := []benchCase{
		{"first", ""},
		{"deep", "cursor=" + deep},
		{"first_status", "status=qualified"},
		{"deep_status", "status=qualified&cursor=" + deep},
	}
	// A common prefix, a surname (medium), a full name (rare), no match.
	for _, q := range []struct{ name, q string }{{"common", "ma"}, {"surname", "smith"}, {"fullname", "maria garcia"}, {"nomatch", "zzqx"}} {
		cases = append(cases,
			benchCase{"first_status_q_" + q.name, "status=qualified&q=" + url.QueryEscape(q.q)},
			benchCase{"deep_status_q_" + q.name, "status=qualified&q=" + url.QueryEscape(q.q) + "&cursor=" + deep})
	}
	do := func(query string) time.Duration {
		req := httptest.NewRequest("GET", "/api/v1/leads?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			b.Fatalf("?%s: %d %s", query, rec.Code, rec.Body)
		}
		return d
	}
	for _, c := range cases { // warm up
		do(c.query)
	}
	times := make([][]time.Duration, len(cases))
	b.ResetTimer()
	for b.Loop() {
		for i, c := range cases {
			times[i] = append(times[i], do(c.query))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(total), "leads")

	// Baseline in the same run: the substring search this design avoids
	// (LIKE '%q%' cannot use an index), for a rare and an absent term.
	for _, q := range []struct{ name, q string }{{"surname", "smith"}, {"nomatch", "zzqx"}} {
		var ds []time.Duration
		for i := 0; i < 5; i++ {
			start := time.Now()
			var ids []string
			p := "%" + q.q + "%"
			if err := a.DB.Select(&ids, `SELECT id FROM leads WHERE tenant_id = ? AND status = 'qualified'
				AND (name LIKE ? OR email LIKE ? OR company LIKE ?) ORDER BY id DESC LIMIT 51`, tenantID, p, p, p); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(x, y int) bool { return ds[x] < ds[y] })
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "baseline_like_substring_"+q.name+"_p50_ms")
	}
	for i, c := range cases {
		ds := times[i]
		sort.Slice(ds, func(x, y int) bool { return ds[x] < ds[y] })
		p := func(q float64) float64 {
			return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
		}
		b.ReportMetric(p(0.50), c.name+"_p50_ms")
		b.ReportMetric(p(0.95), c.name+"_p95_ms")
	}
}

// BenchmarkIdempotentReplay measures a replayed POST /api/v1/leads (one
// primary-key read of the stored outcome).
func BenchmarkIdempotentReplay(b *testing.B) {
	e := apptest.New(b, "bench_replay", apptest.Options{RedisDB: apptest.RedisBench})
	te := e.Tenant("bench")
	h := e.App.Handler()
	body := `{"name":"Replay Me","email":"replay@example.test"}`
	post := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/leads", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+te.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bench-replay")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := post(); rec.Code != 201 {
		b.Fatal(rec.Code, rec.Body)
	}
	for b.Loop() {
		if rec := post(); rec.Code != 201 || rec.Header().Get("Idempotent-Replayed") != "true" {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}
