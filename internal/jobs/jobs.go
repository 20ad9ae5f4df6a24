// Package jobs runs Asynq: the worker server with every subsystem's task
// handlers, and a scheduler that enqueues periodic tasks once per window.
// The scheduler is elected through a Redis lease so one process runs it;
// TaskIDs per window make a second scheduler (a lease handover, a split
// brain) harmless anyway.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Queues, by priority.
const (
	QueueCritical = "critical" // deliveries
	QueueDefault  = "default"
	QueueLow      = "low" // reconcile, purges
)

// Periodic is a task enqueued once per window of Every.
type Periodic struct {
	Type    string
	Every   time.Duration
	Queue   string
	Payload func(window time.Time) []byte
}

// Handler is one task type's handler.
type Handler struct {
	Type    string
	Handler asynq.HandlerFunc
}

// Registry collects handlers and periodic tasks from the subsystems.
type Registry struct {
	mu        sync.Mutex
	handlers  []Handler
	periodics []Periodic
	failures  map[string]FailureHook
}

// FailureHook sees every failed run of a task type (Asynq's error handler);
// FinalFailure tells whether it was the last one.
type FailureHook func(ctx context.Context, t *asynq.Task, err error)

// OnFailure registers the failure hook of a task type.
func (r *Registry) OnFailure(typ string, h FailureHook) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[string]FailureHook{}
	}
	r.failures[typ] = h
}

// FailureHooks returns one hook dispatching to each type's registered hook.
func (r *Registry) FailureHooks() FailureHook {
	r.mu.Lock()
	hooks := make(map[string]FailureHook, len(r.failures))
	for k, v := range r.failures {
		hooks[k] = v
	}
	r.mu.Unlock()
	return func(ctx context.Context, t *asynq.Task, err error) {
		if h := hooks[t.Type()]; h != nil {
			h(ctx, t, err)
		}
	}
}

// FinalFailure reports whether a failed run (seen in the error handler) was
// the task's last: Asynq archives it next (retries used up, or SkipRetry)
// instead of retrying. A revoked task is neither retried nor archived.
func FinalFailure(ctx context.Context, err error) bool {
	if errors.Is(err, asynq.RevokeTask) {
		return false
	}
	if errors.Is(err, asynq.SkipRetry) {
		return true
	}
	retried, ok1 := asynq.GetRetryCount(ctx)
	maxRetry, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && retried >= maxRetry
}

// Handle registers a task handler.
func (r *Registry) Handle(typ string, h asynq.HandlerFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers = append(r.handlers, Handler{Type: typ, Handler: h})
}

// HandleEvery registers the handler of a periodic task and runs it every
// interval on queue.
func (r *Registry) HandleEvery(typ string, h asynq.HandlerFunc, every time.Duration, queue string) {
	r.Handle(typ, h)
	r.Every(Periodic{Type: typ, Every: every, Queue: queue})
}

// Every registers a periodic task.
func (r *Registry) Every(p Periodic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.periodics = append(r.periodics, p)
}

// Mux builds the Asynq mux.
func (r *Registry) Mux() *asynq.ServeMux {
	r.mu.Lock()
	defer r.mu.Unlock()
	mux := asynq.NewServeMux()
	for _, h := range r.handlers {
		mux.HandleFunc(h.Type, h.Handler)
	}
	return mux
}

// Periodics returns the registered periodic tasks.
func (r *Registry) Periodics() []Periodic {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Periodic(nil), r.periodics...)
}

// slogAdapter adapts Asynq's printf-style logger to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a slogAdapter) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a slogAdapter) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a slogAdapter) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a slogAdapter) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }

// NewServer returns the Asynq server for Leadpipe's queues.
func NewServer(opt asynq.RedisConnOpt, log *slog.Logger, concurrency int) *asynq.Server {
	return NewServerWith(opt, log, concurrency, nil)
}

// NewServerWith is NewServer with a failure hook (Registry.FailureHooks)
// called for every failed run before Asynq retries or archives the task.
func NewServerWith(opt asynq.RedisConnOpt, log *slog.Logger, concurrency int, onFailure FailureHook) *asynq.Server {
	if concurrency <= 0 {
		concurrency = 16
	}
	return asynq.NewServer(opt, asynq.Config{
		Concurrency:       concurrency,
		Queues:            map[string]int{QueueCritical: 6, QueueDefault: 3, QueueLow: 1},
		TaskCheckInterval: TaskCheckInterval,
		Logger:            slogAdapter{log.With("component", "asynq")},
		LogLevel:          asynq.WarnLevel,
		ShutdownTimeout:   10 * time.Second,
		RetryDelayFunc: func(n int, err error, t *asynq.Task) time.Duration {
			// Exponential with full jitter, 1 s .. 10 min.
			max := time.Second << min(n, 10)
			if max > 10*time.Minute {
				max = 10 * time.Minute
			}
			return time.Duration(float64(max) * rand.Float64())
		},
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			retried, _ := asynq.GetRetryCount(ctx)
			maxRetry, _ := asynq.GetMaxRetry(ctx)
			log.Warn("task failed", "type", t.Type(), "retry", retried, "max_retry", maxRetry, "final", FinalFailure(ctx, err), "err", err)
			if onFailure != nil {
				onFailure(ctx, t, err)
			}
		}),
	})
}

