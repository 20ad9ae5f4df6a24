package app

import (
	"context"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"

	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/forms"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/imports"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/outbound"
	"leadpipe/internal/privacy"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/rejections"
	"leadpipe/internal/retention"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/web"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// QueuesPath is where operators find the Asynq dashboard.
const QueuesPath = "/admin/queues"

// EventsConcurrency is the Asynq concurrency of the events queue's own
// server: delivery attempts wait on the network, and MaxInFlight (8) per
// endpoint keeps one slow endpoint to a few of these workers.
const EventsConcurrency = 64

// wire builds every service in dependency order, each complete when it is
// built (what it needs of another area is passed in as a small interface,
// never set afterwards), then the HTTP server from all of them, then the
// task handlers and periodic tasks.
func (a *App) wire(ctx context.Context) error {
	allowPrivate := a.Cfg.AllowPrivateTargets
	checkURL := func(u string) error { return outbound.CheckURL(u, allowPrivate) }

	// Counters first: ingest, reconcile and the monitor record into them.
	rec := a.startRecorder()
	a.Stats = rec
	a.Live, a.LiveHub = a.startLive()
	// Outbound events are written in the transaction of the change that
	// causes them, by whichever area makes it.
	outbox := &events.Outbox{Now: a.now}

	// Invitations and password resets write their message into the
	// e-mail outbox in the transaction that makes the link (wire_notify.go).
	a.Tenants = tenants.NewService(a.DB, a.now, tenants.WithLinks(a.Box.Key("leadpipe/user-links/v1"), notifyLinkIssued{now: a.now}))
	a.Sources = sources.NewService(a.DB, a.Box, a.Cfg.BaseURL, sources.Checks{
		ValidateConfig: kinds.ValidateConfig, ValidateSecret: kinds.ValidateSecret,
		GenerateSecret: generateSecret, CheckURL: checkURL,
	}, a.now)

	reads := webhooks.NewReads(a.DB)
	// Assignments write "assigned to you" into the e-mail outbox in their
	// own transaction (wire_notify.go).
	ls := leads.NewService(a.DB, reads, leadEvents{outbox}, leads.WithClock(a.now), leads.WithReads(a.Reads), a.liveLeads(), leads.WithNotifier(notifyAssigned{now: a.now}))
	nt, err := a.buildNotify(ls)
	if err != nil {
		return err
	}

	// The sla_breach rule counts overdue leads (ls).
	mon := monitor.NewService(a.DB, a.Tenants, a.Sources, rec, a.Log.With("component", "monitor"),
		ls, alertEvents{outbox}, a.now, monitor.WithReads(a.Reads))

	a.Events = &events.Service{
		DB: a.DB, Box: a.Box, Queue: a.Queue, Client: events.NewClient(allowPrivate), Now: a.now,
		Log: a.Log.With("component", "events"), CheckURL: checkURL, Alerts: mon,
		Tenants: func(ctx context.Context) ([]string, error) {
			var ids []string
			err := a.Tenants.ForEach(ctx, func(id string) error { ids = append(ids, id); return nil })
			return ids, err
		},
	}

	// Reconcile applies sender records through exactly the webhook path
	// (webhooks.Apply) and tells the leads service what changed.
	rc := &reconcile.Service{
		DB: a.DB, Sources: a.Sources, Queue: a.Queue, Stats: rec, Now: a.now, Leads: ls, Committed: a.liveIngest(),
		Client: outbound.New(outbound.Options{AllowPrivate: allowPrivate}),
		Log:    a.Log.With("component", "reconcile"),
	}

	in := a.buildIngest(ls, rc)
	a.Ingest, a.Processor, a.dupFold = in.ingest, in.processor, in.fold

	idemStore := idempotency.NewStore(a.DB, a.Cfg.IdempotencyTTL, a.Tenants.ForEach,
		a.Log.With("component", "idempotency"), a.now)

	a.Retention = retention.NewService(a.DB, a.Tenants.ForEach, RetentionPurgers(), a.Log.With("component", "retention"), a.now)

	// CSV imports apply their rows through the webhooks' batch upsert as
	// the tenant's import source; ls writes what they changed.
	imp := imports.NewService(a.DB, a.Sources, ls.WriteSenders, a.Queue, a.Tenants.ForEach,
		a.Log.With("component", "imports"), a.now)

	metrics := a.metricsHandler(rec)

	// Web forms store their submissions through the ingest's claim, as a
	// source of kind form (docs/FORMS.md).
	fs := forms.NewService(a.DB, a.Box, a.Sources, a.Tenants, a.Ingest, a.Ingest.Rejections, a.Stats, a.Cfg.BaseURL,
		a.Log.With("component", "forms"), forms.Options{Client: outbound.New(outbound.Options{AllowPrivate: allowPrivate,
			ConnectTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, MaxAttempts: 1}), Now: a.now, Redis: a.RDB})
	// Its rate limits count in memory between flushes to Redis: the last
	// counts are sent before Redis closes (closers run in reverse order).
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := fs.Close(ctx); err != nil {
			a.Log.Warn("form rate limits: the last counts did not reach Redis", "err", err)
		}
	})

	a.Web = &web.Server{
		Log: a.Log, Cfg: a.Cfg, Tenants: a.Tenants, Sources: a.Sources, Ready: a.ready,
		Leads: ls, Deliveries: reads, Monitor: mon, Reconcile: rc, Events: a.Events,
		Audit:       &audit.Service{DB: a.DB},
		Privacy:     privacy.NewService(a.DB, ls, a.Sources, a.now),
		Retention:   a.Retention,
		Rejections:  &rejections.Service{DB: a.DB, Now: a.now},
		Imports:     imp,
		Idem:        web.NewIdempotent(idemStore, a.Log),
		Forms:       fs,
		Notify:      nt,
		Hooks:       web.Hooks{In: a.Ingest, Log: a.Log, Cfg: a.Cfg},
		DeliveryOps: &webhooks.Admin{DB: a.DB, Sources: a.Sources, Processor: in.processor, Claimer: in.claimer},
		Metrics:     metrics,
		Extra:       a.operatorRoutes(),
		Live:        a.LiveHub,
	}

	a.registerTasks(mon, rc, idemStore, in.processor)
	a.registerImportTasks(imp)
	a.registerNotifyTasks(nt)
	a.registerRoutingTasks(ls)
	return nil
}

