// Package web holds the HTTP layer: one route table, handlers (one file per
// area), middleware and the single error → HTTP mapping.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"leadpipe/internal/audit"
	"leadpipe/internal/config"
	"leadpipe/internal/events"
	"leadpipe/internal/forms"
	"leadpipe/internal/imports"
	"leadpipe/internal/leads"
	liveinbox "leadpipe/internal/live"
	"leadpipe/internal/monitor"
	"leadpipe/internal/notify"
	"leadpipe/internal/privacy"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/rejections"
	"leadpipe/internal/retention"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks"
)

// Server is the struct of dependencies every handler is a method on. It
// holds services, never the database: handlers parse, call a service and
// render.
type Server struct {
	Log     *slog.Logger
	Cfg     *config.Config
	Tenants *tenants.Service // tenants, users, API tokens, sessions
	Sources *sources.Service // sources and their signing secrets

	// Ready reports what is not ready (empty when all is well) for /readyz.
	Ready func(ctx context.Context) map[string]string

	Leads       *leads.Service      // leads API and pages: list, search, edit, notes, timeline
	Idem        *Idempotent         // Idempotency-Key on the leads API's POSTs; its store keys the UI's create forms
	DeliveryOps DeliveryAdmin       // deliveries API: list by state, reprocess, mapping preview (webhooks.Admin)
	Deliveries  *webhooks.Reads     // what sources received (source pages)
	Monitor     *monitor.Service    // duplicate-rate statistics, alert rules and alerts
	Reconcile   *reconcile.Service  // reconcile runs: list and "Reconcile now"
	Events      *events.Service     // outbound endpoints, events, attempts, replay
	Rejections  *rejections.Service // a source's rejected requests (inspector)
	Audit       *audit.Service      // the audit log: API and admin page
	Privacy     *privacy.Service    // a lead's export and erasure
	Retention   *retention.Service  // retention settings (API, settings page)
	Imports     *imports.Service    // CSV imports: upload, progress, refused rows
	Forms       *forms.Service      // hosted web forms: admin API, builder, public pages
	Notify      *notify.Service     // e-mail outbox: the mail preview and failed messages (admins)
	ui          *uiState            // web UI state (login limiter, CSRF guard), built by uiRoutes

	Hooks   http.Handler // POST/GET /hooks/{tenant}/{source}
	Metrics http.Handler // GET /metrics
	// Extra mounts optional routes (the Asynq dashboard when an operator
	// token is configured).
	Extra []func(r Router)
	// Live streams lead events to signed-in browsers (GET /events); nil:
	// the route answers 404 and pages stay as they are.
	Live *liveinbox.Hub
}

// Check names every dependency the server is missing: wiring that forgot
// a subsystem fails at startup instead of serving without its routes.
func (s *Server) Check() error {
	var missing []string
	for name, ok := range map[string]bool{
		"Log": s.Log != nil, "Cfg": s.Cfg != nil, "Tenants": s.Tenants != nil, "Sources": s.Sources != nil,
		"Ready": s.Ready != nil, "Leads": s.Leads != nil, "Idem": s.Idem != nil && s.Idem.Store != nil,
		"Deliveries": s.Deliveries != nil, "Monitor": s.Monitor != nil, "Reconcile": s.Reconcile != nil, "Events": s.Events != nil,
		"Rejections": s.Rejections != nil, "DeliveryOps": s.DeliveryOps != nil, "Audit": s.Audit != nil,
		"Privacy": s.Privacy != nil, "Retention": s.Retention != nil, "Imports": s.Imports != nil, "Forms": s.Forms != nil,
		"Hooks": s.Hooks != nil, "Metrics": s.Metrics != nil,
	} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("web: server wiring is missing %s", strings.Join(missing, ", "))
	}
	return nil
}
