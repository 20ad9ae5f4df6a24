package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
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
	// second's budget from acknowledgement to a readable lead. At 1,337
	// deliveries/s on 2 cores, 20 ms instead of 5 ms cut Redis's CPU per
	// lead from 45 to 31 µs and the worker's from 170 to 160 µs (fewer,
	// fuller tasks), and the lead was readable about as soon (median
	// 92–112 ms against 85–105 ms): the worker's batch gathers 20 ms
	// anyway (benchingest -e2e -phases d -rate 1337).
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

	once   sync.Once
	mu     sync.RWMutex
	closed bool
	ch     chan dispatchItem
	out    chan dispatchBatch
	wg     sync.WaitGroup
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
		d.ch = make(chan dispatchItem, d.Buffer)
		d.out = make(chan dispatchBatch, d.Workers)
		d.wg.Add(1 + d.Workers)
		go func() {
			defer d.wg.Done()
			d.gather()
			close(d.out)
		}()
		for i := 0; i < d.Workers; i++ {
			go func() {
				defer d.wg.Done()
				for b := range d.out {
					d.enqueue(b)
				}
			}()
		}
	})
}

// gather forms the batches: from the first delivery waiting, it collects
// for Linger (or until MaxBatch deliveries), then hands over one batch
// per tenant, in chunks of MaxBatch.
func (d *Dispatcher) gather() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		first, ok := <-d.ch
		if !ok {
			return
		}
		first0 := &dispatchBatch{tenantID: first.tenantID}
		first0.add(first.id, first.trace)
		byTenant := map[string]*dispatchBatch{first.tenantID: first0}
		order := []string{first.tenantID}
		n := 1
		timer.Reset(d.Linger)
		open := true
	collect:
		for n < d.MaxBatch {
			select {
			case it, ok := <-d.ch:
				if !ok {
					open = false
					break collect
				}
				b, seen := byTenant[it.tenantID]
				if !seen {
					b = &dispatchBatch{tenantID: it.tenantID}
					byTenant[it.tenantID] = b
					order = append(order, it.tenantID)
				}
				b.add(it.id, it.trace)
				n++
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		for _, tenantID := range order {
			b := byTenant[tenantID]
			for len(b.ids) > 0 {
				k := min(len(b.ids), d.MaxBatch)
				out := dispatchBatch{tenantID: tenantID, ids: b.ids[:k]}
				if b.traces != nil {
					out.traces, b.traces = b.traces[:k], b.traces[k:]
				}
				d.out <- out
				b.ids = b.ids[k:]
			}
		}
		if !open {
			return
		}
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
	d.mu.RLock()
	defer d.mu.RUnlock()
	inline := func(ids []string) {
		b := dispatchBatch{tenantID: tenantID}
		for _, id := range ids {
			b.add(id, traceparent)
		}
		d.enqueue(b)
	}
	if d.closed {
		inline(ids)
		return
	}
	for i, id := range ids {
		select {
		case d.ch <- dispatchItem{tenantID, id, traceparent}:
		default:
			// Full: the rest goes out from here, in one task.
			inline(ids[i:])
			return
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
