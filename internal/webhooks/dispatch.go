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
	t, opts := NewProcessTask(it.tenantID, it.id)
	if _, err := d.Queue.EnqueueContext(ctx, t, opts...); err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		d.Log.WarnContext(ctx, "enqueue delivery failed; the sweeper will retry", "delivery", it.id, "err", err)
	}
}
