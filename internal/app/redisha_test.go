package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/redistest"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestIngestThroughSentinelFailover runs ingest → process with
// LEADPIPE_REDIS_URL=redis-sentinel://… and SIGKILLs the master mid-run.
// Sentinel promotes the replica; Asynq's failover client and every other
// Redis client of the app follow it. Whatever the dead master held and had
// not replicated is gone, so the sweeper re-enqueues from MySQL: every
// acknowledged delivery still becomes exactly one lead.
func TestIngestThroughSentinelFailover(t *testing.T) {
	ss := redistest.StartSentinel(t)
	e := apptest.New(t, "ha_sentinel", apptest.Options{Worker: true, Env: map[string]string{"LEADPIPE_REDIS_URL": ss.URL(0)}})
	run := startIngestRun(t, e, "sentinel", 600, 8)
	run.waitAcked(200, 60*time.Second)
	took := ss.KillMaster(30 * time.Second)
	t.Logf("failover: %s; new master %s", took, ss.MasterAddr())
	run.wait()
	run.checkExactlyOnce(90 * time.Second)
	// The scheduler's lease and the readiness check use the promoted master too.
	if r := e.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("/readyz after failover: %d %s", r.Status, r.Body)
	}
}

// TestIngestOnRedisCluster runs ingest → process with
// LEADPIPE_REDIS_URL=redis-cluster://… against three masters.
func TestIngestOnRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	e := apptest.New(t, "ha_cluster", apptest.Options{Worker: true, Env: map[string]string{"LEADPIPE_REDIS_URL": cl.URL()}})
	run := startIngestRun(t, e, "cluster", 400, 8)
	run.wait()
	run.checkExactlyOnce(60 * time.Second)
	if r := e.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("/readyz on the cluster: %d %s", r.Status, r.Body)
	}
}

// ingestRun sends signed standard deliveries (every fifth one twice, as a
// retrying sender does) with a sender that retries until 2xx.
type ingestRun struct {
	t      *testing.T
	e      *apptest.Env
	tenant apptest.Tenant
	n      int
	acked  atomic.Int64
	done   chan struct{}
	mu     sync.Mutex
	ids    map[string]bool // acknowledged Leadpipe delivery ids
	refs   map[string]bool // natural keys of acknowledged deliveries
}

func startIngestRun(t *testing.T, e *apptest.Env, slug string, n, senders int) *ingestRun {
	t.Helper()
	ten := e.Tenant(slug)
	src, secret := e.Source(ten.ID, sources.CreateInput{Slug: "hooks", Name: "Hooks", Kind: kinds.Standard})
	url := e.URL + "/hooks/" + ten.Slug + "/" + src.Slug
	r := &ingestRun{t: t, e: e, tenant: ten, n: n, done: make(chan struct{}), ids: map[string]bool{}, refs: map[string]bool{}}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ref := fmt.Sprintf("ref-%d", i/2) // two deliveries per lead: a second sighting
				msg := fmt.Sprintf("msg_%d", i)
				now := time.Now()
				body := kinds.SampleBody(kinds.Standard, msg, ref, kinds.Lead{Email: fmt.Sprintf("p%d@example.com", i/2)}, now)
				h, b, err := kinds.Sign(kinds.Standard, nil, secret, msg, body, now)
				if err != nil {
					t.Error(err)
					return
				}
				times := 1
				if i%5 == 0 {
					times = 2
				}
				for k := 0; k < times; k++ {
					id, ok := postUntil2xx(url, h, b, 60*time.Second)
					if !ok {
						t.Errorf("delivery %s never acknowledged", msg)
						return
					}
					r.mu.Lock()
					r.ids[id] = true
					r.refs[ref] = true
					r.mu.Unlock()
				}
				r.acked.Add(1)
			}
		}()
	}
	go func() {
		for i := 0; i < n; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		close(r.done)
	}()
	return r
}

// postUntil2xx is a sender that retries (with a short pause) until it is
// answered 2xx, and returns Leadpipe's delivery id.
func postUntil2xx(url string, h http.Header, body []byte, limit time.Duration) (string, bool) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				var ack struct {
					DeliveryID string `json:"delivery_id"`
				}
				if json.Unmarshal(b, &ack) == nil && ack.DeliveryID != "" {
					return ack.DeliveryID, true
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", false
}

func (r *ingestRun) waitAcked(n int64, timeout time.Duration) {
	r.t.Helper()
	apptest.Eventually(r.t, timeout, fmt.Sprintf("%d acknowledged deliveries", n), func() bool { return r.acked.Load() >= n })
}

func (r *ingestRun) wait() {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(3 * time.Minute):
		r.t.Fatal("senders did not finish in 3 minutes")
	}
	if r.t.Failed() {
		r.t.FailNow()
	}
}

// checkExactlyOnce: every acknowledged delivery is stored once and
// processed into its lead, and there is one lead per natural key.
func (r *ingestRun) checkExactlyOnce(settle time.Duration) {
	r.t.Helper()
	ctx := context.Background()
	db := r.e.App.DB
	count := func(q string, args ...any) int {
		var n int
		if err := db.GetContext(ctx, &n, q, args...); err != nil {
			r.t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if got := len(r.ids); got != r.n {
		r.t.Fatalf("%d distinct delivery ids acknowledged for %d distinct deliveries (a duplicate answered a new id?)", got, r.n)
	}
	if got := count(`SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, r.tenant.ID); got != r.n {
		r.t.Fatalf("%d delivery rows, want %d", got, r.n)
	}
	apptest.Eventually(r.t, settle, "every delivery processed", func() bool {
		return count(`SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed' AND lead_id IS NOT NULL`, r.tenant.ID) == r.n
	})
	var missing []string
	for id := range r.ids {
		if count(`SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND id = ? AND state = 'processed'`, r.tenant.ID, id) != 1 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		r.t.Fatalf("%d acknowledged deliveries not processed: %v", len(missing), missing[:min(5, len(missing))])
	}
	if got, want := count(`SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, r.tenant.ID), len(r.refs); got != want {
		r.t.Fatalf("%d leads for %d natural keys", got, want)
	}
	if got := count(`SELECT COUNT(DISTINCT lead_id) FROM deliveries WHERE tenant_id = ?`, r.tenant.ID); got != len(r.refs) {
		r.t.Fatalf("deliveries point at %d leads, want %d", got, len(r.refs))
	}
}
