package web

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/a-h/templ"

	"leadpipe/views/components"
	"leadpipe/views/layouts"
	"leadpipe/views/pages"
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readerZone is ctx with the signed-in user's own time zone for the
// views (components.Zone); without a session, as it is (UTC).
func readerZone(ctx context.Context) context.Context {
	if sess := sessionFrom(ctx); sess != nil {
		return components.WithZone(ctx, sess.User.Location())
	}
	return ctx
}

// render writes a page. It renders into a buffer first, so a template error
// becomes a clean error page instead of half a document.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	ctx := readerZone(r.Context()) // every time in the reader's own zone
	if err := c.Render(ctx, buf); err != nil {
		if r.Context().Err() != nil {
			return // the browser went away
		}
		s.Log.ErrorContext(r.Context(), "render failed", "err", err, "path", r.URL.Path)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("internal error"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	// A strict CSP: every script and style comes from /assets, nothing
	// inline, so even an escaping bug could not run injected code.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// renderResult renders c, or err's error page when the view behind c
// could not be read.
func (s *Server) renderResult(w http.ResponseWriter, r *http.Request, status int, c templ.Component, err error) {
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.render(w, r, status, c)
}

// viewPage answers the GET of a page: view builds it, page renders it.
func viewPage[V any](s *Server, view func(http.ResponseWriter, *http.Request) (V, error), page func(V) templ.Component) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := view(w, r)
		s.renderResult(w, r, http.StatusOK, page(v), err)
	}
}

// formPage is viewPage for a page that carries a form, shown empty.
func formPage[F, V any](s *Server, view func(http.ResponseWriter, *http.Request, F) (V, error), page func(V) templ.Component) http.HandlerFunc {
	return viewPage(s, func(w http.ResponseWriter, r *http.Request) (V, error) {
		var empty F
		return view(w, r, empty)
	}, page)
}

// page builds the chrome of a signed-in page: user, tenant, active tab,
// the flash left by the previous POST and, for admins, open alerts.
func (s *Server) page(w http.ResponseWriter, r *http.Request, title, active string) layouts.Page {
	p := layouts.Page{Title: title, Active: active}
	sess := sessionFrom(r.Context())
	if sess == nil {
		return p
	}
	p.User = &layouts.User{Name: sess.User.Name, Email: sess.User.Email, Role: sess.User.Role}
	p.TenantName = sess.Tenant.Name
	p.TimeZone = sess.User.Location().String()
	if w != nil {
		p.Flash, p.FlashError, p.Undo = s.takeFlash(w, r)
	}
	if sess.User.IsAdmin() {
		p.OpenAlerts = s.openAlerts(r.Context(), sess.Tenant.ID)
	}
	return p
}

// uiError renders err as an error page with the one status mapping
// (StatusOf); internal errors are logged once and shown generically.
func (s *Server) uiError(w http.ResponseWriter, r *http.Request, err error) {
	e := asAppError(err)
	status := StatusOf(e.Code)
	switch {
	case status == http.StatusNotFound:
		s.uiNotFound(w, r)
		return
	case status >= 500:
		if r.Context().Err() == nil {
			s.Log.ErrorContext(r.Context(), "page failed", "err", err, "status", status, "path", r.URL.Path)
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "5")
		}
	}
	title, detail := errorText(status, e.Message)
	s.renderError(w, r, status, title, detail)
}

func errorText(status int, msg string) (string, string) {
	switch status {
	case http.StatusServiceUnavailable:
		return "Leadpipe is briefly unavailable", "The database did not answer. Try again in a few seconds."
	case http.StatusTooManyRequests:
		return "Too many attempts", msg
	}
	if status >= 500 {
		return "Something went wrong", "The error was logged. Try again; if it keeps happening, tell your admin the time it happened."
	}
	return http.StatusText(status), msg
}

// uiNotFound is the one 404 page: unknown URLs, other tenants' objects and
// admin pages seen by staff all look exactly alike.
func (s *Server) uiNotFound(w http.ResponseWriter, r *http.Request) {
	if sessionFrom(r.Context()) == nil {
		// Best effort: draw the signed-in chrome so the page looks the same
		// wherever the 404 came from.
		if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
			if u, err := s.Tenants.SessionUser(r.Context(), c.Value); err == nil {
				if t, err := s.Tenants.Tenant(r.Context(), u.TenantID); err == nil {
					r = r.WithContext(context.WithValue(r.Context(), uiCtxKey{}, &uiSession{User: u, Tenant: t}))
				}
			}
		}
	}
	s.renderError(w, r, http.StatusNotFound, "Page not found",
		"There is nothing at this address, or you do not have access to it. Check the link, or go back to your inbox.")
}

// uiAdminsOnly is the page a staff user gets on an admin page.
func (s *Server) uiAdminsOnly(w http.ResponseWriter, r *http.Request) {
	s.renderError(w, r, http.StatusForbidden, "Admins only",
		"Only an admin of your team can open this page. Ask one if you need something here, or go back to your inbox.")
}

func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	w.Header().Set("Cache-Control", "no-store")
	if sessionFrom(r.Context()) != nil {
		s.render(w, r, status, pages.Error(s.page(nil, r, title, ""), status, title, detail))
		return
	}
	s.render(w, r, status, pages.ErrorBare(status, title, detail))
}

// uiCrossOrigin answers a form posted from another site (CSRF).
func (s *Server) uiCrossOrigin(w http.ResponseWriter, r *http.Request) {
	s.renderError(w, r, http.StatusForbidden, "This form came from another site",
		"For your safety Leadpipe only accepts forms sent from its own pages. Go back, reload the page and try again.")
}

// seeOther is the redirect after a successful POST.
func seeOther(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, to, http.StatusSeeOther)
}
