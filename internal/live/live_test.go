package live_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"leadpipe/internal/ids"
	"leadpipe/internal/live"
)

func redisClient(t testing.TB) redis.UniversalClient {
	addr := os.Getenv("LEADPIPE_TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type env struct {
	hub *live.Hub
	pub *live.Publisher
	srv *httptest.Server
}

// newEnv serves the hub with the tenant taken from a header: in the
// product it comes from the session (internal/web, uiEvents).
func newEnv(t *testing.T, heartbeat time.Duration) *env {
	rdb := redisClient(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &env{hub: live.NewHub(rdb, log), pub: live.NewPublisher(rdb, log)}
	e.hub.Heartbeat = heartbeat
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hub.Serve(w, r, r.Header.Get("X-Tenant"), nil)
	}))
	t.Cleanup(func() { e.srv.Close(); e.hub.Close(); e.pub.Close() })
	return e
}

type frame struct {
	id, event, data, comment string
}

type stream struct {
	resp   *http.Response
	frames chan frame
}

func (e *env) open(t *testing.T, tenantID, lastID string) *stream {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL, nil)
	req.Header.Set("X-Tenant", tenantID)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	s := &stream{resp: resp, frames: make(chan frame, 100)}
	go func() {
		defer close(s.frames)
		sc := bufio.NewScanner(resp.Body)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				s.frames <- f
				f = frame{}
			case strings.HasPrefix(line, ":"):
				f.comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.data = line[6:]
			}
		}
	}()
	// The opening frame ("retry" and a comment) says the stream is
	// subscribed.
	select {
	case f := <-s.frames:
		if f.comment != "live" {
			t.Fatalf("first frame %+v, want the opening comment", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not open")
	}
	return s
}

// next returns the next event (skipping heartbeats), or fails after d.
func (s *stream) next(t *testing.T, d time.Duration) frame {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatal("stream ended")
			}
			if f.event != "" {
				return f
			}
		case <-deadline:
			t.Fatalf("no event within %v", d)
		}
	}
}

// none checks that no event arrives within d.
func (s *stream) none(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-s.frames:
			if ok && f.event != "" {
				t.Fatalf("unexpected event %+v", f)
			}
		case <-deadline:
			return
		}
	}
}

func TestHeadersForProxies(t *testing.T) {
	e := newEnv(t, time.Hour)
	s := e.open(t, ids.New(), "")
	h := s.resp.Header
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestOnlyTheTenantsSubscribersGetItsEvents(t *testing.T) {
	e := newEnv(t, time.Hour)
	tenantA, tenantB := ids.New(), ids.New()
	a1, a2 := e.open(t, tenantA, ""), e.open(t, tenantA, "")
	b := e.open(t, tenantB, "")

	lead := ids.New()
	e.pub.Publish(tenantA, live.Event{Type: live.Created, LeadID: lead, Name: "Ada Lovelace"})
	for _, s := range []*stream{a1, a2} {
		f := s.next(t, 2*time.Second)
		if f.event != "lead" || f.id == "" || !strings.Contains(f.data, lead) || !strings.Contains(f.data, `"type":"lead.created"`) {
			t.Fatalf("tenant A got %+v", f)
		}
	}
	b.none(t, 500*time.Millisecond)

	// And the other way round.
	e.pub.Publish(tenantB, live.Event{Type: live.Reassigned, LeadID: ids.New(), OwnerID: "u1"})
	if f := b.next(t, 2*time.Second); !strings.Contains(f.data, `"type":"lead.reassigned"`) {
		t.Fatalf("tenant B got %+v", f)
	}
	a1.none(t, 300*time.Millisecond)
}

func TestLastEventIDResumes(t *testing.T) {
	e := newEnv(t, time.Hour)
	tenant := ids.New()
	s := e.open(t, tenant, "")
	first := ids.New()
	e.pub.Publish(tenant, live.Event{Type: live.Created, LeadID: first})
	f1 := s.next(t, 2*time.Second)
	_ = s.resp.Body.Close() // the browser goes away

	// Two events while it is away, seen by another stream of the tenant.
	w := e.open(t, tenant, "")
	missed := []string{ids.New(), ids.New()}
	for _, l := range missed {
		e.pub.Publish(tenant, live.Event{Type: live.Created, LeadID: l})
	}
	w.next(t, 2*time.Second)
	w.next(t, 2*time.Second)

	r := e.open(t, tenant, f1.id)
	for _, l := range missed {
		if f := r.next(t, 2*time.Second); !strings.Contains(f.data, l) {
			t.Fatalf("resumed stream got %+v, want lead %s", f, l)
		}
	}
	r.none(t, 300*time.Millisecond) // nothing twice, not the one it had

	// An id the ring no longer has (or never had): a reset, so the page
	// refreshes instead of trusting an incomplete stream.
	z := e.open(t, tenant, "01UNKNOWN0000000000000000Z")
	if f := z.next(t, 2*time.Second); f.event != "reset" {
		t.Fatalf("unknown Last-Event-ID: got %+v, want a reset", f)
	}
}

func TestHeartbeats(t *testing.T) {
	e := newEnv(t, 50*time.Millisecond)
	s := e.open(t, ids.New(), "")
	n := 0
	deadline := time.After(2 * time.Second)
	for n < 3 {
		select {
		case f := <-s.frames:
			if f.comment == "heartbeat" {
				n++
			}
		case <-deadline:
			t.Fatalf("%d heartbeats in 2 s at a 50 ms interval", n)
		}
	}
}

func TestPublishNeverBlocks(t *testing.T) {
	// A Redis that does not answer: Publish still returns at once.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer c.Close()
	p := live.NewPublisher(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.Close()
	start := time.Now()
	for i := 0; i < 10000; i++ {
		p.Publish("t", live.Event{Type: live.Created, LeadID: "x"})
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("10,000 publishes took %v against a dead Redis", d)
	}
	var nilPub *live.Publisher
	nilPub.Publish("t", live.Event{}) // no publisher: nothing
}

// BenchmarkPublish is what the ingest path pays per new lead.
func BenchmarkPublish(b *testing.B) {
	p := live.NewPublisher(redisClient(b), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.Close()
	ev := live.Event{Type: live.Created, LeadID: "01J0000000000000000000000", OwnerID: "u", Name: "n"}
	b.ReportAllocs()
	for b.Loop() {
		p.Publish("tenant", ev)
	}
}
