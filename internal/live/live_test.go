package live_test

import (
	"context"
	"io"
	"log/slog"
	"os"
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

func newHub(t *testing.T) (*live.Hub, *live.Publisher) {
	rdb := redisClient(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, p := live.NewHub(rdb, log), live.NewPublisher(rdb, log)
	t.Cleanup(func() { h.Close(); p.Close() })
	return h, p
}

func subscribe(t *testing.T, h *live.Hub, tenantID, lastID string) (*live.Sub, []live.Event, bool) {
	t.Helper()
	s, backlog, reset, err := h.Subscribe(context.Background(), tenantID, lastID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Unsubscribe(s) })
	return s, backlog, reset
}

func next(t *testing.T, s *live.Sub) live.Event {
	t.Helper()
	select {
	case ev := <-s.C:
		return ev
	case <-time.After(2 * time.Second):
		t.Fatal("no event within 2 s")
		return live.Event{}
	}
}

func none(t *testing.T, s *live.Sub, d time.Duration) {
	t.Helper()
	select {
	case ev := <-s.C:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(d):
	}
}

func TestOnlyTheTenantsSubscribersGetItsEvents(t *testing.T) {
	h, p := newHub(t)
	tenantA, tenantB := ids.New(), ids.New()
	a1, _, _ := subscribe(t, h, tenantA, "")
	a2, _, _ := subscribe(t, h, tenantA, "")
	b, _, _ := subscribe(t, h, tenantB, "")

	lead := ids.New()
	p.Publish(tenantA, live.Event{Type: live.Created, LeadID: lead, Name: "Ada Lovelace"})
	for _, s := range []*live.Sub{a1, a2} {
		if ev := next(t, s); ev.ID == "" || ev.LeadID != lead || ev.Type != live.Created || ev.Name != "Ada Lovelace" || ev.At.IsZero() {
			t.Fatalf("tenant A got %+v", ev)
		}
	}
	none(t, b, 500*time.Millisecond)

	// And the other way round.
	p.Publish(tenantB, live.Event{Type: live.Reassigned, LeadID: ids.New(), OwnerID: "u1"})
	if ev := next(t, b); ev.Type != live.Reassigned || ev.OwnerID != "u1" {
		t.Fatalf("tenant B got %+v", ev)
	}
	none(t, a1, 300*time.Millisecond)
}

func TestLastEventIDResumes(t *testing.T) {
	h, p := newHub(t)
	tenant := ids.New()
	s, _, _ := subscribe(t, h, tenant, "")
	p.Publish(tenant, live.Event{Type: live.Created, LeadID: ids.New()})
	first := next(t, s)
	h.Unsubscribe(s) // the browser goes away

	// Two events while it is away, seen by another stream of the tenant.
	w, _, _ := subscribe(t, h, tenant, "")
	missed := []string{ids.New(), ids.New()}
	for _, l := range missed {
		p.Publish(tenant, live.Event{Type: live.Created, LeadID: l})
	}
	next(t, w)
	next(t, w)

	_, backlog, reset := subscribe(t, h, tenant, first.ID)
	if reset || len(backlog) != 2 || backlog[0].LeadID != missed[0] || backlog[1].LeadID != missed[1] {
		t.Fatalf("resume after %s: reset %v, backlog %+v", first.ID, reset, backlog)
	}
	// An id the ring no longer has (or never had): a reset, so the page
	// refreshes instead of trusting an incomplete stream.
	if _, backlog, reset := subscribe(t, h, tenant, "01UNKNOWN0000000000000000Z"); !reset || len(backlog) != 0 {
		t.Fatalf("unknown Last-Event-ID: reset %v, backlog %d", reset, len(backlog))
	}
	// The ring keeps the newest Ring events.
	h2, p2 := newHub(t)
	h2.Ring = 3
	t2 := ids.New()
	s2, _, _ := subscribe(t, h2, t2, "")
	var evs []live.Event
	for range 5 {
		p2.Publish(t2, live.Event{Type: live.Created, LeadID: ids.New()})
		evs = append(evs, next(t, s2))
	}
	if _, _, reset := subscribe(t, h2, t2, evs[0].ID); !reset {
		t.Error("an evicted id resumed")
	}
	if _, backlog, reset := subscribe(t, h2, t2, evs[2].ID); reset || len(backlog) != 2 {
		t.Errorf("resume from the oldest kept: reset %v, %d events", reset, len(backlog))
	}
}

func TestSlowSubscriberIsReset(t *testing.T) {
	h, p := newHub(t)
	tenant := ids.New()
	s, _, _ := subscribe(t, h, tenant, "")
	for range 200 { // more than a stream buffers; nobody reads
		p.Publish(tenant, live.Event{Type: live.Created, LeadID: ids.New()})
	}
	select {
	case <-s.Lost:
	case <-time.After(3 * time.Second):
		t.Fatal("a stream that fell behind was not told")
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
