package app

import (
	"context"
	"encoding/json"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/outbound"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// wireReconcile builds the reconcile service (scheduled and manual pulls
// from the senders' APIs, Meta lead enrichment), validates reconcile base
// URLs at save time with the SSRF guard, and registers the tasks and the
// API. Runs after wireIngest: it hooks the webhook processor.
func (a *App) wireReconcile(ctx context.Context) error {
	allowPrivate := a.Cfg.AllowPrivateTargets
	a.Sources.CheckURL = func(u string) error { return outbound.CheckURL(u, allowPrivate) }

	svc := &reconcile.Service{
		DB: a.DB, Sources: a.Sources, Queue: a.Queue, Stats: a.Stats, Now: a.Now,
		Client: outbound.New(outbound.Options{AllowPrivate: allowPrivate}),
		Log:    a.Log.With("component", "reconcile"),
		// Exactly the webhook path: same mapping, same upsert.
		Apply: func(ctx context.Context, x db.Ext, tenantID string, src sources.Source, raw json.RawMessage, now time.Time) (reconcile.Applied, error) {
			r, err := webhooks.Apply(ctx, x, tenantID, src, raw, now)
			if err == nil {
				err = a.Web.Leads.SenderChanged(ctx, x, tenantID, []leads.UpsertOutcome{{LeadID: r.LeadID, SourceID: src.ID, Kind: r.Outcome, OwnerID: r.OwnerID}})
			}
			return reconcile.Applied{LeadID: r.LeadID, New: r.New, Lead: r.Lead, Erased: r.Outcome == leads.OutcomeErased}, err
		},
	}
	a.Web.Reconcile = svc

	prev := a.Processor.AfterUpsert
	a.Processor.AfterUpsert = func(ctx context.Context, tenantID string, src sources.Source, leadID string, lead kinds.Lead) {
		if prev != nil {
			prev(ctx, tenantID, src, leadID, lead)
		}
		svc.AfterWebhookUpsert(ctx, tenantID, src, leadID, lead)
	}

	a.Jobs.Handle(reconcile.TypeTick, svc.HandleTick)
	a.Jobs.Handle(reconcile.TypeSource, svc.HandleSource)
	a.Jobs.Handle(reconcile.TypeEnrich, svc.HandleEnrich)
	a.Jobs.Handle(reconcile.TypePurge, svc.HandlePurge)
	a.Jobs.Every(jobs.Periodic{Type: reconcile.TypeTick, Every: time.Minute, Queue: jobs.QueueDefault})
	a.Jobs.Every(jobs.Periodic{Type: reconcile.TypePurge, Every: time.Hour, Queue: jobs.QueueLow})
	return nil
}