// generateSecret makes a fresh secret in a kind's format ("" when the
// kind has none to make).
func generateSecret(kind string) string {
	s, err := kinds.GenerateSecret(kind)
	if err != nil {
		return ""
	}
	return s
}

// leadEvents writes the leads service's events to the outbox.
type leadEvents struct{ o *events.Outbox }

func (e leadEvents) Emit(ctx context.Context, tx db.Ext, tenantID, typ string, l leads.Lead) error {
	return e.o.Emit(ctx, tx, tenantID, events.Event{Type: typ, ResourceID: l.ID, Data: l})
}

func (e leadEvents) Wants(ctx context.Context, x db.Ext, tenantID string) (func(string) bool, error) {
	return e.o.Wants(ctx, x, tenantID)
}

// alertEvents writes alert.fired to the outbox.
type alertEvents struct{ o *events.Outbox }

func (e alertEvents) AlertFired(ctx context.Context, tx db.Ext, tenantID string, al monitor.Alert) error {
	return e.o.Emit(ctx, tx, tenantID, events.Event{Type: events.AlertFired, ResourceID: al.ID, Data: al})
}

// startRecorder starts the monitor's counters (flushed each second, at
// shutdown and, last, before the database closes).
func (a *App) startRecorder() *monitor.Recorder {
	rec := monitor.NewRecorder(a.DB, a.Log.With("component", "monitor"))
	rec.Start()
	a.buffered(rec.Flush, rec.Close, "monitor: final flush failed; counters of the last seconds are lost")
	return rec
}

// buffered registers a buffer the database is written from: Shutdown
// flushes it, and Close (also without a Shutdown before it) stops it with
// a last write before the database closes (closers run in reverse order),
// logging lost at warning level when that fails.
func (a *App) buffered(flush, final func(context.Context) error, lost string) {
	a.flushers = append(a.flushers, func(ctx context.Context) {
		if err := flush(ctx); err != nil {
			// Not lost yet: Close writes the buffer once more.
			a.Log.Warn("flush at shutdown failed; retried when closing", "err", err)
		}
	})
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := final(ctx); err != nil {
			a.Log.Warn(lost, "err", err)
		}
	})
}

// ingestParts are the webhook path's pieces buildIngest makes.
type ingestParts struct {
	ingest    *webhooks.Ingest
	processor *webhooks.Processor
	claimer   *webhooks.Claimer
	fold      *webhooks.DupFolder
}

