package monitor_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
	"leadpipe/internal/monitor"
	"leadpipe/internal/monitor/monitortest"
	"leadpipe/internal/webhooks/kinds"
)

// BenchmarkRecorderAdd is the cost of counting one event, next to a no-op
// Sink in the same run, from parallel goroutines over 200 sources.
func BenchmarkRecorderAdd(b *testing.B) {
	d, _ := dbtest.New(b, "monitor_badd")
	rec := monitor.NewRecorder(d, nil)
	tenant := ids.New()
	srcs := make([]string, 200)
	for i := range srcs {
		srcs[i] = ids.New()
	}
	now := time.Now()
	var noop float64
	run := func(s monitor.Sink) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetParallelism(8) // 16 goroutines on 2 cores, like 16 senders
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					s.Add(tenant, srcs[i%len(srcs)], monitor.Deliveries, 1, now)
					i++
				}
			})
		}
	}
	b.Run("discard", func(b *testing.B) {
		run(monitor.Discard{})(b)
		noop = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("recorder", func(b *testing.B) {
		run(rec)(b)
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns-noop, "ns-overhead/add")
		b.ReportMetric(ns/max(noop, 0.01), "x-noop")
	})
	if err := rec.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStats30d: a source that received 10,000,000 deliveries over 30
// days (2% duplicates), next to another as busy source of the tenant.
//
// The tables are seeded with exactly what the Recorder writes for that
// traffic — 43,200 per-minute rows, 720 hourly and 30 daily per source,
// through the Recorder's own flush — rather than 10M raw delivery rows:
// the statistics never read the deliveries table, so the raw rows would
// cost ~30 min of inserts on this machine and change nothing measured.
func BenchmarkStats30d(b *testing.B) {
	d, _ := dbtest.New(b, "monitor_b30")
	ctx := context.Background()
	rec := monitor.NewRecorder(d, nil)
	svc := monitor.NewService(d, nil, nil, rec, nil, monitor.NoFirstResponses{}, nil, nil)
	tenant := ids.New()
	end := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	from := end.Add(-30 * 24 * time.Hour)
	var target string
	seedStart := time.Now()
	var total monitortest.Totals
	for i := range 2 {
		src := ids.New()
		if i == 0 {
			target = src
		}
		// 10,000,000 / 43,200 minutes = 231.48 a minute: 231 or 232.
		for m := from; m.Before(end); m = m.Add(time.Minute) {
			k := int64(m.Sub(from) / time.Minute)
			per := 10_000_000*(k+1)/43_200 - 10_000_000*k/43_200
			rec.Add(tenant, src, monitor.Deliveries, per, m)
			rec.Add(tenant, src, monitor.Duplicates, per/50, m)
			if i == 0 {
				total.Deliveries += per
			}
			if m.Minute() == 0 && m.Hour() == 0 {
				if err := rec.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := rec.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d deliveries for the source (2 sources) in %s", total.Deliveries, time.Since(seedStart).Round(time.Millisecond))

	for _, c := range []struct {
		name string
		from time.Time
		step time.Duration
		n    int
	}{
		{"30d-daily", from, 24 * time.Hour, 30},
		{"30d-hourly", from, time.Hour, 720},
		{"7d-hourly", end.Add(-7 * 24 * time.Hour), time.Hour, 168},
		{"24h-5min", end.Add(-24 * time.Hour), 5 * time.Minute, 288},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				bs, err := svc.Stats(ctx, tenant, target, c.from, end, c.step)
				if err != nil {
					b.Fatal(err)
				}
				if len(bs) != c.n {
					b.Fatalf("%d buckets", len(bs))
				}
				if c.name == "30d-daily" {
					if del, _, _ := sumBuckets(bs); del != 10_000_000 {
						b.Fatalf("sum %d", del)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}

// BenchmarkIngestCounters compares webhook ingest throughput (16
// concurrent senders, real HTTP, signatures, MariaDB) with the Recorder
// as the ingest's Sink against a no-op Sink, in alternating rounds of the
// same run. Opt-in (about 30 s): LEADPIPE_BENCH_INGEST=1.
func BenchmarkIngestCounters(b *testing.B) {
	if os.Getenv("LEADPIPE_BENCH_INGEST") == "" {
		b.Skip("set LEADPIPE_BENCH_INGEST=1 to run (about 30 s)")
	}
	e := apptest.New(b, "monitor_bingest", apptest.Options{RedisDB: apptest.RedisMonitor})
	ctx := context.Background()
	acme := e.Tenant("acme")
	src, secret, err := e.App.Sources.Create(ctx, acme.ID, sourcesInput("leads"))
	if err != nil {
		b.Fatal(err)
	}
	hook := e.Hook("acme", "leads", src.Kind, secret)
	hook.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	rec := e.App.Web.Monitor.Recorder
	var seq atomic.Int64
	// Throughput on a shared 2-core machine is noisy, so the process's own
	// CPU time per delivery (senders and server, not MariaDB) is reported
	// too: it barely moves with other load.
	var cpu, done [2]float64
	cpuNow := func() float64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
	}
	mode := 0
	round := func(d time.Duration) float64 {
		c0 := cpuNow()
		var n atomic.Int64
		defer func() { cpu[mode] += cpuNow() - c0; done[mode] += float64(n.Load()) }()
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					i := seq.Add(1)
					id := "m" + strconv.FormatInt(i, 10)
					if i%10 == 0 {
						id = "m" + strconv.FormatInt(i-1, 10) // 10% retries
					}
					now := time.Now()
					body := kinds.SampleBody(src.Kind, id, "r"+id, kinds.Lead{Email: "x@example.com"}, now)
					st, _, err := hook.Try(id, body, now)
					if err != nil {
						b.Error(err)
						return
					}
					if st == 200 {
						n.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		return float64(n.Load()) / d.Seconds()
	}
	round(2 * time.Second) // warm up
	cpu, done = [2]float64{}, [2]float64{}
	// Short alternating rounds: on a shared machine the load drifts over
	// seconds, so each pair is compared and the median pair ratio reported.
	var off, on float64
	var ratios []float64
	const pairs, per = 10, 1200 * time.Millisecond
	for p := range pairs {
		var pair [2]float64
		for _, withCounters := range []bool{p%2 == 0, p%2 != 0} {
			if withCounters {
				e.App.Ingest.Stats, mode = rec, 1
				pair[1] = round(per)
			} else {
				e.App.Ingest.Stats, mode = monitor.Discard{}, 0
				pair[0] = round(per)
			}
		}
		off += pair[0] / pairs
		on += pair[1] / pairs
		ratios = append(ratios, pair[1]/pair[0])
	}
	slices.Sort(ratios)
	e.App.Ingest.Stats = rec
	b.ReportMetric(off, "deliveries/s-without")
	b.ReportMetric(on, "deliveries/s-with")
	b.ReportMetric(on/off, "ratio-of-means")
	b.ReportMetric(cpu[0]/done[0], "cpu-µs/delivery-without")
	b.ReportMetric(cpu[1]/done[1], "cpu-µs/delivery-with")
	b.ReportMetric((ratios[pairs/2-1]+ratios[pairs/2])/2, "ratio-median")
}
