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
	// The session's user may be older than the last change: read it.
	if u, err := s.Tenants.User(r.Context(), sess.Tenant.ID, sess.User.ID); err == nil && u.Away(v.Now) {
		v.AwayUntil = u.AwayUntil
	}
	v.Page = s.page(w, r, "My settings", "me")
	s.render(w, r, status, settings.Profile(v))
}

// uiSaveProfile stores the time zone typed in (or this browser's, from
// "Use this browser's zone"); a name time.LoadLocation does not know is
// shown on its field and nothing changes.
func (s *Server) uiSaveProfile(w http.ResponseWriter, r *http.Request) {
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

// uiSaveAway is POST /settings/me/away: "away until" a time typed in the
// person's own zone (round robin skips them meanwhile), or back
// (back=1 or an empty field).
func (s *Server) uiSaveAway(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	var until *time.Time
	typed := strings.TrimSpace(r.PostFormValue("away_until"))
	if r.PostFormValue("back") == "" && typed != "" {
		t, err := time.ParseInLocation("2006-01-02T15:04", typed, sess.User.Location())
		if err != nil {
			s.renderProfile(w, r, http.StatusUnprocessableEntity, "", "")
			return
		}
		until = &t
	}
	now := time.Now()
	if _, err := s.Tenants.SetAway(r.Context(), sess.Tenant.ID, sess.User.ID, until, now); err != nil {
		if apperr.Is(err, apperr.Invalid) {
			s.setFlashError(w, r, "Away until: pick a time within a year.")
			seeOther(w, r, "/settings/me")
			return
		}
		s.uiError(w, r, err)
		return
	}
	if until != nil && until.After(now) {
		s.setFlash(w, r, "You are away until "+until.In(sess.User.Location()).Format("Mon 2 Jan 15:04")+": round robin gives you no new leads until then.")
	} else {
		s.setFlash(w, r, "You are back: round robin gives you new leads again.")
	}
	seeOther(w, r, "/settings/me")
}
