package app

import (
	"context"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/outbound"
)

// EventsConcurrency is the Asynq concurrency of the events queue's own
// server: delivery attempts wait on the network, and MaxInFlight (8) per
// endpoint keeps one slow endpoint to a few of these workers.
const EventsConcurrency = 64

// wireEvents builds the outbound event service (endpoints API, outbox,
// relay, deliveries), hooks alert firing into the outbox and the
// endpoint_disabled alert into the service. Runs after wireMonitor.
func (a *App) wireEvents(ctx context.Context) error {
	allowPrivate := a.Cfg.AllowPrivateTargets
	svc := &events.Service{
		DB: a.DB, Box: a.Box, Queue: a.Queue, Client: events.NewClient(allowPrivate), Now: a.Now,
		Log:      a.Log.With("component", "events"),
		CheckURL: func(u string) error { return outbound.CheckURL(u, allowPrivate) },
		Tenants: func(ctx context.Context) ([]string, error) {
			var ids []string
			err := a.Tenants.ForEach(ctx, func(id string) error { ids = append(ids, id); return nil })
			return ids, err
		},
	}
	a.Events = svc
	a.Web.Events = svc
	outbox := svc.Outbox()

	if mon := a.Web.Monitor; mon != nil {
		mon.OnFired = func(ctx context.Context, tx db.Ext, tenantID string, al monitor.Alert) error {
			return outbox.Emit(ctx, tx, tenantID, events.Event{Type: events.AlertFired, ResourceID: al.ID, Data: al})
		}
		svc.OnDisabled = func(ctx context.Context, tx db.Ext, tenantID string, ep events.Endpoint) error {
			summary := "outbound endpoint " + ep.URL + " was disabled"
			if ep.DisabledReason != nil {
				summary += ": " + *ep.DisabledReason
			}
			return mon.OpenEndpointAlert(ctx, tx, tenantID, ep.ID, map[string]any{"summary": summary, "endpoint_id": ep.ID,
				"url": ep.URL, "reason": ep.DisabledReason, "failing_since": ep.FailingSince})
		}
		svc.OnEnabled = func(ctx context.Context, tx db.Ext, tenantID string, ep events.Endpoint) error {
			return mon.ResolveEndpointAlert(ctx, tx, tenantID, ep.ID)
		}
	}
	if ls := a.Web.Leads; ls != nil {
		ls.Emit = func(ctx context.Context, tx db.Ext, tenantID, typ string, l leads.Lead) error {
			return outbox.Emit(ctx, tx, tenantID, events.Event{Type: typ, ResourceID: l.ID, Data: l})
		}
		ls.Wants = outbox.Wants
		// Webhook leads: lead.created / lead.updated in the batch's
		// transaction (reconcile and enrichment: see wireReconcile).
		a.Processor.OnBatch = func(ctx context.Context, tx *sqlx.Tx, tenantID string, outcomes []leads.UpsertOutcome) error {
			return ls.SenderChanged(ctx, tx, tenantID, outcomes)
		}
	}
	a.Jobs.Handle(events.TypeDeliver, svc.HandleDeliver)
	return nil
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
