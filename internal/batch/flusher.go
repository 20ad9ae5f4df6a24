package batch

import (
	"context"
	"sync"
	"time"
)

// FlushTimeout bounds one flush of a Flusher.
const FlushTimeout = 10 * time.Second

// Flusher is the one background flush loop of the buffers that write to
// the database behind the request path (the monitor's counters, the
// rejected-request samples, the duplicates' tallies and sightings): from
// Start until Stop it calls flush every interval, each call with a context
// of its own bounded by FlushTimeout, and hands a failure to failed (nil:
// ignored). What a flush could not write stays with its owner for the next
// tick; the owner's last flush at shutdown is its own (after Stop).
//
// The zero Flusher is ready. Start after the first does nothing; Stop
// without a Start returns at once; Stop waits for a flush in progress, so
// no flush runs after it returns.
type Flusher struct {
	mu      sync.Mutex
	started bool
	stopped bool
	stop    chan struct{}
	done    chan struct{}
}

// Start runs flush every interval on a goroutine of its own.
func (f *Flusher) Start(interval time.Duration, flush func(context.Context) error, failed func(error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.stopped {
		return
	}
	f.started = true
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
			err := flush(ctx)
			cancel()
			if err != nil && failed != nil {
				failed(err)
			}
		}
	}()
}

// Stop ends the loop and waits for a flush in progress. Later calls, and
// a Start after it, do nothing.
func (f *Flusher) Stop() {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return
	}
	f.stopped = true
	started := f.started
	f.mu.Unlock()
	if started {
		close(f.stop)
		<-f.done
	}
}
