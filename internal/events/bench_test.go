package events_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
)

// fanoutReceiver counts deliveries per event id and records when each
// arrived; slow makes it answer after that long.
type fanoutReceiver struct {
	mu    sync.Mutex
	first map[string]time.Time
	n     atomic.Int64
	slow  time.Duration
}

func (f *fanoutReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	now := time.Now()
	id := r.Header.Get("webhook-id")
	f.mu.Lock()
	if _, ok := f.first[id]; !ok {
		f.first[id] = now
		f.n.Add(1)
	}
	f.mu.Unlock()
	if f.slow > 0 {
		time.Sleep(f.slow)
	}
	w.WriteHeader(204)
}

type fanoutResult struct {
	healthyDone time.Duration // from the first commit until every healthy endpoint had every event
	perEndpoint float64       // events/s received by one healthy endpoint
	deliveries  float64       // deliveries/s to the healthy endpoints together
	p50, p99    time.Duration // commit → receipt, healthy endpoints
}

// fanout emits n events of one tenant (in transactions of 100, like a burst
// of lead changes) to 10 endpoints, slowFirst making the first one answer
// after 2 s, and waits until the healthy ones received everything.
func fanout(b *testing.B, e *env, tenant string, n int, slowFirst bool) fanoutResult {
	ctx := context.Background()
	recvs := make([]*fanoutReceiver, 10)
	for i := range recvs {
		recvs[i] = &fanoutReceiver{first: map[string]time.Time{}}
		if i == 0 && slowFirst {
			recvs[i].slow = 2 * time.Second
		}
		srv := httptest.NewServer(recvs[i])
		b.Cleanup(srv.Close)
		if _, err := e.S.Create(ctx, tenant, events.CreateInput{URL: srv.URL, Events: []string{events.LeadCreated}}); err != nil {
			b.Fatal(err)
		}
	}
	healthy := recvs
	if slowFirst {
		healthy = recvs[1:]
	}
	commits := make(map[string]time.Time, n)
	start := time.Now()
	for done := 0; done < n; {
		k := min(100, n-done)
		var leadIDs []string
		err := db.InTx(ctx, e.DB, func(tx *sqlx.Tx) error {
			leadIDs = leadIDs[:0]
			for i := 0; i < k; i++ {
				id := ids.New()
				if err := e.S.Outbox().Emit(ctx, tx, tenant, events.Event{Type: events.LeadCreated, ResourceID: id,
					Data: map[string]any{"id": id, "name": "Lead " + strconv.Itoa(done+i), "email": "lead@example.com"}}); err != nil {
					return err
				}
				leadIDs = append(leadIDs, id)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		var evIDs []string
		q, args := inList(leadIDs)
		if err := e.DB.Select(&evIDs, `SELECT id FROM events WHERE tenant_id = ? AND resource_id IN (`+q+`)`, append([]any{tenant}, args...)...); err != nil {
			b.Fatal(err)
		}
		for _, id := range evIDs {
			commits[id] = at
		}
		done += k
	}
	deadline := time.Now().Add(20 * time.Minute)
	for {
		all := true
		for _, r := range healthy {
			if r.n.Load() < int64(n) {
				all = false
			}
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("healthy endpoints did not receive all %d events within 20 min", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	var lat []time.Duration
	for _, r := range healthy {
		r.mu.Lock()
		for id, at := range r.first {
			lat = append(lat, at.Sub(commits[id]))
		}
		r.mu.Unlock()
	}
	slices.Sort(lat)
	return fanoutResult{healthyDone: took, perEndpoint: float64(n) / took.Seconds(),
		deliveries: float64(n*len(healthy)) / took.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

func inList(ids []string) (string, []any) {
	args := make([]any, len(ids))
	q := make([]byte, 0, 3*len(ids))
	for i, id := range ids {
		if i > 0 {
			q = append(q, ',', ' ')
		}
		q = append(q, '?')
		args[i] = id
	}
	return string(q), args
}

// BenchmarkFanOut: 10,000 events (LEADPIPE_BENCH_EVENTS) to 10 healthy
// local endpoints, then the same with one endpoint answering after 2 s; the
// ratio compares one healthy endpoint's receive rate in the two runs
// (target ≥ 0.90). Real MariaDB, Redis, Asynq worker (64) and relay.
//
//	go test -run '^$' -bench BenchmarkFanOut -benchtime 1x ./internal/events/
func BenchmarkFanOut(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LEADPIPE_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	e := newBenchEnv(b)
	ctx, cancel := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); (&events.Relay{S: e.S, Interval: 20 * time.Millisecond}).Run(ctx) }()
	defer func() { cancel(); <-relayDone }()
	for i := 0; i < b.N; i++ {
		base := fanout(b, e, e.Tenants[0], n, false)
		slow := fanout(b, e, e.Tenants[1], n, true)
		ratio := slow.perEndpoint / base.perEndpoint
		fmt.Printf("fan-out %d events × 10 endpoints: %.0f deliveries/s (%.0f events/s per endpoint), commit→receipt p50 %s p99 %s, all in %s\n",
			n, base.deliveries, base.perEndpoint, base.p50.Round(time.Millisecond), base.p99.Round(time.Millisecond), base.healthyDone.Round(time.Millisecond))
		fmt.Printf("one endpoint answering after 2 s: the other nine %.0f deliveries/s (%.0f events/s per endpoint), p50 %s p99 %s, all in %s\n",
			slow.deliveries, slow.perEndpoint, slow.p50.Round(time.Millisecond), slow.p99.Round(time.Millisecond), slow.healthyDone.Round(time.Millisecond))
		fmt.Printf("ratio (healthy endpoint rate with a slow neighbour / without): %.2f (target ≥ 0.90)\n", ratio)
		b.ReportMetric(base.deliveries, "deliveries/s")
		b.ReportMetric(ratio, "ratio")
	}
}
