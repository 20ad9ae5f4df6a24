// Package app wires Leadpipe's parts together from a Config: database,
// Redis, services, HTTP routes, Asynq handlers and periodic tasks. Both
// cmd/server and cmd/worker build on it.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"leadpipe/internal/atrest"
	"leadpipe/internal/config"
	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/jobs"
	"leadpipe/internal/live"
	"leadpipe/internal/monitor"
	"leadpipe/internal/retention"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/tracing"
	"leadpipe/internal/web"
	"leadpipe/internal/webhooks"
)

// App holds every long-lived dependency.
type App struct {
	Cfg *config.Config
	Log *slog.Logger
	// now is the one clock every service is given (read through
	// clock.Read): time.Now, or WithClock's.
	now func() time.Time
	opt options
	DB  *sqlx.DB
	// OneTrip is a small pool for short transactions sent in one round
	// trip (db.OneTrip): the worker's round-robin reservations.
	OneTrip *sqlx.DB
	// Reads serves reads that tolerate lag (lists, charts, exports) from
	// the replica of LEADPIPE_MYSQL_READ_DSN when there is a usable one.
	Reads *db.Reads
	Box   *atrest.Box
	Redis asynq.RedisConnOpt    // Asynq's options for the configured Redis (one server, Sentinel or Cluster)
	RDB   redis.UniversalClient // made from Redis: follows a failover as Asynq does
	Queue *asynq.Client
	// QueueRedis is the Queue's Redis client (enqueues share pipelines).
	QueueRedis *jobs.PipelinedClient
	Jobs       *jobs.Registry

	Stats     monitor.Sink // the monitor's recorder
	Ingest    *webhooks.Ingest
	Processor *webhooks.Processor
	// dupFold folds the duplicate log into deliveries while the worker
	// runs (RunWorker).
	dupFold *webhooks.DupFolder

	Tenants *tenants.Service
	Sources *sources.Service
	Events  *events.Service
	// Retention is the retention settings and purge service.
	Retention *retention.Service
	Web       *web.Server
	// Live publishes lead events for open browsers; LiveHub streams them
	// (docs/ARCHITECTURE.md, "Live inbox").
	Live    *live.Publisher
	LiveHub *live.Hub

	closers  []func()
	flushers []func(context.Context)
}

// NewLogger builds the process logger from the configuration.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	// Safe to ignore: config.Load accepted only debug, info, warn or
	// error, and a failure would leave info.
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	// Lines logged with a traced context carry its trace_id and span_id.
	if cfg.LogFormat == "json" {
		return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(tracing.LogHandler(slog.NewTextHandler(w, opts)))
}

