package app

import (
	"context"
	"net/http"
	"time"

	"leadpipe/internal/idempotency"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/privacy"
	"leadpipe/internal/web"
)

// wireLeads builds the leads service and the Idempotency-Key middleware
// of the leads API, and schedules the hourly purge of expired keys.
func (a *App) wireLeads(ctx context.Context) error {
	a.Web.Leads = leads.NewService(a.DB, a.Web.Deliveries)
	a.Web.Leads.Now = a.Now
	a.Web.Privacy = privacy.NewService(a.DB, a.Web.Leads, a.Sources, a.Now)
	store := idempotency.NewStore(a.DB, a.Cfg.IdempotencyTTL)
	store.SetClock(a.Now)
	store.Log = a.Log.With("component", "idempotency")
	store.EachTenant = a.Tenants.ForEach
	a.Web.Idem = &idempotency.Middleware{
		Store:  store,
		Tenant: web.Tenant,
		WriteError: func(w http.ResponseWriter, r *http.Request, err error) {
			web.WriteError(w, r, a.Log, err)
		},
		MaxBody: web.MaxAPIBody,
	}
	a.Jobs.Handle(idempotency.TypePurge, store.HandlePurge)
	a.Jobs.Every(jobs.Periodic{Type: idempotency.TypePurge, Every: time.Hour, Queue: jobs.QueueLow})
	return nil
}