// buildIngest builds the webhook path (claimer, dispatcher, sightings,
// rejected-request sampler) and the worker's processor, which tells ls
// what each batch did and rc of each committed webhook upsert (Meta
// enrichment). It registers their flushes and closes with the App.
func (a *App) buildIngest(ls *leads.Service, rc *reconcile.Service) ingestParts {
	dispatch := &webhooks.Dispatcher{Queue: a.Queue, Log: a.Log}
	a.flushers = append(a.flushers, dispatch.Flush)
	// Duplicates are counted on their delivery by the claim itself; the
	// leads' times_seen follows within half a second.
	sightings := &webhooks.Sightings{DB: a.DB, Log: a.Log}
	sightings.Start()
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sightings.Close(ctx); err != nil {
			// Not lost for good: the counts stay on their deliveries
			// (dup_count), and the next duplicate of each moves them.
			a.Log.Warn("times_seen: the last sync failed", "err", err)
		}
	})
	// Duplicates answered from memory are written by the claimer's flush
	// (at shutdown before the sightings' last flush, which they feed).
	// Its closer runs before the sightings' (registered above), which
	// flush what the claimer's last write hands them.
	claimer := &webhooks.Claimer{DB: a.DB, OnDuplicates: sightings.Add, Memory: a.Cfg.DuplicateMemory, Log: a.Log,
		Workers: a.opt.claimWorkers, Stagger: a.opt.claimStagger}
	a.buffered(func(ctx context.Context) error {
		err := claimer.Shutdown(ctx)
		if err != nil {
			a.Log.Error("writing the last duplicate counts failed", "err", err)
		}
		return err
	}, claimer.Shutdown, "writing the last duplicate counts failed")
	a.flushers = append(a.flushers, func(ctx context.Context) {
		if err := sightings.Flush(ctx); err != nil {
			// Safe: the counts stay on their deliveries (dup_count) and
			// the sightings' last flush at Close moves them again.
			a.Log.Warn("sightings: flush at shutdown failed", "err", err)
		}
	})

	rejected := rejections.NewRecorder(a.DB, a.Log.With("component", "rejections"))
	rejected.Start()
	a.buffered(rejected.Flush, rejected.Close, "rejections: final flush failed; the last second's samples are lost")

	ingest := &webhooks.Ingest{DB: a.DB, Claimer: claimer, Sources: a.Sources,
		Dispatch: dispatch, Stats: a.Stats, Rejections: rejected, Log: a.Log, Now: a.now}
	processor := &webhooks.Processor{DB: a.DB, Reserve: a.OneTrip, Sources: a.Sources, Queue: a.Queue, Log: a.Log, Now: a.now,
		Leads: ls, Enricher: rc, Committed: a.liveIngest(),
		MaxBatch: a.opt.batch, Runners: a.opt.runners, Gather: a.opt.gather, AssignInTx: a.opt.assignInTx,
		Lifecycle: webhooks.Lifecycle{Inspector: asynq.NewInspectorFromRedisClient(a.RDB), Stats: a.Stats}}
	// The worker folds the servers' duplicate log into deliveries every
	// second (RunWorker); what it folds feeds the sightings like a flush.
	fold := &webhooks.DupFolder{DB: a.DB, OnDuplicates: sightings.Add, Log: a.Log.With("component", "duplicates")}
	return ingestParts{ingest: ingest, processor: processor, claimer: claimer, fold: fold}
}

// metricsHandler serves GET /metrics (on LEADPIPE_ADDR and cmd/worker's
// LEADPIPE_WORKER_ADDR, behind LEADPIPE_METRICS_TOKEN when it is set).
func (a *App) metricsHandler(rec *monitor.Recorder) http.Handler {
	insp := asynq.NewInspector(a.Redis)
	a.closers = append(a.closers, func() {
		if err := insp.Close(); err != nil {
			a.Log.Warn("closing the metrics' queue inspector", "err", err) // at exit: nothing depends on it
		}
	})
	const timeout = 2 * time.Second // per scrape, for MySQL and Redis each
	return monitor.NewMetricsHandler(monitor.MetricsOptions{Recorder: rec, DB: a.DB, Queues: insp,
		QueueSet: []string{jobs.QueueCritical, jobs.QueueDefault, jobs.QueueLow}, Log: a.Log, Timeout: timeout,
		Extra: []prometheus.Collector{webhooks.NewDupLogCollector(a.DB, timeout, a.Log)}})
}

