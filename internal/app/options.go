package app

import "time"

// Option tunes the application at construction (app.Open): what a
// command's flags or a test change is given to the services as they are
// built, never assigned to them afterwards.
type Option func(*options)

type options struct {
	now func() time.Time
	// The worker's batches (webhooks.Processor); zero: its defaults.
	batch, runners int
	gather         time.Duration
	assignInTx     bool
	// The webhook claimer's batches (webhooks.Claimer); zero: its defaults.
	claimWorkers int
	claimStagger time.Duration
}

// WithClock gives every service this clock instead of time.Now (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithBatch sets how many deliveries one processing transaction takes at
// most (cmd/worker -batch; 0: the default, 128).
func WithBatch(n int) Option { return func(o *options) { o.batch = n } }

// WithRunners sets how many processing transactions run at once while
// batches are full (cmd/worker -runners; 0: the default, 2).
func WithRunners(n int) Option { return func(o *options) { o.runners = n } }

// WithGather sets how long a batch waits for more deliveries after its
// first (cmd/worker -gather; 0: the default, 20 ms; negative: never).
func WithGather(d time.Duration) Option { return func(o *options) { o.gather = d } }

// WithAssignInTx makes a batch take its round-robin positions in its own
// transaction instead of apart (benchingest -assign-intx compares them).
func WithAssignInTx(on bool) Option { return func(o *options) { o.assignInTx = on } }

// WithClaimer sets the webhook claimer's batches in flight and how long
// one runs before another starts beside it (benchingest; 0: defaults).
func WithClaimer(workers int, stagger time.Duration) Option {
	return func(o *options) { o.claimWorkers, o.claimStagger = workers, stagger }
}