// Scheduler enqueues periodic tasks while it holds the leader lease.
type Scheduler struct {
	Client    *asynq.Client
	Redis     redis.UniversalClient
	Log       *slog.Logger
	Periodics []Periodic
	LeaseKey  string
	Lease     time.Duration
	Tick      time.Duration
	ID        string
	Now       func() time.Time
}

var errNotLeader = errors.New("not leader")

// Run blocks until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.Lease == 0 {
		s.Lease = 15 * time.Second
	}
	if s.Tick == 0 {
		s.Tick = time.Second
	}
	if s.LeaseKey == "" {
		s.LeaseKey = "leadpipe:scheduler:leader"
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	t := time.NewTicker(s.Tick)
	defer t.Stop()
	leader := false
	lastRenew := time.Time{}
	for {
		if time.Since(lastRenew) > s.Lease/3 {
			ok, err := s.holdLease(ctx, leader)
			if err != nil {
				s.Log.Warn("scheduler lease", "err", err)
			}
			if ok != leader {
				s.Log.Info("scheduler leadership changed", "leader", ok, "id", s.ID)
			}
			leader = ok
			lastRenew = time.Now()
		}
		if leader {
			s.EnqueueDue(ctx)
		}
		select {
		case <-ctx.Done():
			if leader {
				s.release()
			}
			return nil
		case <-t.C:
		}
	}
}

var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

func (s *Scheduler) holdLease(ctx context.Context, leader bool) (bool, error) {
	ms := strconv.FormatInt(s.Lease.Milliseconds(), 10)
	if leader {
		n, err := renewScript.Run(ctx, s.Redis, []string{s.LeaseKey}, s.ID, ms).Int()
		if err == nil && n == 1 {
			return true, nil
		}
	}
	ok, err := s.Redis.SetNX(ctx, s.LeaseKey, s.ID, s.Lease).Result()
	return ok, err
}

var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

func (s *Scheduler) release() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = releaseScript.Run(ctx, s.Redis, []string{s.LeaseKey}, s.ID).Err()
}

// EnqueueDue enqueues every periodic task whose current window has not
// been enqueued yet. The TaskID names the window, so any number of callers
// enqueue each window once (Asynq answers ErrTaskIDConflict to the rest).
func (s *Scheduler) EnqueueDue(ctx context.Context) {
	now := s.Now()
	for _, p := range s.Periodics {
		window := now.Truncate(p.Every)
		var payload []byte
		if p.Payload != nil {
			payload = p.Payload(window)
		}
		q := p.Queue
		if q == "" {
			q = QueueDefault
		}
		_, err := s.Client.EnqueueContext(ctx, asynq.NewTask(p.Type, payload),
			asynq.TaskID(p.Type+":"+strconv.FormatInt(window.Unix(), 10)),
			asynq.Queue(q), asynq.MaxRetry(2), asynq.Timeout(p.Every+time.Minute),
			asynq.Retention(2*p.Every))
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) && !errors.Is(err, asynq.ErrDuplicateTask) {
			s.Log.Warn("enqueue periodic task", "type", p.Type, "err", err)
		}
	}
}

// TaskCheckInterval is how long an Asynq server sleeps after it found
// every queue empty. Asynq's default (1 s) makes a task enqueued into an
// idle queue wait up to a second: a lead's first processing, and every
// event delivery of an endpoint whose in-flight limit was just freed. One
// empty dequeue every 20 ms costs Redis next to nothing.
const TaskCheckInterval = 20 * time.Millisecond

// NewEventsServer is a separate Asynq server for one queue of network-bound
// tasks (outbound webhook attempts): their workers never compete with the
// ones processing inbound deliveries.
func NewEventsServer(opt asynq.RedisConnOpt, log *slog.Logger, concurrency int, queue string) *asynq.Server {
	return asynq.NewServer(opt, asynq.Config{
		Concurrency:       concurrency,
		Queues:            map[string]int{queue: 1},
		TaskCheckInterval: TaskCheckInterval,
		Logger:            slogAdapter{log.With("component", "asynq", "queue", queue)},
		LogLevel:          asynq.WarnLevel,
		ShutdownTimeout:   20 * time.Second,
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			log.Warn("task failed", "type", t.Type(), "queue", queue, "err", err)
		}),
	})
}
