package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/batch"
)

// Dispatcher enqueues the processing of committed deliveries after the
// sender has had its answer: the Redis round trip is off the
// acknowledgement's path. It gathers what the requests of the last few
// milliseconds committed and queues one batch task per tenant
// (TypeProcessBatch) instead of a task per delivery: a task costs Redis
// and the worker the same whatever it holds (dequeue, lease, completion
// scripts), so a busy server pays for it once per batch.
//
// It is safe to lose what it holds (a crash, a Redis outage): the sweeper
// enqueues every delivery left unprocessed. A full buffer makes the
// caller enqueue its own deliveries (back-pressure, no unbounded memory).
type Dispatcher struct {
	Queue Enqueuer
	Log   *slog.Logger
	// Linger is how long a batch gathers after its first delivery
	// (default 20 ms): off the sender's path, and a fiftieth of the
	// second's budget from acknowledgement to a readable lead; fewer,
	// fuller tasks cost Redis and the worker less per lead
	// (docs/BENCHMARKS.md, "Settings and the numbers behind them").
	Linger   time.Duration
	MaxBatch int // deliveries per task (default 128)
	Workers  int // concurrent enqueuers (default 4)
	Buffer   int // deliveries waiting (default 8192)
	Timeout  time.Duration
	// WarnEvery bounds the failure warnings: while Redis is down one line
	// per interval says how many enqueues failed (default 10 s).
	WarnEvery time.Duration

	failMu   sync.Mutex
	failed   int       // deliveries whose enqueue failed since the last warning
	lastWarn time.Time // when the last warning was written

	once sync.Once
	loop *batch.Loop[dispatchItem]
}

// dispatchItem is one delivery to queue; trace is the W3C traceparent of
// the request that claimed it ("" when tracing is off).
type dispatchItem struct{ tenantID, id, trace string }

type dispatchBatch struct {
	tenantID string
	ids      []string
	traces   []string // per id; nil when none is traced
}

// add appends one delivery; traces is only built once one is traced.
func (b *dispatchBatch) add(id, trace string) {
	if trace != "" && b.traces == nil {
		b.traces = make([]string, len(b.ids), cap(b.ids))
	}
	b.ids = append(b.ids, id)
	if b.traces != nil {
		b.traces = append(b.traces, trace)
	}
}

func (d *Dispatcher) start() {
	d.once.Do(func() {
		if d.Linger <= 0 {
			d.Linger = 20 * time.Millisecond
		}
		if d.MaxBatch <= 0 {
			d.MaxBatch = 128
		}
		if d.Workers <= 0 {
			d.Workers = 4
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
		// From the first delivery waiting a batch gathers for Linger (or
		// until MaxBatch deliveries), up to Workers enqueue at once.
		d.loop = batch.New(batch.Options{MaxItems: d.MaxBatch, Linger: d.Linger, Workers: d.Workers, Buffer: d.Buffer},
			nil, d.enqueueAll)
	})
}

// enqueueAll queues one task per tenant of a batch.
func (d *Dispatcher) enqueueAll(items []dispatchItem) {
	byTenant := map[string]*dispatchBatch{}
	var order []string
	for _, it := range items {
		b, seen := byTenant[it.tenantID]
		if !seen {
			b = &dispatchBatch{tenantID: it.tenantID}
			byTenant[it.tenantID] = b
			order = append(order, it.tenantID)
		}
		b.add(it.id, it.trace)
	}
	for _, t := range order {
		d.enqueue(*byTenant[t])
	}
}

// Dispatch queues the processing of one tenant's fresh deliveries.
func (d *Dispatcher) Dispatch(tenantID string, ids []string) { d.DispatchTraced(tenantID, ids, "") }

// DispatchTraced is Dispatch for deliveries claimed in the trace that
// traceparent names (carried in the task to the worker).
func (d *Dispatcher) DispatchTraced(tenantID string, ids []string, traceparent string) {
	if len(ids) == 0 {
		return
	}
	d.start()
	for i, id := range ids {
		if !d.loop.TryAdd(dispatchItem{tenantID, id, traceparent}) {
			// Full (or flushed): the rest goes out from here, in one task.
			b := dispatchBatch{tenantID: tenantID}
			for _, id := range ids[i:] {
				b.add(id, traceparent)
			}
			d.enqueue(b)
			return
		}
	}
}

// Flush enqueues what is waiting and stops the batching; later Dispatch
// calls enqueue inline. ctx bounds the wait (what is left, the sweeper
// finds).
func (d *Dispatcher) Flush(ctx context.Context) {
	d.start()
	_ = d.loop.Close(ctx)
}

// enqueue queues one batch task; an error is left to the sweeper.
func (d *Dispatcher) enqueue(b dispatchBatch) {
	ctx, cancel := context.WithTimeout(context.Background(), d.Timeout)
	defer cancel()
	t, opts := newBatchTask(BatchPayload{TenantID: b.tenantID, IDs: b.ids, Traces: b.traces})
	if _, err := d.Queue.EnqueueContext(ctx, t, opts...); err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		d.failure(len(b.ids), err)
	}
}

// failure counts deliveries whose enqueue failed and writes one warning
// per WarnEvery with the count, not one per delivery (a Redis outage
// under load would otherwise flood the log).
func (d *Dispatcher) failure(n int, err error) {
	d.failMu.Lock()
	d.failed += n
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
