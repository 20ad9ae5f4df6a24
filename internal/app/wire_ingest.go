package app

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/jobs"
	"leadpipe/internal/rejections"
	"leadpipe/internal/web"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// wireIngest mounts the webhook endpoint, the delivery processor and the
// sweeper, and gives the sources service the kinds' config rules.
func (a *App) wireIngest(ctx context.Context) error {
	a.Sources.ValidateConfig = kinds.ValidateConfig
	a.Sources.ValidateSecret = kinds.ValidateSecret
	a.Sources.GenerateSecret = func(kind string) string {
		s, err := kinds.GenerateSecret(kind)
		if err != nil {
			return ""
		}
		return s
	}
	dispatch := &webhooks.Dispatcher{Queue: a.Queue, Log: a.Log}
	a.flushers = append(a.flushers, dispatch.Flush)
	// Duplicates are counted on their delivery by the claim itself; the
	// leads' times_seen follows within half a second.
	sightings := &webhooks.Sightings{DB: a.DB, Log: a.Log}
	sctx, stop := context.WithCancel(context.Background())
	sdone := make(chan struct{})
	go func() { defer close(sdone); sightings.Run(sctx) }()
	a.closers = append(a.closers, func() { stop(); <-sdone })
	// Duplicates answered from memory are written by the claimer's flush
	// (at shutdown before the sightings' last flush, which they feed).
	claimer := &webhooks.Claimer{DB: a.DB, OnDuplicates: sightings.Add, Memory: a.Cfg.DuplicateMemory, Log: a.Log}
	a.flushers = append(a.flushers, func(ctx context.Context) {
		if err := claimer.Shutdown(ctx); err != nil {
			a.Log.Error("writing the last duplicate counts failed", "err", err)
		}
	})
	a.flushers = append(a.flushers, func(ctx context.Context) { _ = sightings.Flush(ctx) })
	a.Ingest = &webhooks.Ingest{DB: a.DB, Claimer: claimer, Sources: a.Sources,
		Dispatch: dispatch, Stats: a.Stats, Rejections: a.wireRejections(), Log: a.Log, Now: a.Now}
	a.Processor = &webhooks.Processor{DB: a.DB, Sources: a.Sources, Queue: a.Queue, Log: a.Log, Now: a.Now,
		Lifecycle: webhooks.Lifecycle{Inspector: asynq.NewInspectorFromRedisClient(a.RDB), Stats: a.Stats}}
	a.Web.Hooks = web.Hooks{In: a.Ingest, Log: a.Log}
	a.Web.DeliveryOps = &webhooks.Admin{DB: a.DB, Sources: a.Sources, Processor: a.Processor, Claimer: claimer}

	a.Jobs.Handle(webhooks.TypeProcessDelivery, a.Processor.HandleProcess)
	a.Jobs.OnFailure(webhooks.TypeProcessDelivery, a.Processor.HandleFinalFailure)
	a.Jobs.Handle(webhooks.TypeProcessBatch, a.Processor.HandleBatch)
	a.Jobs.OnFailure(webhooks.TypeProcessBatch, a.Processor.HandleFinalFailure)
	sweepAfter := a.Cfg.SweepAfter
	a.Jobs.Handle(webhooks.TypeSweep, func(ctx context.Context, t *asynq.Task) error {
		_, err := a.Processor.Sweep(ctx, sweepAfter)
		return err
	})
	a.Jobs.Every(jobs.Periodic{Type: webhooks.TypeSweep, Every: 10 * time.Second, Queue: jobs.QueueCritical})
	return nil
}

// wireRejections starts the rejected-request sampler (flushed each second
// and on shutdown) and gives the API and the source page its list.
func (a *App) wireRejections() *rejections.Recorder {
	rec := rejections.NewRecorder(a.DB, a.Log.With("component", "rejections"))
	rec.Start()
	a.flushers = append(a.flushers, func(ctx context.Context) { _ = rec.Flush(ctx) })
	a.closers = append(a.closers, func() { // before the DB closes
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rec.Close(ctx)
	})
	a.Web.Rejections = &rejections.Service{DB: a.DB, Now: a.Now}
	return rec
}
