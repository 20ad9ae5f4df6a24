// Package batch is the one batching loop of the ingest machinery: callers
// add items one at a time; a single goroutine forms batches from them and
// runs each with the caller's function, several side by side at most.
// The claimer (group commit of delivery claims), the worker's processor
// (one transaction per batch of deliveries), the dispatcher (one Asynq
// task per batch of fresh deliveries) and the Redis pipeline (one round
// trip per group of EVALSHAs) are this loop with different Options; the
// measurements behind each setting are in docs/BENCHMARKS.md.
package batch

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"
)

// Never, as Options.Beside, lets a batch start beside one in flight only
// when it is full.
const Never = time.Duration(math.MaxInt64)

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("batch: closed")

// Options shape the batches. Zero values take the defaults named.
type Options struct {
	// MaxItems caps a batch's items (default 128); MaxBytes its summed
	// Size (0: no cap).
	MaxItems int
	MaxBytes int
	// Linger is how long a batch gathers after its first item. 0: a batch
	// takes what is waiting and no more (a lone item goes out at once).
	Linger time.Duration
	// Workers is how many batches may run at once (default 1).
	Workers int
	// Beside is how long the oldest batch in flight must have run before
	// a batch that is not full starts beside it; until then the next
	// batch goes on gathering (larger batches, fewer statements). 0: at
	// once; Never: only a full batch starts beside another. A full batch
	// starts as soon as fewer than Workers run.
	Beside time.Duration
	// Buffer is how many items may wait for a batch (default 1024); Add
	// blocks and TryAdd fails while it is full.
	Buffer int
}

// Loop forms batches of T and runs them with run, which owns the slice.
type Loop[T any] struct {
	opt  Options
	size func(T) int
	run  func([]T)

	in   chan T
	done chan time.Time // a finished batch's start time
	mu   sync.RWMutex   // closed and sends on in
	shut bool
	wg   sync.WaitGroup // the loop and the batches in flight
}

// New starts a loop; size (nil: 0) is an item's share of MaxBytes.
func New[T any](opt Options, size func(T) int, run func([]T)) *Loop[T] {
	if opt.MaxItems <= 0 {
		opt.MaxItems = 128
	}
	if opt.Workers <= 0 {
		opt.Workers = 1
	}
	if opt.Buffer <= 0 {
		opt.Buffer = 1024
	}
	if size == nil {
		size = func(T) int { return 0 }
	}
	l := &Loop[T]{opt: opt, size: size, run: run, in: make(chan T, opt.Buffer), done: make(chan time.Time, opt.Workers)}
	l.wg.Add(1)
	go l.loop()
	return l
}

// Add queues v, waiting while the buffer is full (or until ctx ends).
func (l *Loop[T]) Add(ctx context.Context, v T) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.shut {
		return ErrClosed
	}
	select {
	case l.in <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAdd queues v unless the buffer is full or the loop is closed.
func (l *Loop[T]) TryAdd(v T) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.shut {
		return false
	}
	select {
	case l.in <- v:
		return true
	default:
		return false
	}
}

// Close stops taking items, runs every batch still waiting and returns
// when the last one has finished (or ctx ends first).
func (l *Loop[T]) Close(ctx context.Context) error {
	l.mu.Lock()
	if !l.shut {
		l.shut = true
		close(l.in)
	}
	l.mu.Unlock()
	finished := make(chan struct{})
	go func() { l.wg.Wait(); close(finished) }()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop[T]) loop() {
	defer l.wg.Done()
	var (
		inflight []time.Time // start times of the batches in flight
		batch    []T
		bytes    int
		open     = true
		lingerT  = time.NewTimer(time.Hour)
		besideT  = time.NewTimer(time.Hour)
	)
	lingerT.Stop()
	besideT.Stop()
	finished := func(started time.Time) {
		if i := slices.IndexFunc(inflight, started.Equal); i >= 0 {
			inflight = slices.Delete(inflight, i, i+1)
		}
	}
	full := func() bool {
		return len(batch) >= l.opt.MaxItems || (l.opt.MaxBytes > 0 && bytes >= l.opt.MaxBytes)
	}
	add := func(v T) {
		batch = append(batch, v)
		bytes += l.size(v)
	}
	for {
		if len(batch) == 0 {
			if !open {
				for range inflight {
					<-l.done
				}
				return
			}
			select {
			case v, ok := <-l.in:
				if !ok {
					open = false
					continue
				}
				add(v)
			case t := <-l.done:
				finished(t)
				continue
			}
			if l.opt.Linger > 0 {
				lingerT.Reset(l.opt.Linger)
			}
		}
		gathering := l.opt.Linger > 0
		for {
			// Whatever is already waiting joins at once.
		fill:
			for open && !full() {
				select {
				case v, ok := <-l.in:
					if !ok {
						open = false
						break fill
					}
					add(v)
				default:
					break fill
				}
			}
			if full() || !open {
				if gathering {
					lingerT.Stop()
					gathering = false
				}
			}
			// Start now, or wait: until one finishes (blocked) or until a
			// batch that is not full may start beside (wait > 0).
			blocked, wait := false, time.Duration(0)
			if !gathering {
				switch {
				case len(inflight) == 0:
				case len(inflight) >= l.opt.Workers:
					blocked = true
				case full() || !open:
				case l.opt.Beside == Never:
					blocked = true
				default:
					wait = l.opt.Beside - time.Since(slices.MinFunc(inflight, time.Time.Compare))
				}
				if !blocked && wait <= 0 {
					break
				}
			}
			in := l.in
			if full() || !open {
				in = nil
			}
			var lingerC, besideC <-chan time.Time
			if gathering {
				lingerC = lingerT.C
			} else if wait > 0 {
				besideT.Reset(wait)
				besideC = besideT.C
			}
			select {
			case v, ok := <-in:
				if !ok {
					open = false
				} else {
					add(v)
				}
			case t := <-l.done:
				finished(t)
			case <-lingerC:
				gathering = false
			case <-besideC:
			}
			besideT.Stop()
		}
		b, started := batch, time.Now()
		batch, bytes = nil, 0
		inflight = append(inflight, started)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.run(b)
			l.done <- started
		}()
	}
}
