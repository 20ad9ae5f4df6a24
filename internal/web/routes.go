package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/tenants"
)

// Router is the chi router type subsystems mount on.
type Router = chi.Router

// Routes is the one route table of the product. Every subsystem is
// required (see Check): a missing one is a startup error, never routes
// that silently vanish.
func (s *Server) Routes() http.Handler {
	if err := s.Check(); err != nil {
		panic(err) // app.Open checks first; this is a programming error
	}
	r := chi.NewRouter()
	r.Use(RequestLog(s.Log))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, r, http.StatusNotFound, "no such route", nil)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, r, http.StatusMethodNotAllowed, "method not allowed on this route", nil)
	})

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/api/openapi.yaml", s.openAPISpec)
	r.Get("/api/asyncapi.yaml", s.asyncAPISpec)
	r.Method(http.MethodGet, "/metrics", s.requireMetricsToken(s.Metrics))
	r.Handle("/hooks/{tenant}/{source}", s.Hooks)
	// Hosted web forms (form_public.go, form_embed.go; docs/FORMS.md).
	r.Get("/f/{tenant}/{form}", s.formPage)
	r.Post("/f/{tenant}/{form}", s.formSubmit)
	r.Options("/f/{tenant}/{form}", s.formPreflight)
	r.Get("/f/{tenant}/{form}/thanks", s.formThanks)
	r.Get("/f/{tenant}/{form}/embed.js", s.formEmbed)
	r.Handle("/hooks/{tenant}/{source}/{url_secret}", s.Hooks)

	r.Route("/api/admin/v1", func(r chi.Router) {
		r.Use(s.RequireOperator)
		r.Post("/tenants", s.adminCreateTenant)
		r.Get("/tenants", s.adminListTenants)
	})

	// The tenant API. Every route names the scope it needs here, and only
	// here (TestEveryAPIRouteDeclaresAScope walks the router to keep it so;
	// TestScopeMatrix tries every route with every scope).
	r.Route("/api/v1", func(r chi.Router) {
		r.Use(s.RequireToken)
		read, write := r.With(scope(tenants.ScopeLeadsRead)), r.With(scope(tenants.ScopeLeadsWrite))
		manage, admin := r.With(scope(tenants.ScopeSourcesManage)), r.With(scope(tenants.ScopeAdmin))

		read.Get("/leads", s.apiListLeads)
		write.Post("/leads", s.Idem.Wrap(s.apiCreateLead))
		write.Post("/leads/bulk", s.Idem.Wrap(s.apiBulkLeads))
		read.Get("/leads/export.csv", s.apiExportLeads)
		write.Post("/imports", s.apiCreateImport)
		read.Get("/imports", s.apiListImports)
		read.Get("/imports/{id}", s.apiGetImport)
		read.Get("/imports/{id}/errors", s.apiImportErrors)
		read.Get("/imports/{id}/errors.csv", s.apiImportErrors)
		read.Get("/leads/{id}", s.apiGetLead)
		write.Patch("/leads/{id}", s.apiPatchLead)
		read.Get("/leads/{id}/notes", s.apiListNotes)
		write.Post("/leads/{id}/notes", s.Idem.Wrap(s.apiAddNote))
		read.Get("/leads/{id}/timeline", s.apiLeadTimeline)
		read.Get("/leads/{id}/duplicates", s.apiLeadDuplicates)
		write.Post("/leads/{id}/merge", s.Idem.Wrap(s.apiMergeLeads))
		write.Post("/leads/{id}/unmerge", s.apiUnmergeLead)
		admin.Get("/leads/{id}/export", s.apiExportLead)
		admin.Post("/leads/{id}/erase", s.Idem.Wrap(s.apiEraseLead))

		manage.Get("/source-kinds", s.listSourceKinds)
		manage.Get("/sources", s.listSources)
		manage.Post("/sources", s.createSource)
		manage.Get("/sources/{id}", s.getSource)
		manage.Patch("/sources/{id}", s.patchSource)
		manage.Post("/sources/{id}/rotate-secret", s.rotateSecret)
		manage.Get("/sources/{id}/deliveries", s.listDeliveries)
		manage.Post("/sources/{id}/reprocess", s.reprocessSource)
		manage.Post("/sources/{id}/preview", s.previewSource)
		manage.Post("/deliveries/{id}/reprocess", s.reprocessDelivery)
		manage.Get("/sources/{id}/stats", s.sourceStats)
		manage.Get("/sources/{id}/alert-rules", s.getAlertRules)
		manage.Put("/sources/{id}/alert-rules", s.putAlertRules)
		manage.Delete("/sources/{id}/alert-rules", s.resetAlertRules)
		manage.Get("/alert-rules/sla-breach", tenantResult(s, s.Monitor.SLARules))
		manage.Put("/alert-rules/sla-breach", s.putSLARule)
		manage.Delete("/alert-rules/sla-breach", tenantResult(s, s.Monitor.ResetSLARules))
		manage.Get("/alerts", s.listAlerts)
		manage.Get("/alerts/{id}", s.getAlert)
		manage.Post("/alerts/{id}/ack", s.ackAlert)
		manage.Post("/sources/{id}/reconcile", s.triggerReconcile)
		manage.Get("/sources/{id}/reconcile-runs", s.listReconcileRuns)
		manage.Get("/endpoints", s.listEndpoints)
		manage.Post("/endpoints", s.createEndpoint)
		manage.Get("/endpoints/{id}", s.getEndpoint)
		manage.Patch("/endpoints/{id}", s.patchEndpoint)
		manage.Delete("/endpoints/{id}", s.deleteEndpoint)
		manage.Post("/endpoints/{id}/rotate-secret", s.rotateEndpointSecret)
		manage.Get("/endpoints/{id}/attempts", s.listEndpointAttempts)
		manage.Post("/endpoints/{id}/recover", s.recoverEndpoint)
		manage.Get("/events", s.listEvents)
		manage.Get("/events/{id}", s.getEvent)
		manage.Get("/events/{id}/attempts", s.listEventAttempts)
		manage.Post("/events/{id}/replay", s.replayEvent)
		manage.Get("/sources/{id}/rejections", s.listRejections)

		admin.Get("/tokens", s.apiListTokens)
		admin.Post("/tokens", s.apiCreateToken)
		admin.Delete("/tokens/{id}", s.apiRevokeToken)
		admin.Get("/users", s.apiListUsers)
		admin.Post("/users", s.apiCreateUser)
		admin.Patch("/users/{id}", s.apiPatchUser)
		admin.Put("/users/{id}/away", s.apiPutUserAway)
		admin.Post("/users/{id}/invitation", s.apiInviteUser)
		admin.Delete("/users/{id}", s.apiDeleteUser)
		admin.Get("/audit", s.apiListAudit)
		admin.Get("/settings/retention", tenantResult(s, s.Retention.Get))
		admin.Put("/settings/retention", tenantPut(s, s.Retention.Set)) // a field left out keeps its value
		admin.Get("/assignment", tenantResult(s, s.Leads.Assignment))
		admin.Post("/forms", s.apiCreateForm)
		admin.Get("/forms", s.apiListForms)
		admin.Get("/forms/{id}", s.apiGetForm)
		admin.Patch("/forms/{id}", s.apiPatchForm)
		admin.Delete("/forms/{id}", s.apiDeleteForm)
		admin.Put("/assignment", tenantPut(s, s.Leads.PutAssignment)) // the whole list, in the order tried
	})
	s.uiRoutes(r)

	for _, mount := range s.Extra {
		mount(r)
	}
	return r
}
