package app

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/events"
	"leadpipe/internal/jobs"
	"leadpipe/internal/retention"
	"leadpipe/internal/webhooks"
)

// wireRetention builds the retention settings service (API and settings
// page) with the owners' purge batches, and schedules the hourly purge on
// the low queue; a run ends after MaxRun and the next resumes from the
// stored cursors.
func (a *App) wireRetention(ctx context.Context) error {
	svc := retention.NewService(a.DB, a.Tenants.ForEach, RetentionPurgers(), a.Log.With("component", "retention"))
	svc.Now = a.Now
	a.Retention = svc
	a.Web.Retention = svc
	a.Jobs.Handle(retention.TypePurge, svc.HandlePurge)
	a.Jobs.Every(jobs.Periodic{Type: retention.TypePurge, Every: time.Hour, Queue: jobs.QueueLow})
	return nil
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
