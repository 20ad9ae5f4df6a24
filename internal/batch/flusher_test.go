package batch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestFlusher: flushes run on the interval until Stop, each with a
// bounded context; failures reach failed; Stop waits for a flush in
// progress and nothing runs after it; Start twice runs one loop; Stop
// without Start, and twice, returns.
func TestFlusher(t *testing.T) {
	var f Flusher
	var calls, running, overlap, afterStop atomic.Int32
	var stopped atomic.Bool
	var failures atomic.Int32
	errBoom := errors.New("boom")
	flush := func(ctx context.Context) error {
		if stopped.Load() {
			afterStop.Add(1)
		}
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		defer running.Add(-1)
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > FlushTimeout {
			t.Errorf("a flush without its bound: %v %v", dl, ok)
		}
		time.Sleep(3 * time.Millisecond)
		if calls.Add(1)%2 == 0 {
			return errBoom
		}
		return nil
	}
	failed := func(err error) {
		if !errors.Is(err, errBoom) {
			t.Errorf("failed got %v", err)
		}
		failures.Add(1)
	}
	f.Start(5*time.Millisecond, flush, failed)
	f.Start(5*time.Millisecond, flush, failed) // no second loop
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 6 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	f.Stop()
	stopped.Store(true)
	n := calls.Load()
	time.Sleep(30 * time.Millisecond)
	if n < 6 {
		t.Fatalf("%d flushes in 5 s", n)
	}
	if calls.Load() != n || afterStop.Load() != 0 {
		t.Errorf("flushes after Stop: %d then %d", n, calls.Load())
	}
	if overlap.Load() != 0 {
		t.Errorf("%d flushes overlapped", overlap.Load())
	}
	if got, want := failures.Load(), n/2; got != want {
		t.Errorf("failures %d, want %d", got, want)
	}
	f.Stop()
	f.Start(time.Millisecond, flush, failed) // after Stop: nothing
	time.Sleep(10 * time.Millisecond)
	if calls.Load() != n {
		t.Error("Start after Stop ran a flush")
	}
	var never Flusher
	never.Stop()
}
