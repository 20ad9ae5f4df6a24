package web

import (
	"net/http"
	"time"

	"leadpipe/internal/notify"
	"leadpipe/views/settings"
)

func mailItem(it notify.Item) settings.MailItem {
	return settings.MailItem{ID: it.ID, Kind: it.Kind, State: it.State, Attempts: it.Attempts, At: it.CreatedAt,
		To: deref(it.To), Subject: deref(it.Subject), LastError: deref(it.LastError)}
}

// uiMail is GET /settings/mail?state=failed&id=: the tenant's e-mail for
// admins (the preview when no SMTP is configured), one message opened.
func (s *Server) uiMail(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	q := r.URL.Query()
	v := settings.MailView{Page: s.page(w, r, "E-mail", "mail"), Sending: s.Notify.Sending(),
		FailedOnly: q.Get("state") == "failed", Now: time.Now()}
	items, err := s.Notify.List(r.Context(), sess.Tenant.ID, v.FailedOnly)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	for _, it := range items {
		v.Items = append(v.Items, mailItem(it))
	}
	if id := q.Get("id"); id != "" {
		it, err := s.Notify.Get(r.Context(), sess.Tenant.ID, id)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		// Without SMTP the preview is where an invitation or reset is
		// read: its link is put back while it is live.
		if it, _, err = s.Notify.Reveal(r.Context(), sess.Tenant.ID, it); err != nil {
			s.uiError(w, r, err)
			return
		}
		m := mailItem(it)
		v.Open = &m
		v.OpenText, v.OpenHTML = deref(it.Text), deref(it.HTML)
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, settings.Mail(v))
}
