// Package fakesleep stands in for the sleep of a retrying client, so a
// test's backoff costs no wall time and the waits asked for can be
// checked. It imports nothing of the application: the packages apptest
// starts can use it in their own tests.
package fakesleep

import (
	"context"
	"sync"
	"time"
)

// Recorder records every wait asked of Sleep; its zero value is ready.
type Recorder struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once, with ctx's error.
func (r *Recorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
	return ctx.Err()
}

// All is a copy of the waits recorded so far, in order.
func (r *Recorder) All() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.d...)
}
