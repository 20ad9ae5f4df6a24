package live

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"leadpipe/internal/ids"
)

// publishQueue is how many events wait for the publishing goroutine; more
// are dropped (a browser that misses one still sees the lead at its next
// refresh, and a reset on reconnect).
const publishQueue = 4096

// publishBatch is how many waiting events go to Redis in one pipeline.
const publishBatch = 256

type outgoing struct {
	tenantID string
	ev       Event
}

// Publisher sends events to Redis from one goroutine of its own. Publish
// only puts the event on a buffered channel: it never blocks, never
// touches the network and never fails, so the ingest path pays a channel
// send (docs/ARCHITECTURE.md, "Live inbox").
type Publisher struct {
	rdb     redis.UniversalClient
	log     *slog.Logger
	ch      chan outgoing
	dropped atomic.Int64
	sent    atomic.Int64
	once    sync.Once
	done    chan struct{}
}

// NewPublisher starts a publisher on rdb; Close stops it.
func NewPublisher(rdb redis.UniversalClient, log *slog.Logger) *Publisher {
	p := &Publisher{rdb: rdb, log: log, ch: make(chan outgoing, publishQueue), done: make(chan struct{})}
	go p.run()
	return p
}

// Publish queues ev for tenantID's channel. Call it after the change
// committed, never inside a transaction. Safe on a nil Publisher.
func (p *Publisher) Publish(tenantID string, ev Event) {
	if p == nil || tenantID == "" {
		return
	}
	select {
	case p.ch <- outgoing{tenantID: tenantID, ev: ev}:
	default:
		p.dropped.Add(1)
	}
}

// Dropped is how many events found the queue full.
func (p *Publisher) Dropped() int64 { return p.dropped.Load() }

// Sent is how many events Redis accepted.
func (p *Publisher) Sent() int64 { return p.sent.Load() }

// Close publishes what is queued (for at most two seconds) and stops.
func (p *Publisher) Close() {
	p.once.Do(func() { close(p.ch) })
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
	}
}

func (p *Publisher) run() {
	defer close(p.done)
	buf := make([]outgoing, 0, publishBatch)
	for o := range p.ch {
		buf = append(buf[:0], o)
	more:
		for len(buf) < publishBatch {
			select {
			case o, ok := <-p.ch:
				if !ok {
					break more
				}
				buf = append(buf, o)
			default:
				break more
			}
		}
		p.send(buf)
	}
}

func (p *Publisher) send(buf []outgoing) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := p.rdb.Pipeline()
	for i := range buf {
		o := &buf[i]
		if o.ev.ID == "" {
			o.ev.ID = ids.New()
		}
		if o.ev.At.IsZero() {
			o.ev.At = time.Now().UTC()
		}
		b, err := json.Marshal(o.ev)
		if err != nil {
			continue // only strings and a time: cannot fail
		}
		pipe.Publish(ctx, Channel(o.tenantID), b)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// Browsers miss these; they catch up at their next refresh or
		// reconnect (a reset). Nothing else depends on them.
		p.log.Warn("live: publishing lead events failed", "events", len(buf), "err", err)
		return
	}
	p.sent.Add(int64(len(buf)))
}
