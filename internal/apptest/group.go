package apptest

import (
	"sync"
	"testing"
)

// Group runs the calls of a race at once and fails the test with every
// error they returned. The calls run on other goroutines, so they report
// by returning an error, never by t.Fatal.
type Group struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// Go runs f on a goroutine of its own.
func (g *Group) Go(f func() error) {
	g.wg.Go(func() {
		if err := f(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	})
}

// Wait waits for every call and, if any failed, reports each error and
// stops the test.
func (g *Group) Wait(t testing.TB) {
	t.Helper()
	g.wg.Wait()
	for _, err := range g.errs {
		t.Error(err)
	}
	if len(g.errs) > 0 {
		t.FailNow()
	}
}

// FanOut hands f(0) … f(n-1), in order, to workers goroutines at once and
// waits for them: a fixed number of senders, however many requests.
func FanOut(n, workers int, f func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				f(i)
			}
		})
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}
