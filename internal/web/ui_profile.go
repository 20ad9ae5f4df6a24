package web

import (
	"net/http"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/views/settings"
)

// uiProfile is GET /settings/me: the signed-in person's own settings.
func (s *Server) uiProfile(w http.ResponseWriter, r *http.Request) {
	s.renderProfile(w, r, http.StatusOK, "", "")
}

func (s *Server) renderProfile(w http.ResponseWriter, r *http.Request, status int, tz, problem string) {
	sess := sessionFrom(r.Context())
	if tz == "" {
		tz = sess.User.TimeZone
	}
	v := settings.ProfileView{Name: sess.User.Name, Email: sess.User.Email, TimeZone: tz, Error: problem, Now: time.Now()}
	v.Page = s.page(w, r, "My settings", "me")
	s.render(w, r, status, settings.Profile(v))
}

// uiSaveProfile stores the time zone typed in (or this browser's, from
// "Use this browser's zone"); a name time.LoadLocation does not know is
// shown on its field and nothing changes.
func (s *Server) uiSaveProfile(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
	sess := sessionFrom(r.Context())
	tz := strings.TrimSpace(r.PostFormValue("time_zone"))
	if use := strings.TrimSpace(r.PostFormValue("use_zone")); use != "" {
		tz = use
	}
	if err := s.Tenants.SetTimeZone(r.Context(), sess.Tenant.ID, sess.User.ID, tz); err != nil {
		if apperr.Is(err, apperr.Invalid) {
			s.renderProfile(w, r, http.StatusUnprocessableEntity, tz, "Not a time zone Leadpipe knows: pick one from the list, such as Europe/Berlin.")
			return
		}
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Time zone set to "+tz+".")
	seeOther(w, r, "/settings/me")
}