// Open connects to MySQL (creating the database if needed), applies
// migrations, connects Redis and builds every service, tuned by opts.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*App, error) {
	a := &App{Cfg: cfg, Log: log, now: time.Now, Jobs: &jobs.Registry{}}
	for _, o := range opts {
		o(&a.opt)
	}
	if a.opt.now != nil {
		a.now = a.opt.now
	}
	box, err := atrest.New(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	a.Box = box
	a.DB, err = db.Open(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() { a.closeLogged("mysql", a.DB.Close) })
	var replica *sqlx.DB
	if cfg.MySQLReadDSN != "" {
		if replica, err = db.OpenReplica(cfg.MySQLReadDSN); err != nil {
			a.Close()
			return nil, fmt.Errorf("LEADPIPE_MYSQL_READ_DSN: %w", err)
		}
		a.closers = append(a.closers, func() { a.closeLogged("mysql replica", replica.Close) })
	}
	a.Reads = db.NewReads(a.DB, replica, cfg.MySQLReadMaxLag)
	// A few connections for one-round-trip short transactions (the
	// worker's round-robin reservations, webhooks.Processor.Reserve).
	if a.OneTrip, err = db.OpenOneTrip(ctx, cfg.MySQLDSN, 8); err != nil {
		a.Close()
		return nil, err
	}
	a.closers = append(a.closers, func() { a.closeLogged("mysql one-trip pool", a.OneTrip.Close) })
	if err := db.Migrate(ctx, a.DB, log); err != nil {
		a.Close()
		return nil, err
	}
	a.Redis = jobs.RedisConnOpt(cfg.Redis)
	a.RDB = jobs.NewRedisClient(a.Redis)
	log.Debug("redis", "target", cfg.Redis.String())
	// Enqueues share pipelines (one round trip for tasks enqueued at the
	// same moment); the Asynq client uses the connection pool of a.RDB.
	// Enqueues happen after the answer: a 500 µs linger costs no sender
	// anything.
	a.QueueRedis = jobs.NewPipelinedClient(a.RDB, 1, 500*time.Microsecond)
	a.Queue = asynq.NewClientFromRedisClient(a.QueueRedis)
	a.closers = append(a.closers, func() {
		a.closeLogged("redis enqueue pipeline", a.QueueRedis.Close)
		a.closeLogged("redis", a.RDB.Close)
	})
	if err := a.claimRedis(ctx); err != nil {
		a.Close()
		return nil, err
	}

	if err := a.wire(ctx); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.Web.Check(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// claimRedis refuses to share the Redis database with another
// installation (another MySQL database): Asynq's queues are not
// namespaced, so the two would take each other's tasks.
func (a *App) claimRedis(ctx context.Context) error {
	id, err := db.InstallationID(ctx, a.DB)
	if err != nil {
		return err
	}
	desc := "database ?"
	if c, err := mysql.ParseDSN(a.Cfg.MySQLDSN); err == nil {
		desc = "database " + c.DBName + " on " + c.Addr
	}
	if host, err := os.Hostname(); err == nil {
		desc += ", started on " + host
	}
	claim, err := jobs.ClaimRedis(ctx, a.RDB, id, desc, a.Log)
	if err != nil {
		return fmt.Errorf("%w; this installation uses Redis %s", err, a.Cfg.Redis.String())
	}
	// Before the Redis client closes (closers run in reverse order).
	a.closers = append(a.closers, func() { claim.Release(context.Background()) })
	return nil
}

// ready names what is down, for /readyz.
func (a *App) ready(ctx context.Context) map[string]string {
	down := map[string]string{}
	if err := db.Ready(ctx, a.DB); err != nil {
		down["mysql"] = "unreachable or not ready"
	}
	if err := a.RDB.Ping(ctx).Err(); err != nil {
		down["redis"] = "unreachable"
	}
	return down
}

// Handler is the HTTP handler of the whole product.
func (a *App) Handler() http.Handler { return a.Web.Routes() }

// RunWorker runs the Asynq server and the (leader-elected) scheduler until
// ctx ends.
func (a *App) RunWorker(ctx context.Context, concurrency int) error {
	srv := jobs.NewServerWith(a.Redis, a.Log, concurrency, a.Jobs.FailureHooks())
	if err := srv.Start(a.Jobs.Mux()); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	stopEvents, err := a.runEvents(ctx)
	if err != nil {
		srv.Shutdown()
		return fmt.Errorf("worker: events: %w", err)
	}
	defer stopEvents()
	a.dupFold.Start(time.Second)
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.dupFold.Close(fctx); err != nil {
			// Safe: the counts stay in the log for the next worker.
			a.Log.Warn("folding the last duplicate counts failed", "err", err)
		}
	}()
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host" // the id only has to differ between schedulers; pid and time do that
	}
	sched := &jobs.Scheduler{Client: a.Queue, Redis: a.RDB, Log: a.Log.With("component", "scheduler"),
		Periodics: a.Jobs.Periodics(), ID: fmt.Sprintf("%s-%d-%d", host, os.Getpid(), time.Now().UnixNano()),
		LeaseKey: "leadpipe:scheduler:leader"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
			// The worker goes on handling tasks; another process's
			// scheduler (or this one's next start) enqueues the periodics.
			a.Log.Error("scheduler stopped", "err", err)
		}
	}()
	<-ctx.Done()
	srv.Shutdown()
	<-done
	return nil
}

// closeLogged closes one connection pool at exit, logging a failure: the
// process is stopping, so nothing is left to retry it, and the servers
// drop the connections when it is gone.
func (a *App) closeLogged(what string, close func() error) {
	if err := close(); err != nil {
		a.Log.Warn("closing "+what, "err", err)
	}
}

// Close releases connections.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// Shutdown flushes buffered work (counters) before Close.
func (a *App) Shutdown(ctx context.Context) {
	for _, f := range a.flushers {
		f(ctx)
	}
}
