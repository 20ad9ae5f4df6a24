package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/tenants"
	"leadpipe/views/auth"
)

// maxFormBytes caps every UI form body.
const maxFormBytes = 256 << 10

// parseForm reads a POSTed form with a size cap.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return apperr.New(apperr.TooLarge, "the form is larger than %d KiB", maxFormBytes>>10)
		}
		return apperr.New(apperr.BadRequest, "the form could not be read")
	}
	return nil
}

// withForm parses the posted form (parseForm) before h runs; a form that
// cannot be read gets the error page instead.
func (s *Server) withForm(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(w, r); err != nil {
			s.uiError(w, r, err)
			return
		}
		h(w, r)
	}
}

// signInForm starts the answer to a sign-in, reset or invitation form:
// never cached, and the form parsed; false when it has answered with the
// error page.
func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Cache-Control", "no-store")
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return false
	}
	return true
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if _, err := s.Tenants.SessionUser(r.Context(), c.Value); err == nil {
			seeOther(w, r, safeNext(next))
			return
		}
	}
	v := auth.LoginView{}
	if next != "" && safeNext(next) == next {
		v.Next = next
	}
	if r.URL.Query().Get("signed_out") == "1" {
		v.Notice = "You are signed out."
	}
	if r.URL.Query().Get("reset") == "1" {
		v.Notice = "Your new password is set. Sign in with it."
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, auth.Login(v))
}

func (s *Server) loginSubmit(w http.ResponseWriter, r *http.Request) {
	if !s.signInForm(w, r) {
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	password := r.PostFormValue("password")
	v := auth.LoginView{Email: email}
	if next := r.PostFormValue("next"); next != "" && safeNext(next) == next {
		v.Next = next
	}
	ip, device := s.clientIP(r), s.ui.devices.device(r, email)
	if ok, wait := s.ui.logins.Allow(ip, email, device); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		v.Limited = "Too many failed sign-ins to this account. Try again in " + waitText(wait) +
			", or from a browser you have signed in with before."
		s.render(w, r, http.StatusTooManyRequests, auth.Login(v))
		return
	}
	ctx := audit.With(r.Context(), audit.Context{IP: ip})
	logins, err := s.Tenants.Authenticate(ctx, email, password, r.PostFormValue("tenant"))
	if err != nil {
		if apperr.Is(err, apperr.Unauthorized) {
			s.ui.logins.Fail(ip, email, device)
			v.Error = "Check both and try again. Passwords are case-sensitive."
			s.render(w, r, http.StatusUnprocessableEntity, auth.Login(v))
			return
		}
		s.uiError(w, r, err)
		return
	}
	s.ui.logins.Succeed(device)
	s.trustDevice(w, r, email)
	if tz := r.PostFormValue("tz"); tz != "" {
		// The browser's zone becomes the person's (in each of their tenants)
		// until they change it in My settings; a bad name only loses this
		// convenience.
		for _, l := range logins {
			if l.User.TimeZone != "" {
				continue
			}
			if err := s.Tenants.SetTimeZone(ctx, l.User.TenantID, l.User.ID, tz); err != nil && !apperr.Is(err, apperr.Invalid) {
				s.Log.WarnContext(ctx, "store time zone at sign-in", "err", err)
			}
		}
	}
	if len(logins) > 1 {
		// One person in several tenants: ask which one this session is for.
		cv := auth.ChooseView{Email: email, Next: v.Next}
		members := make([]string, len(logins))
		for i, l := range logins {
			members[i] = l.Tenant.ID + ":" + l.User.ID
			cv.Tenants = append(cv.Tenants, auth.TenantChoice{ID: l.Tenant.ID, Name: l.Tenant.Name, Slug: l.Tenant.Slug})
		}
		cv.Ticket = s.ui.devices.ticket(email, members, time.Now())
		s.render(w, r, http.StatusOK, auth.ChooseTenant(cv))
		return
	}
	s.startSession(ctx, w, r, logins[0].User, v.Next)
}

// loginChooseTenant is the chooser's answer: the ticket proves the
// password opened the chosen tenant a moment ago.
func (s *Server) loginChooseTenant(w http.ResponseWriter, r *http.Request) {
	if !s.signInForm(w, r) {
		return
	}
	next := r.PostFormValue("next")
	if safeNext(next) != next {
		next = ""
	}
	email, members, ok := s.ui.devices.openTicket(r.PostFormValue("ticket"), time.Now())
	chosen := r.PostFormValue("tenant")
	for _, m := range members {
		tenantID, userID, _ := strings.Cut(m, ":")
		if !ok || tenantID != chosen {
			continue
		}
		ctx := audit.With(r.Context(), audit.Context{IP: s.clientIP(r)})
		l, err := s.Tenants.Member(ctx, tenantID, userID)
		if err != nil {
			break
		}
		s.startSession(ctx, w, r, l.User, next)
		return
	}
	s.render(w, r, http.StatusUnprocessableEntity, auth.Login(auth.LoginView{Email: email, Next: next,
		Error: "That choice expired or was not yours to make. Sign in again."}))
}

// startSession signs u in and sends the browser on.
func (s *Server) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, u tenants.User, next string) {
	cookie, err := s.Tenants.CreateSession(ctx, u)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setSessionCookie(w, r, cookie)
	seeOther(w, r, safeNext(next))
}

func waitText(d time.Duration) string {
	if d < time.Minute {
		return "a minute"
	}
	m := int((d + time.Minute - 1) / time.Minute)
	if m == 1 {
		return "a minute"
	}
	return strconv.Itoa(m) + " minutes"
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		ctx := audit.With(r.Context(), audit.Context{IP: s.clientIP(r)})
		if err := s.Tenants.EndSession(ctx, c.Value); err != nil {
			s.uiError(w, r, err)
			return
		}
	}
	s.clearSessionCookie(w, r)
	seeOther(w, r, "/login?signed_out=1")
}
