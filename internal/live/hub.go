package live

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of a Hub.
const (
	DefaultRing      = 128              // recent events kept per tenant for Last-Event-ID
	DefaultKeep      = 5 * time.Minute  // how long a tenant's ring outlives its last subscriber
	DefaultHeartbeat = 15 * time.Second // comment lines that keep proxies from closing the stream
	subBuffer        = 64               // events waiting for one slow browser before it is reset
)

// Hub receives every tenant's events from Redis (one PSUBSCRIBE per server
// process, started by the first subscriber, so a worker process never
// subscribes) and fans them out to the subscribers of the event's tenant,
// and only of it.
type Hub struct {
	rdb redis.UniversalClient
	log *slog.Logger

	Ring      int
	Keep      time.Duration
	heartbeat atomic.Int64 // nanoseconds (SetHeartbeat)

	startMu sync.Mutex
	ps      *redis.PubSub
	closed  bool
	done    chan struct{}

	mu        sync.Mutex
	tenants   map[string]*tenantState
	lastSweep time.Time
}

type tenantState struct {
	ring     []Event // oldest first, at most Hub.Ring
	subs     map[*Sub]struct{}
	lastUsed time.Time // when the last subscriber left (zero while any is there)
}

// Sub is one open stream of a tenant.
type Sub struct {
	tenantID string
	C        chan Event
	// Lost is closed when the browser was too slow and events were
	// dropped: the stream tells it to refresh, and ends.
	Lost     chan struct{}
	lostOnce sync.Once
}

// NewHub returns a hub on rdb; nothing connects until the first Subscribe.
func NewHub(rdb redis.UniversalClient, log *slog.Logger) *Hub {
	h := &Hub{rdb: rdb, log: log, Ring: DefaultRing, Keep: DefaultKeep, tenants: map[string]*tenantState{}}
	h.heartbeat.Store(int64(DefaultHeartbeat))
	return h
}

// SetHeartbeat changes how often an idle stream sends a comment line
// (tests shorten it); streams opened later use it.
func (h *Hub) SetHeartbeat(d time.Duration) { h.heartbeat.Store(int64(d)) }

// Heartbeat is how often an idle stream sends a comment line, so that
// proxies and load balancers do not close it as idle.
func (h *Hub) Heartbeat() time.Duration { return time.Duration(h.heartbeat.Load()) }

// start subscribes to every tenant's channel once, waiting for Redis to
// confirm, so an event published after the first Subscribe returned is
// received.
func (h *Hub) start(ctx context.Context) error {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	if h.closed {
		return errors.New("live: hub closed")
	}
	if h.ps != nil {
		return nil
	}
	ps := h.rdb.PSubscribe(context.Background(), channelPrefix+"*")
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ps.Receive(rctx); err != nil {
		_ = ps.Close() // nothing was subscribed; the next Subscribe tries again
		return err
	}
	h.ps, h.done = ps, make(chan struct{})
	go h.run(ps)
	return nil
}

func (h *Hub) run(ps *redis.PubSub) {
	defer close(h.done)
	// Channel reconnects by itself after a Redis failure (events published
	// meanwhile are lost: the browsers get them at their next refresh).
	for m := range ps.Channel(redis.WithChannelSize(1024)) {
		tenantID, ok := tenantOf(m.Channel)
		if !ok {
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil || ev.ID == "" {
			h.log.Warn("live: ignoring a malformed event", "channel", m.Channel)
			continue
		}
		h.deliver(tenantID, ev)
	}
}

func (h *Hub) deliver(tenantID string, ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tenants[tenantID]
	if t == nil {
		return // nobody of this tenant is (or was lately) watching
	}
	if len(t.subs) == 0 && time.Since(t.lastUsed) > h.Keep {
		delete(h.tenants, tenantID)
		return
	}
	if len(t.ring) >= h.Ring {
		copy(t.ring, t.ring[1:])
		t.ring = t.ring[:len(t.ring)-1]
	}
	t.ring = append(t.ring, ev)
	for s := range t.subs {
		select {
		case s.C <- ev:
		default:
			s.lostOnce.Do(func() { close(s.Lost) })
		}
	}
}

// Subscribe opens a stream of tenantID's events. With lastID (the
// browser's Last-Event-ID) it returns the events after it still in the
// ring; reset reports that lastID is no longer there (evicted, or this
// process started since), so the browser should refresh instead.
func (h *Hub) Subscribe(ctx context.Context, tenantID, lastID string) (s *Sub, backlog []Event, reset bool, err error) {
	if err := h.start(ctx); err != nil {
		return nil, nil, false, err
	}
	s = &Sub{tenantID: tenantID, C: make(chan Event, subBuffer), Lost: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tenants[tenantID]
	if t == nil {
		t = &tenantState{subs: map[*Sub]struct{}{}}
		h.tenants[tenantID] = t
	}
	t.subs[s] = struct{}{}
	t.lastUsed = time.Time{}
	if lastID != "" {
		reset = true
		for i, ev := range t.ring {
			if ev.ID == lastID {
				backlog, reset = append([]Event(nil), t.ring[i+1:]...), false
				break
			}
		}
	}
	return s, backlog, reset, nil
}

// Unsubscribe closes s; its tenant's ring is kept for Keep.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tenants[s.tenantID]
	if t == nil {
		return
	}
	delete(t.subs, s)
	now := time.Now()
	if len(t.subs) == 0 {
		t.lastUsed = now
	}
	// Forget the rings of tenants nobody watched for Keep (a minute apart
	// at most, so a busy server does not walk the map at every close).
	if now.Sub(h.lastSweep) > time.Minute {
		h.lastSweep = now
		for id, t := range h.tenants {
			if len(t.subs) == 0 && now.Sub(t.lastUsed) > h.Keep {
				delete(h.tenants, id)
			}
		}
	}
}

// Subscribers is how many streams are open (for tests and metrics).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.tenants {
		n += len(t.subs)
	}
	return n
}

// Close stops receiving.
func (h *Hub) Close() {
	h.startMu.Lock()
	h.closed = true
	ps, done := h.ps, h.done
	h.startMu.Unlock()
	if ps == nil {
		return
	}
	if err := ps.Close(); err != nil {
		h.log.Warn("live: closing the subscription", "err", err)
	}
	<-done
}
