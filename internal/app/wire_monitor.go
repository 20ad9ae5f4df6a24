package app

import (
	"context"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"leadpipe/internal/jobs"
	"leadpipe/internal/monitor"
	"leadpipe/internal/web"
)

// QueuesPath is where operators find the Asynq dashboard.
const QueuesPath = "/admin/queues"

// wireMonitor builds the counters' recorder (a.Stats, used by ingest and
// reconcile, so this runs first), the monitor service and its API, the
// alert evaluator task, GET /metrics and the Asynq dashboard.
func (a *App) wireMonitor(ctx context.Context) error {
	rec := monitor.NewRecorder(a.DB, a.Log.With("component", "monitor"))
	rec.Start()
	a.Stats = rec
	a.flushers = append(a.flushers, func(ctx context.Context) { _ = rec.Flush(ctx) })
	a.closers = append(a.closers, func() { // before the DB closes
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rec.Close(ctx); err != nil {
			a.Log.Warn("monitor: final flush failed; counters of the last seconds are lost", "err", err)
		}
	})

	svc := monitor.NewService(a.DB, a.Tenants, a.Sources, rec, a.Log.With("component", "monitor"))
	svc.Now = a.Now
	a.Web.Monitor = svc

	a.Jobs.Handle(monitor.TypeEvaluate, svc.HandleEvaluate)
	a.Jobs.Every(jobs.Periodic{Type: monitor.TypeEvaluate, Every: time.Minute, Queue: jobs.QueueDefault})
	a.Jobs.Handle(monitor.TypePurge, svc.HandlePurge)
	a.Jobs.Every(jobs.Periodic{Type: monitor.TypePurge, Every: time.Hour, Queue: jobs.QueueLow})

	// /metrics is served on LEADPIPE_ADDR (and on cmd/worker's
	// LEADPIPE_WORKER_ADDR), behind LEADPIPE_METRICS_TOKEN when it is set.
	insp := asynq.NewInspector(a.Redis)
	a.closers = append(a.closers, func() { _ = insp.Close() })
	// The second result is the Prometheus registry (not an error): tests
	// gather from it; the application serves the handler only.
	metrics, _ := monitor.NewMetricsHandler(monitor.MetricsOptions{Recorder: rec, DB: a.DB, Queues: insp,
		QueueSet: []string{jobs.QueueCritical, jobs.QueueDefault, jobs.QueueLow}, Log: a.Log})
	a.Web.Metrics = metrics

	// The Asynq dashboard for the platform operator.
	if a.Cfg.AdminToken != "" {
		h := asynqmon.New(asynqmon.Options{RootPath: QueuesPath, RedisConnOpt: a.Redis})
		a.closers = append(a.closers, func() { _ = h.Close() })
		a.Web.Extra = append(a.Web.Extra, func(r web.Router) {
			// Unsafe requests (the dashboard's delete/run/archive buttons)
			// pass the same cross-origin protection as every other form:
			// the operator's Basic credentials are resent by browsers
			// cross-site, so a foreign page must not be able to use them.
			csrf := http.NewCrossOriginProtection()
			r.Group(func(r web.Router) {
				r.Use(csrf.Handler)
				r.Use(a.Web.RequireOperator)
				r.Mount(h.RootPath(), h)
			})
		})
	}
	return nil
}
