package webhooks_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/webhooks/kinds"
)

// privateRedis runs a redis-server of the test's own, so stopping it does
// not disturb other test packages sharing the machine's Redis.
type privateRedis struct {
	port int
	cmd  *exec.Cmd
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (r *privateRedis) start(t *testing.T) {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server binary not found")
	}
	r.cmd = exec.Command(path, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("private redis did not start")
}

func (r *privateRedis) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
		r.cmd = nil
	}
}

func TestRedisDownDuringIngest(t *testing.T) {
	rd := &privateRedis{port: freePort(t)}
	rd.start(t)
	t.Cleanup(rd.stop)
	addr := fmt.Sprintf("127.0.0.1:%d", rd.port)
	t.Setenv("LEADPIPE_TEST_REDIS_ADDR", addr)
	e := apptest.New(t, "hooks_redis", apptest.Options{RedisDB: 0, Worker: true})
	ten := e.Tenant("outage")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)

	warnings := &countingHandler{}
	e.App.Ingest.Dispatch.Log = slog.New(warnings)
	rd.stop() // Redis goes away.
	const n = 40
	for i := 0; i < n; i++ {
		h, b := signed(t, s, fmt.Sprintf("msg_%d", i), fmt.Sprintf("c_%d", i), kinds.Lead{Email: fmt.Sprintf("u%d@example.com", i)}, time.Now())
		r := send(t, s.URL, h, b)
		if r.Status != 200 || r.Ack.Status != "accepted" {
			t.Fatalf("delivery %d during outage: %d %s", i, r.Status, r.Body)
		}
		if i%10 == 0 { // and a duplicate now and then
			if r := send(t, s.URL, h, b); r.Ack.Status != "duplicate" {
				t.Fatalf("duplicate during outage: %s", r.Body)
			}
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND processed_at IS NULL`, ten.ID); c != n {
		t.Fatalf("%d stored unprocessed deliveries, want %d", c, n)
	}
	// No log flood: the failed enqueues are summed up, one warning per
	// interval (10 s), not one per delivery.
	apptest.Eventually(t, 10*time.Second, "an enqueue failure warning", func() bool { return warnings.n.Load() > 0 })
	if w := warnings.n.Load(); w > 2 {
		t.Fatalf("%d warnings for %d failed enqueues", w, n)
	}
	rd.start(t) // Redis is back: the sweeper catches up.
	apptest.Eventually(t, 60*time.Second, "sweeper to process every delivery", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND processed_at IS NOT NULL`, ten.ID) == n
	})
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != n {
		t.Fatalf("%d leads, want %d", c, n)
	}
	// Nothing processed twice: each lead seen once (twice for the four
	// sent again), each delivery one attempt.
	apptest.Eventually(t, 30*time.Second, "times_seen", func() bool {
		return count(t, e, `SELECT SUM(times_seen) FROM leads WHERE tenant_id = ?`, ten.ID) == n+4
	})
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND times_seen NOT IN (1, 2)`, ten.ID); c != 0 {
		t.Fatalf("%d leads processed more than once", c)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND attempts <> 1`, ten.ID); c != 0 {
		t.Fatalf("%d deliveries with attempts != 1", c)
	}
	_ = context.Background()
}

// countingHandler counts the log records of level warning and above.
type countingHandler struct{ n atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
