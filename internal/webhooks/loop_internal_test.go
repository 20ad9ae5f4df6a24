package webhooks

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/batch"
)

// The batch loop's rule: a batch that is not full never runs beside
// another (a steady load leaves the database's other core to ingest);
// full batches (a backlog) run up to Runners at once; no batch exceeds
// MaxBatch, and every delivery goes into exactly one batch.
func TestBatchLoopRunsPartialBatchesAloneAndFullOnesSideBySide(t *testing.T) {
	p := &Processor{MaxBatch: 8, Runners: 2, Gather: 50 * time.Millisecond}
	var mu sync.Mutex
	inflight, maxFull, maxPartialBeside := 0, 0, 0
	seen := map[string]int{}
	var batches []int
	release := make(chan struct{})
	run := func(b []*processReq) {
		mu.Lock()
		inflight++
		full := len(b) == p.MaxBatch
		if full {
			maxFull = max(maxFull, inflight)
		} else if inflight > 1 {
			maxPartialBeside = max(maxPartialBeside, inflight)
		}
		batches = append(batches, len(b))
		for _, r := range b {
			seen[r.id]++
		}
		mu.Unlock()
		<-release // held until the test lets batches finish
		mu.Lock()
		inflight--
		mu.Unlock()
	}
	loop := batch.New(p.loopOptions(), nil, run)
	send := func(from, n int) {
		for i := from; i < from+n; i++ {
			_ = loop.Add(context.Background(), &processReq{id: fmt.Sprint(i)})
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	inFlight := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return inflight == n }
	}

	// A backlog: 40 waiting at once make full batches, two in flight.
	send(0, 40)
	waitFor("two full batches in flight", inFlight(2))
	time.Sleep(100 * time.Millisecond) // a third would have started by now
	if !inFlight(2)() {
		t.Fatal("more than Runners batches in flight")
	}
	// Let batches finish one by one until all 40 ran.
	for done := false; !done; {
		select {
		case release <- struct{}{}:
		case <-time.After(time.Millisecond):
		}
		mu.Lock()
		done = len(seen) == 40 && inflight == 0
		mu.Unlock()
	}

	// A trickle: one delivery, then more while it runs; they gather into
	// the next batch, which waits for the first to finish.
	send(100, 1)
	waitFor("the lone batch in flight", inFlight(1))
	send(101, 3)
	time.Sleep(100 * time.Millisecond) // past their Gather: they wait for the first
	if !inFlight(1)() {
		t.Fatal("a partial batch started beside another")
	}
	release <- struct{}{}
	waitFor("the gathered batch in flight", inFlight(1))
	release <- struct{}{}
	waitFor("all done", inFlight(0))

	mu.Lock()
	defer mu.Unlock()
	if maxFull != 2 || maxPartialBeside != 0 {
		t.Fatalf("full batches at once %d (want 2), partial batches beside another %d (want 0); batches %v", maxFull, maxPartialBeside, batches)
	}
	for _, n := range batches {
		if n > p.MaxBatch {
			t.Fatalf("a batch of %d, MaxBatch %d", n, p.MaxBatch)
		}
	}
	if len(seen) != 44 {
		t.Fatalf("%d deliveries ran, want 44", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("delivery %s in %d batches", id, n)
		}
	}
	if last := batches[len(batches)-1]; last != 3 {
		t.Fatalf("the deliveries sent while the lone one ran made a batch of %d, want 3 (batches %v)", last, batches)
	}
}
