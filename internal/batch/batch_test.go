package batch_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/batch"
)

// recorder runs batches, remembering their sizes and the most that ran at
// once; hold, when set, blocks each batch until it is closed.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	running atomic.Int32
	most    atomic.Int32
	hold    chan struct{}
}

func (r *recorder) run(b []int) {
	n := r.running.Add(1)
	for {
		m := r.most.Load()
		if n <= m || r.most.CompareAndSwap(m, n) {
			break
		}
	}
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	r.batches = append(r.batches, b)
	r.mu.Unlock()
	r.running.Add(-1)
}

func (r *recorder) snapshot() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]int(nil), r.batches...)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Every item added by many goroutines runs exactly once, in batches within
// the caps, never more than Workers at once; Close runs what waits.
func TestEveryItemOnceWithinCaps(t *testing.T) {
	for _, opt := range []batch.Options{
		{MaxItems: 16, Workers: 2, Beside: 2 * time.Millisecond},                  // the claimer's shape
		{MaxItems: 16, Workers: 2, Linger: time.Millisecond, Beside: batch.Never}, // the processor's
		{MaxItems: 16, Workers: 4, Linger: time.Millisecond},                      // the dispatcher's
		{MaxItems: 16, MaxBytes: 40, Workers: 3},
	} {
		r := &recorder{}
		l := batch.New(opt, func(v int) int { return 10 }, r.run)
		const adders, each = 8, 500
		var wg sync.WaitGroup
		for a := 0; a < adders; a++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if err := l.Add(context.Background(), a*each+i); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		seen := map[int]int{}
		for _, b := range r.snapshot() {
			if len(b) == 0 || len(b) > opt.MaxItems || (opt.MaxBytes > 0 && len(b) > opt.MaxBytes/10) {
				t.Fatalf("%+v: batch of %d items", opt, len(b))
			}
			for _, v := range b {
				seen[v]++
			}
		}
		if len(seen) != adders*each {
			t.Fatalf("%+v: %d distinct items ran, want %d", opt, len(seen), adders*each)
		}
		for v, n := range seen {
			if n != 1 {
				t.Fatalf("%+v: item %d ran %d times", opt, v, n)
			}
		}
		if m := r.most.Load(); int(m) > opt.Workers {
			t.Fatalf("%+v: %d batches ran at once", opt, m)
		}
		if l.TryAdd(1) || l.Add(context.Background(), 1) != batch.ErrClosed {
			t.Fatal("a closed loop took an item")
		}
	}
}

// Without Linger a lone item goes out at once; with it, items added within
// the linger share one batch.
func TestLinger(t *testing.T) {
	r := &recorder{}
	l := batch.New(batch.Options{}, nil, r.run)
	t0 := time.Now()
	_ = l.Add(context.Background(), 1)
	waitFor(t, "the lone item", func() bool { return len(r.snapshot()) == 1 })
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("a lone item waited %v", d)
	}
	_ = l.Close(context.Background())

	r = &recorder{}
	l = batch.New(batch.Options{Linger: 200 * time.Millisecond}, nil, r.run)
	for i := 0; i < 3; i++ {
		_ = l.Add(context.Background(), i)
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, "the lingering batch", func() bool { return len(r.snapshot()) == 1 })
	if b := r.snapshot()[0]; len(b) != 3 {
		t.Fatalf("linger batch %v, want 3 items", b)
	}
	_ = l.Close(context.Background())
}

// Beside: a batch that is not full waits while another runs (Never) or
// until the one in flight has run for Beside; a full one starts at once.
func TestBeside(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	l := batch.New(batch.Options{MaxItems: 4, Workers: 2, Beside: batch.Never}, nil, r.run)
	_ = l.Add(context.Background(), 0)
	waitFor(t, "the first batch to run", func() bool { return r.running.Load() == 1 })
	for i := 1; i <= 3; i++ { // not full: waits for the first
		_ = l.Add(context.Background(), i)
	}
	time.Sleep(50 * time.Millisecond)
	if n := r.running.Load(); n != 1 {
		t.Fatalf("a batch that is not full started beside (%d running)", n)
	}
	_ = l.Add(context.Background(), 4) // now full: starts beside
	waitFor(t, "the full batch beside", func() bool { return r.running.Load() == 2 })
	close(r.hold)
	_ = l.Close(context.Background())
	if got := r.snapshot(); len(got) != 2 || len(got[0])+len(got[1]) != 5 {
		t.Fatalf("batches %v", got)
	}

	r = &recorder{hold: make(chan struct{})}
	l = batch.New(batch.Options{MaxItems: 100, Workers: 2, Beside: 30 * time.Millisecond}, nil, r.run)
	t0 := time.Now() // the first batch starts after this
	_ = l.Add(context.Background(), 0)
	waitFor(t, "the first batch to run", func() bool { return r.running.Load() == 1 })
	_ = l.Add(context.Background(), 1)
	waitFor(t, "the second batch beside", func() bool { return r.running.Load() == 2 })
	if d := time.Since(t0); d < 30*time.Millisecond {
		t.Fatalf("the second batch started after %v, before Beside", d)
	}
	close(r.hold)
	_ = l.Close(context.Background())
}

// TryAdd refuses when the buffer is full: the caller's back-pressure.
func TestTryAddWhenFull(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	l := batch.New(batch.Options{MaxItems: 1, Workers: 1, Buffer: 2}, nil, r.run)
	_ = l.Add(context.Background(), 0)
	waitFor(t, "the first batch to run", func() bool { return r.running.Load() == 1 })
	took := 0
	for i := 0; i < 10; i++ {
		if l.TryAdd(i) {
			took++
		}
	}
	// Two in the buffer and one held by the loop as its next batch.
	if took > 3 {
		t.Fatalf("TryAdd took %d items with a buffer of 2", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Add(ctx, 99); err == nil && took == 3 {
		t.Fatal("Add did not wait on a full buffer")
	}
	close(r.hold)
	_ = l.Close(context.Background())
}
