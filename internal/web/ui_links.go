package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/tenants"
	"leadpipe/views/auth"
)

// Paths of the one-time links (docs/NOTIFICATIONS.md, "Invitations and
// password reset"): the token follows.
const (
	InvitePath = "/invite/"
	ResetPath  = "/reset/"
)

// LinkURL is the address a message carries for a link of kind.
func LinkURL(baseURL, kind, token string) string {
	p := ResetPath
	if kind == tenants.LinkInvitation {
		p = InvitePath
	}
	return strings.TrimRight(baseURL, "/") + p + token
}

// linkUIRoutes mounts "Forgot password?" and the pages behind invitation
// and reset links; none needs a session.
func (s *Server) linkUIRoutes(r chi.Router) {
	r.Get("/login/forgot", s.forgotPage)
	r.Post("/login/forgot", s.forgotSubmit)
	r.Get(InvitePath+"{token}", s.linkPage(tenants.LinkInvitation))
	r.Post(InvitePath+"{token}", s.linkSubmit(tenants.LinkInvitation))
	r.Get(ResetPath+"{token}", s.linkPage(tenants.LinkPasswordReset))
	r.Post(ResetPath+"{token}", s.linkSubmit(tenants.LinkPasswordReset))
}

func (s *Server) forgotPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, auth.Forgot(auth.ForgotView{}))
}

// forgotSubmit asks for reset links. The answer is the same, byte for
// byte, whether or not the address belongs to anyone, and even when
// making the links failed (that is logged): it never tells who has an
// account. Every request counts against the address and the client, known
// address or not, so the limit tells nothing either.
func (s *Server) forgotSubmit(w http.ResponseWriter, r *http.Request) {
	if !s.signInForm(w, r) {
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	if !tenants.ValidEmail(email) {
		s.render(w, r, http.StatusUnprocessableEntity, auth.Forgot(auth.ForgotView{Error: "Enter the email address you sign in with."}))
		return
	}
	ip := s.clientIP(r)
	if ok, wait := s.ui.resets.Allow(ip, email, ""); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		s.render(w, r, http.StatusTooManyRequests, auth.Forgot(auth.ForgotView{
			Limited: "Too many reset requests. Try again in " + waitText(wait) + "."}))
		return
	}
	s.ui.resets.Fail(ip, email, "")
	ctx := audit.With(r.Context(), audit.Context{IP: ip})
	if err := s.Tenants.RequestReset(ctx, email); err != nil {
		s.Log.ErrorContext(ctx, "password reset request", "err", err)
	}
	s.render(w, r, http.StatusOK, auth.Forgot(auth.ForgotView{Sent: true}))
}

func linkView(kind string, info tenants.LinkInfo, action string) auth.SetPasswordView {
	return auth.SetPasswordView{Invitation: kind == tenants.LinkInvitation, Action: action, Email: info.User.Email,
		Tenant: info.Tenant.Name, Name: info.User.Name, Expires: info.ExpiresAt}
}

// linkPage shows the form behind a link without using it: a mail
// scanner that fetches the link leaves it working.
func (s *Server) linkPage(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		info, err := s.Tenants.OpenLink(r.Context(), chi.URLParam(r, "token"), kind)
		if apperr.Is(err, apperr.NotFound) {
			s.render(w, r, http.StatusGone, auth.SetPassword(auth.SetPasswordView{Gone: true}))
			return
		}
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		s.render(w, r, http.StatusOK, auth.SetPassword(linkView(kind, info, r.URL.Path)))
	}
}

// linkSubmit sets the password and spends the link. An invitation lands
// signed in; a reset goes to the sign-in page (every session of the
// account in that workspace just ended), and both mark this browser as
// trusted for the account so a lockout from someone else's guesses does
// not hold its owner out.
func (s *Server) linkSubmit(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.signInForm(w, r) {
			return
		}
		token := chi.URLParam(r, "token")
		password := r.PostFormValue("password")
		again := func(errs map[string]string) {
			info, err := s.Tenants.OpenLink(r.Context(), token, kind)
			if err != nil {
				s.render(w, r, http.StatusGone, auth.SetPassword(auth.SetPasswordView{Gone: true}))
				return
			}
			v := linkView(kind, info, r.URL.Path)
			v.Errors = errs
			s.render(w, r, http.StatusUnprocessableEntity, auth.SetPassword(v))
		}
		if password != r.PostFormValue("confirm") {
			again(map[string]string{"confirm": "The two passwords differ. Type the same one twice."})
			return
		}
		ctx := audit.With(r.Context(), audit.Context{IP: s.clientIP(r)})
		u, err := s.Tenants.UseLink(ctx, token, kind, password)
		switch {
		case apperr.Is(err, apperr.Invalid):
			again(fieldErrors(err))
			return
		case apperr.Is(err, apperr.NotFound):
			s.render(w, r, http.StatusGone, auth.SetPassword(auth.SetPasswordView{Gone: true}))
			return
		case err != nil:
			s.uiError(w, r, err)
			return
		}
		s.trustDevice(w, r, u.Email)
		if kind == tenants.LinkInvitation {
			s.startSession(ctx, w, r, u, "/leads")
			return
		}
		s.clearSessionCookie(w, r)
		seeOther(w, r, "/login?reset=1")
	}
}
