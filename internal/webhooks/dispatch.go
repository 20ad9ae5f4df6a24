package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
)

// Dispatcher enqueues the processing task of each committed delivery after
// the sender has had its answer: the Redis round trip is off the
// acknowledgement's path. It is safe to lose what it holds (a crash, a
// Redis outage): the sweeper enqueues every delivery left unprocessed, and
// the task id (the delivery row id) keeps a delivery from being queued
// twice. A full buffer makes the caller enqueue itself (back-pressure, no
// unbounded memory).
type Dispatcher struct {
	Queue   Enqueuer
	Log     *slog.Logger
	Workers int // concurrent enqueuers (default 32)
	Buffer  int // tasks waiting (default 8192)
	Timeout time.Duration
	// WarnEvery bounds the failure warnings: while Redis is down one line
	// per interval says how many enqueues failed (default 10 s).
	WarnEvery time.Duration

	failMu   sync.Mutex
	failed   int       // enqueues failed since the last warning
	lastWarn time.Time // when the last warning was written

	once   sync.Once
	mu     sync.RWMutex
	closed bool
	ch     chan dispatchItem
	wg     sync.WaitGroup
}

type dispatchItem struct{ tenantID, id string }

func (d *Dispatcher) start() {
	d.once.Do(func() {
		if d.Workers <= 0 {
			d.Workers = 32
		}
		if d.Buffer <= 0 {
			d.Buffer = 8192
		}
		if d.Timeout <= 0 {
			d.Timeout = 500 * time.Millisecond
		}
		if d.WarnEvery <= 0 {
			d.WarnEvery = 10 * time.Second
		}
		d.ch = make(chan dispatchItem, d.Buffer)
		for i := 0; i < d.Workers; i++ {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				for it := range d.ch {
					d.enqueue(it)
				}
			}()
		}
	})
}

// Dispatch queues the tasks of one tenant's fresh deliveries.
func (d *Dispatcher) Dispatch(tenantID string, ids []string) {
	d.start()
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, id := range ids {
		it := dispatchItem{tenantID, id}
		if d.closed {
			d.enqueue(it)
			continue
		}
		select {
		case d.ch <- it:
		default:
			d.enqueue(it)
		}
	}
}

// Flush enqueues what is waiting and stops the workers; later Dispatch
// calls enqueue inline. ctx bounds the wait (what is left, the sweeper
// finds).
func (d *Dispatcher) Flush(ctx context.Context) {
	d.start()
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.ch)
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// enqueue queues a delivery's processing task; a conflict means it is
// queued already, any other error is left to the sweeper.
func (d *Dispatcher) enqueue(it dispatchItem) {
	ctx, cancel := context.WithTimeout(context.Background(), d.Timeout)
	defer cancel()
	t, opts := NewProcessTask(it.tenantID, it.id, 0)
	if _, err := d.Queue.EnqueueContext(ctx, t, opts...); err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		d.failure(err)
	}
}

// failure counts a failed enqueue and writes one warning per WarnEvery
// with the count, not one per delivery (a Redis outage under load would
// otherwise flood the log).
func (d *Dispatcher) failure(err error) {
	d.failMu.Lock()
	d.failed++
	now := time.Now()
	if now.Sub(d.lastWarn) < d.WarnEvery {
		d.failMu.Unlock()
		return
	}
	n, since := d.failed, d.lastWarn
	d.failed, d.lastWarn = 0, now
	d.failMu.Unlock()
	args := []any{"failed", n, "err", err}
	if !since.IsZero() {
		args = append(args, "since", since.UTC().Format(time.RFC3339))
	}
	d.Log.Warn("enqueueing deliveries failed; the sweeper will queue them", args...)
}
