// Package web holds the HTTP layer: one route table, handlers (one file per
// area), middleware and the single error → HTTP mapping.
package web

import (
	"context"
	"log/slog"
	"net/http"

	"leadpipe/internal/config"
	"leadpipe/internal/events"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/deliveries"
)

// Server is the struct of dependencies every handler is a method on.
type Server struct {
	Log     *slog.Logger
	Cfg     *config.Config
	Tenants *tenants.Service
	Sources *sources.Service

	// Ready reports what is not ready ("" when all is well) for /readyz.
	Ready func(ctx context.Context) map[string]string

	// Subsystem services; each area adds its own line below its anchor.
	// anchor:ingest
	DeliveryOps DeliveryAdmin // deliveries API: list by state, reprocess, mapping preview (webhooks.Admin)
	// anchor:leads
	Leads *leads.Service          // leads API: list, search, edit, notes, timeline
	Idem  *idempotency.Middleware // Idempotency-Key on the leads API's POSTs and the UI's create forms
	// Deliveries lists what sources received (source pages).
	Deliveries *deliveries.Store
	// anchor:monitor
	Monitor *monitor.Service // duplicate-rate statistics, alert rules and alerts
	// anchor:reconcile
	Reconcile *reconcile.Service // reconcile runs: list and "Reconcile now"
	// anchor:events
	Events *events.Service // outbound endpoints, events, attempts, replay
	// anchor:ui
	ui *uiState // web UI state (login limiter, CSRF guard), built by uiRoutes

	// Mounted subsystems (nil ones are left out of the route table).
	Hooks   http.Handler // POST/GET /hooks/{tenant}/{source}
	Metrics http.Handler // GET /metrics
	Extra   []func(r Router)
}
