package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"leadpipe/internal/apperr"
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
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, auth.Login(v))
}

func (s *Server) loginSubmit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
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
	u, err := s.Tenants.Authenticate(r.Context(), email, password)
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
	cookie, err := s.Tenants.CreateSession(r.Context(), u)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setSessionCookie(w, r, cookie)
	seeOther(w, r, safeNext(v.Next))
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
		if err := s.Tenants.EndSession(r.Context(), c.Value); err != nil {
			s.uiError(w, r, err)
			return
		}
	}
	s.clearSessionCookie(w, r)
	seeOther(w, r, "/login?signed_out=1")
}
