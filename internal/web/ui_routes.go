package web

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/atrest"
	"leadpipe/views/assets"
	"leadpipe/views/settings"
	srcviews "leadpipe/views/sources"
)

// uiState is the web UI's per-router state.
type uiState struct {
	logins  *LoginThrottle // failed logins per account, trusted device and address
	resets  *LoginThrottle // "Forgot password?" requests per account and address
	devices loginSigner    // trusted-device cookies (the throttle exempts them) and chooser tickets
	csrf    *http.CrossOriginProtection
}

func (s *Server) newUIState() *uiState {
	u := &uiState{
		logins:  NewLoginThrottle(),
		resets:  NewResetThrottle(),
		devices: loginSigner{key: atrest.Derive(s.Cfg.SecretKey, "leadpipe/device-cookie/v1")},
		csrf:    http.NewCrossOriginProtection(),
	}
	u.csrf.SetDenyHandler(http.HandlerFunc(s.uiCrossOrigin))
	return u
}

// uiRoutes mounts the server-rendered web UI (README, "The web UI"). Pages are
// plain HTML forms with redirect-after-post, so they work without
// JavaScript; unsafe methods pass Go's cross-origin protection (CSRF) and
// the session cookie is SameSite=Lax.
func (s *Server) uiRoutes(r chi.Router) {
	s.ui = s.newUIState()
	// Browsers get an HTML 404 page; API clients keep problem+json.
	r.NotFound(s.notFound)
	r.Handle(assets.Prefix+"*", assets.Handler())

	r.Group(func(r chi.Router) {
		r.Use(s.ui.csrf.Handler)
		r.Get("/", s.uiRoot)
		r.Get("/login", s.loginPage)
		r.Post("/login", s.loginSubmit)
		r.Post("/login/tenant", s.loginChooseTenant)
		r.Post("/logout", s.logout)
		s.linkUIRoutes(r)

		r.Group(func(r chi.Router) {
			r.Use(s.RequireSession)
			r.Get("/leads", s.uiInbox)
			r.Post("/leads", s.withForm(s.uiCreateLead))
			r.Get("/leads/new", s.uiNewLead)
			r.Get("/leads/board", s.uiBoard)
			r.Get("/events", s.uiEvents)
			r.Get("/leads/{id}", s.uiLead)
			r.Post("/leads/{id}/status", s.withForm(s.uiLeadStatus))
			r.Post("/leads/{id}/owner", s.withForm(s.uiLeadOwner))
			r.Post("/leads/{id}/notes", s.withForm(s.uiLeadNote))
			r.Post("/leads/{id}/next-step", s.withForm(s.uiLeadNextStep))
			r.Post("/leads/bulk", s.withForm(s.uiBulk))
			r.Get("/leads/export.csv", s.uiExportLeads)
			s.leadUIRoutes(r)
			s.mergeUIRoutes(r)
			r.Get("/settings/notifications", s.uiNotifications)
			r.Post("/settings/notifications", s.withForm(s.uiSaveNotifications))

			r.Group(func(r chi.Router) {
				r.Use(s.RequireAdminUI)
				r.Get("/sources", formPage(s, s.sourcesView, srcviews.List))
				r.Get("/sources/add", s.uiSourceCatalog)
				r.Post("/sources", s.withForm(s.uiCreateSource))
				r.Get("/sources/{id}", s.uiSource)
				s.importUIRoutes(r)
				r.Post("/sources/{id}/rotate-secret", s.withForm(s.uiRotateSecret))
				r.Post("/sources/{id}/reconcile", s.uiReconcileNow)
				r.Post("/sources/{id}/reconcile-settings", s.uiReconcileSettings)
				r.Post("/sources/{id}/mapping", s.uiMappingSave)
				r.Post("/sources/{id}/mapping/preview", s.uiMappingPreview)
				r.Post("/sources/{id}/reprocess-failed", s.withForm(s.uiReprocessFailed))
				r.Post("/sources/{id}/dead-letters", s.uiDeadLetters)
				r.Post("/sources/{id}/test-delivery", s.uiTestDelivery)
				r.Get("/settings/users", formPage(s, s.usersView, settings.Users))
				r.Post("/settings/users", s.withForm(s.uiCreateUser))
				r.Post("/settings/users/{id}/role", s.uiUserRole)
				r.Post("/settings/users/{id}/disabled", s.uiUserDisabled)
				r.Post("/settings/users/{id}/remove", s.uiRemoveUser)
				r.Post("/settings/users/{id}/invite", s.uiReinvite)
				r.Post("/settings/users/{id}/away", s.uiUserAway)
				r.Get("/settings/tokens", viewPage(s, s.tokensView, settings.Tokens))
				r.Post("/settings/tokens", s.withForm(s.uiCreateToken))
				r.Post("/settings/tokens/{id}/revoke", s.uiRevokeToken)
				r.Get("/settings/audit", s.uiAudit)
				r.Get("/reports/sources", s.uiReportSources)
				r.Get("/settings/retention", s.uiRetention)
				r.Post("/settings/retention", s.withForm(s.uiSaveRetention))
				r.Get("/settings/mail", s.uiMail)
				s.endpointUIRoutes(r)
				s.assignmentUIRoutes(r)
				s.formUIRoutes(r)
				r.Get("/monitor", s.uiMonitor)
				r.Get("/monitor/sources/{id}", s.uiMonitorSource)
				r.Post("/monitor/sources/{id}/rules", s.uiSaveRules)
				r.Post("/monitor/first-response/rule", s.withForm(s.uiSaveSLARule))
				r.Get("/alerts", s.uiAlerts)
				r.Post("/alerts/{id}/ack", s.withForm(s.uiAckAlert))
				r.Post("/alerts/ack", s.withForm(s.uiAckAlerts))
			})
		})
	})
}

// notFound answers unknown routes: an HTML page for browsers, the API's
// problem+json for everything else.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if wantsHTML(r) {
		s.uiNotFound(w, r)
		return
	}
	WriteProblem(w, r, http.StatusNotFound, "no such route", nil)
}

func wantsHTML(r *http.Request) bool {
	p := r.URL.Path
	if strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/hooks/") {
		return false
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (s *Server) uiRoot(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if _, err := s.Tenants.SessionUser(r.Context(), c.Value); err == nil {
			http.Redirect(w, r, "/leads", http.StatusSeeOther)
			return
		}
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
