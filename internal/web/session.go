package web

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/tenants"
	"leadpipe/views/layouts"
)

// SessionCookie is the name of the web UI's session cookie.
const SessionCookie = "leadpipe_session"

// flashCookie carries a one-line notice across a redirect-after-post.
const flashCookie = "leadpipe_flash"

type uiCtxKey struct{}

// uiSession is what RequireSession loaded for a signed-in request.
type uiSession struct {
	User   tenants.User
	Tenant tenants.Tenant
}

func sessionFrom(ctx context.Context) *uiSession {
	s, _ := ctx.Value(uiCtxKey{}).(*uiSession)
	return s
}

// secureRequest reports whether the browser reached us over https, so the
// session cookie can be marked Secure.
func (s *Server) secureRequest(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.Cfg != nil && s.Cfg.TrustProxyHeaders && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureRequest(r)})
}

func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, value string) {
	s.setCookie(w, r, SessionCookie, value, int(tenants.SessionTTL/time.Second))
}

func (s *Server) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	s.setCookie(w, r, SessionCookie, "", -1)
}

// flash is the notice carried across a redirect, with an optional Undo form.
type flash struct {
	Msg  string        `json:"m,omitempty"`
	Err  string        `json:"e,omitempty"`
	Undo *layouts.Undo `json:"u,omitempty"`
}

// setFlashError leaves an error notice (a form that could not be applied).
func (s *Server) setFlashError(w http.ResponseWriter, r *http.Request, msg string) {
	b, _ := json.Marshal(flash{Err: msg})
	s.setCookie(w, r, flashCookie, url.QueryEscape(string(b)), 60)
}

// setFlash leaves a notice for the page the redirect lands on.
func (s *Server) setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	s.setFlashUndo(w, r, msg, nil)
}

// setFlashUndo leaves a notice with an Undo form (e.g. a board move).
func (s *Server) setFlashUndo(w http.ResponseWriter, r *http.Request, msg string, undo *layouts.Undo) {
	b, _ := json.Marshal(flash{Msg: msg, Undo: undo})
	s.setCookie(w, r, flashCookie, url.QueryEscape(string(b)), 60)
}

// takeFlash reads and clears the notice (shown once).
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) (string, string, *layouts.Undo) {
	c, err := r.Cookie(flashCookie)
	if err != nil || c.Value == "" {
		return "", "", nil
	}
	s.setCookie(w, r, flashCookie, "", -1)
	raw, err := url.QueryUnescape(c.Value)
	if err != nil || len(raw) > 2000 {
		return "", "", nil
	}
	var f flash
	if json.Unmarshal([]byte(raw), &f) != nil || len(f.Msg) > 300 || len(f.Err) > 300 {
		return "", "", nil
	}
	// The cookie is the browser's: only a same-site form target is offered.
	if f.Undo != nil && (!strings.HasPrefix(f.Undo.Action, "/leads/") || strings.ContainsAny(f.Undo.Action, "\\:")) {
		f.Undo = nil
	}
	return f.Msg, f.Err, f.Undo
}

// RequireSession loads the signed-in user from the session cookie; without a
// valid session the browser is sent to /login (and back afterwards). The
// tenant always comes from the session, never from the URL.
func (s *Server) RequireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(SessionCookie)
		if err != nil || c.Value == "" {
			s.toLogin(w, r)
			return
		}
		u, err := s.Tenants.SessionUser(r.Context(), c.Value)
		if err != nil {
			if apperr.Is(err, apperr.Unauthorized) {
				s.clearSessionCookie(w, r)
				s.toLogin(w, r)
				return
			}
			s.uiError(w, r, err)
			return
		}
		t, err := s.Tenants.Tenant(r.Context(), u.TenantID)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		ctx := WithPrincipal(r.Context(), tenants.Principal{TenantID: u.TenantID, UserID: u.ID, Name: u.Name, Role: u.Role,
			Scopes: tenants.ScopesOfRole(u.Role)})
		ctx = context.WithValue(ctx, uiCtxKey{}, &uiSession{User: u, Tenant: t})
		ctx = audit.With(ctx, audit.Context{Actor: audit.Actor{Kind: audit.ActorUser, ID: u.ID, Name: u.Name}, IP: s.clientIP(r)})
		// Signed-in pages are personal: never cache them anywhere.
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// RequireAdminUI answers a signed-in staff user 403 "Admins only" with a
// way back: the page exists, they may not see it (docs/ARCHITECTURE.md,
// "Staff pages"). 404 stays for unknown addresses and other tenants'
// objects, which the handlers behind this answer.
func (s *Server) RequireAdminUI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sess := sessionFrom(r.Context()); sess == nil || !sess.User.IsAdmin() {
			s.uiAdminsOnly(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// toLogin redirects to the login page, remembering where the user was going.
func (s *Server) toLogin(w http.ResponseWriter, r *http.Request) {
	target := "/login"
	if r.Method == http.MethodGet && r.URL.Path != "/" {
		target += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	if r.Header.Get("HX-Request") == "true" {
		// htmx would swap the login page into a fragment; make it navigate.
		w.Header().Set("HX-Redirect", target)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// safeNext accepts only local absolute paths as a post-login destination
// (no open redirect to //evil.example or /\evil.example).
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsAny(next, "\r\n") || strings.HasPrefix(next, "/login") || strings.HasPrefix(next, "/logout") {
		return "/leads"
	}
	return next
}

// clientIP is the address the login limiter counts: the peer, or the last
// X-Forwarded-For hop when a trusted proxy sits in front.
func (s *Server) clientIP(r *http.Request) string {
	if s.Cfg != nil && s.Cfg.TrustProxyHeaders {
		if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			parts := strings.Split(xff, ",")
			if ip := strings.TrimSpace(parts[len(parts)-1]); net.ParseIP(ip) != nil {
				return ip
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
