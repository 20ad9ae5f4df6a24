package web_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
)

// BenchmarkLeadsExport streams GET /api/v1/leads/export.csv of a tenant
// with many leads through the real handler and reports rows/s and the
// server's peak heap growth during the export (the client discards the
// body, so the heap is the server's), and the process's peak resident-set
// growth.
//
//	LEADPIPE_BENCH_LEADS=1000000   leads to seed (default 100000)
//
//	go test -run '^$' -bench BenchmarkLeadsExport -benchtime 1x ./internal/web/
func BenchmarkLeadsExport(b *testing.B) {
	ctx := context.Background()
	n := benchSize(b, "LEADPIPE_BENCH_LEADS", 100_000)
	e := apptest.New(b, "bench_export", apptest.Options{RedisDB: apptest.RedisBench})
	te := e.Tenant("bench")
	start := time.Now()
	if _, err := leads.Seed(ctx, e.App.DB, te.ID, leads.SeedOptions{N: n, RandSeed: 1}); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d leads in %s", n, time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	var rows, peak, rssPeak int64
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := int64(ms.HeapAlloc)
		rssBase := rssBytes()
		stop := make(chan struct{})
		var top, rssTop atomic.Int64
		go func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			var m runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					runtime.ReadMemStats(&m)
					if g := int64(m.HeapAlloc) - base; g > top.Load() {
						top.Store(g)
					}
					if g := rssBytes() - rssBase; g > rssTop.Load() {
						rssTop.Store(g)
					}
				}
			}
		}()
		req, _ := http.NewRequest("GET", e.URL+"/api/v1/leads/export.csv", nil)
		req.Header.Set("Authorization", "Bearer "+te.Token)
		t0 := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		lines, err := countLines(res.Body)
		res.Body.Close()
		elapsed += time.Since(t0)
		close(stop)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("export: %d %v", res.StatusCode, err)
		}
		if lines-1 != int64(n) {
			b.Fatalf("exported %d rows, want %d", lines-1, n)
		}
		rows += lines - 1
		peak = max(peak, top.Load())
		rssPeak = max(rssPeak, rssTop.Load())
	}
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(peak)/(1<<20), "MB-heap-growth")
	b.ReportMetric(float64(rssPeak)/(1<<20), "MB-rss-growth")
}

// rssBytes is the process's resident set (Linux /proc/self/status VmRSS;
// 0 elsewhere): the whole test process, server and client.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		for _, c := range buf[:k] {
			if c == '\n' {
				n++
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
