package app

import (
	"context"
	"time"

	"leadpipe/internal/imports"
	"leadpipe/internal/jobs"
)

// wireImports builds the CSV import service (PRODUCT.md §5b): its rows go
// through the webhooks' batch upsert as the tenant's import source, and
// leads.Service.SenderChanged writes their timeline and outbound events.
// A sweeper re-queues imports whose task was lost. Runs after wireLeads.
func (a *App) wireImports(ctx context.Context) error {
	svc := imports.NewService(a.DB, a.Sources, a.Web.Leads.SenderChanged, a.Queue, a.Tenants.ForEach,
		a.Log.With("component", "imports"), a.Now)
	a.Web.Imports = svc
	a.Jobs.Handle(imports.TypeRun, svc.HandleRun)
	a.Jobs.OnFailure(imports.TypeRun, svc.HandleFailure)
	a.Jobs.Handle(imports.TypeSweep, svc.HandleSweep)
	a.Jobs.Every(jobs.Periodic{Type: imports.TypeSweep, Every: time.Minute, Queue: jobs.QueueLow})
	return nil
}
