package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"leadpipe/internal/apperr"
	"leadpipe/internal/notify"
	"leadpipe/views/settings"
)

func (s *Server) notificationsView(w http.ResponseWriter, r *http.Request, p notify.Preferences, errs map[string]string) settings.NotificationsView {
	sess := sessionFrom(r.Context())
	tz := sess.User.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return settings.NotificationsView{Page: s.page(w, r, "E-mail notifications", "me"), Kinds: notify.Optional(), Off: p.Off,
		QuietFrom: p.QuietFrom, QuietTo: p.QuietTo, Errors: errs, TimeZone: tz}
}

// uiNotifications is GET /settings/notifications: the signed-in person's
// e-mail preferences.
func (s *Server) uiNotifications(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	p, err := s.Notify.Preferences(r.Context(), sess.Tenant.ID, sess.User.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, settings.Notifications(s.notificationsView(w, r, p, nil)))
}

// uiSaveNotifications is POST /settings/notifications (checked kinds are
// on; the rest off).
func (s *Server) uiSaveNotifications(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	on := r.PostForm["on"]
	in := notify.Preferences{QuietFrom: strings.TrimSpace(r.PostFormValue("quiet_from")), QuietTo: strings.TrimSpace(r.PostFormValue("quiet_to"))}
	for _, k := range notify.Optional() {
		if !slices.Contains(on, k) {
			in.Off = append(in.Off, k)
		}
	}
	if _, err := s.Notify.SetPreferences(r.Context(), sess.Tenant.ID, sess.User.ID, in); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code == apperr.Invalid {
			errs := map[string]string{}
			for f := range ae.Fields {
				errs[f] = "Enter a time like 22:00, or leave both empty."
			}
			s.render(w, r, http.StatusUnprocessableEntity, settings.Notifications(s.notificationsView(w, r, in, errs)))
			return
		}
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Notification settings saved.")
	seeOther(w, r, "/settings/notifications")
}
