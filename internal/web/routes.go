package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
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

	r.Route("/api/admin/v1", func(r chi.Router) {
		r.Use(s.RequireOperator)
		r.Post("/tenants", s.adminCreateTenant)
		r.Get("/tenants", s.adminListTenants)
	})

	r.Route("/api/v1", func(r chi.Router) {
		r.Use(s.RequireToken)
		r.Get("/sources", s.listSources)
		r.Post("/sources", s.createSource)
		r.Get("/sources/{id}", s.getSource)
		r.Patch("/sources/{id}", s.patchSource)
		r.Post("/sources/{id}/rotate-secret", s.rotateSecret)
		s.deliveryRoutes(r)
		s.leadRoutes(r)
		s.monitorRoutes(r)
		s.reconcileRoutes(r)
		s.eventRoutes(r)
		s.rejectionRoutes(r)
	})
	s.uiRoutes(r)

	for _, mount := range s.Extra {
		mount(r)
	}
	return r
}