// operatorRoutes mounts the Asynq dashboard for the platform operator
// when an operator token is configured.
func (a *App) operatorRoutes() []func(r web.Router) {
	if a.Cfg.AdminToken == "" {
		return nil
	}
	h := asynqmon.New(asynqmon.Options{RootPath: QueuesPath, RedisConnOpt: a.Redis})
	a.closers = append(a.closers, func() {
		if err := h.Close(); err != nil {
			a.Log.Warn("closing the queue dashboard", "err", err) // at exit: nothing depends on it
		}
	})
	return []func(r web.Router){func(r web.Router) {
		// Unsafe requests (the dashboard's delete/run/archive buttons)
		// pass the same cross-origin protection as every other form: the
		// operator's Basic credentials are resent by browsers cross-site,
		// so a foreign page must not be able to use them.
		csrf := http.NewCrossOriginProtection()
		r.Group(func(r web.Router) {
			r.Use(csrf.Handler)
			r.Use(a.Web.RequireOperator)
			r.Mount(h.RootPath(), h)
		})
	}}
}

// registerTasks gives the worker every task handler and periodic task.
func (a *App) registerTasks(mon *monitor.Service, rc *reconcile.Service, idem *idempotency.Store, proc *webhooks.Processor) {
	j := a.Jobs
	j.HandleEvery(monitor.TypeEvaluate, mon.HandleEvaluate, time.Minute, jobs.QueueDefault)
	j.HandleEvery(monitor.TypePurge, mon.HandlePurge, time.Hour, jobs.QueueLow)

	j.Handle(webhooks.TypeProcessDelivery, proc.HandleProcess)
	j.OnFailure(webhooks.TypeProcessDelivery, proc.HandleFinalFailure)
	j.Handle(webhooks.TypeProcessBatch, proc.HandleBatch)
	j.OnFailure(webhooks.TypeProcessBatch, proc.HandleFinalFailure)
	sweepAfter := a.Cfg.SweepAfter
	j.HandleEvery(webhooks.TypeSweep, func(ctx context.Context, t *asynq.Task) error {
		_, err := proc.Sweep(ctx, sweepAfter)
		return err
	}, 10*time.Second, jobs.QueueCritical)

	j.HandleEvery(idempotency.TypePurge, idem.HandlePurge, time.Hour, jobs.QueueLow)

	j.HandleEvery(reconcile.TypeTick, rc.HandleTick, time.Minute, jobs.QueueDefault)
	j.Handle(reconcile.TypeSource, rc.HandleSource)
	j.Handle(reconcile.TypeEnrich, rc.HandleEnrich)
	j.HandleEvery(reconcile.TypePurge, rc.HandlePurge, time.Hour, jobs.QueueLow)

	j.Handle(events.TypeDeliver, a.Events.HandleDeliver)

	j.HandleEvery(retention.TypePurge, a.Retention.HandlePurge, time.Hour, jobs.QueueLow)
}

// runEvents starts the events queue's Asynq server and the relay (with its
// sweeper); the returned function stops them.
func (a *App) runEvents(ctx context.Context) (stop func(), err error) {
	srv := jobs.NewEventsServer(a.Redis, a.Log, EventsConcurrency, events.Queue)
	if err := srv.Start(a.Jobs.Mux()); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); (&events.Relay{S: a.Events}).Run(rctx) }()
	return func() { cancel(); <-done; srv.Shutdown() }, nil
}

// RetentionPurgers adapts the owners' batch purges (webhooks, events) to
// the retention service.
func RetentionPurgers() retention.Purgers {
	wh := func(f func(context.Context, *sqlx.DB, string, string, string, time.Time, int) (webhooks.PurgeBatch, error)) retention.BatchFunc {
		return func(ctx context.Context, d *sqlx.DB, t, after, bound string, before time.Time, n int) (retention.Batch, error) {
			b, err := f(ctx, d, t, after, bound, before, n)
			return retention.Batch{Last: b.Last, Scanned: b.Scanned, Changed: b.Changed}, err
		}
	}
	return retention.Purgers{
		Payloads:    wh(webhooks.PurgePayloads),
		DeadLetters: wh(webhooks.PurgeDeadLetters),
		Events: func(ctx context.Context, d *sqlx.DB, t, after, bound string, before time.Time, n int) (retention.Batch, error) {
			b, err := events.PurgeEvents(ctx, d, t, after, bound, before, n)
			return retention.Batch{Last: b.Last, Scanned: b.Scanned, Changed: b.Deleted, Busy: b.Busy}, err
		},
	}
}
