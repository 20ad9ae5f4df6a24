package web

import (
	"net/http"
	"strconv"
	"strings"

	"leadpipe/internal/apperr"
	"leadpipe/internal/retention"
	"leadpipe/views/settings"
)

func (s *Server) retentionView(w http.ResponseWriter, r *http.Request, form settings.RetentionForm) settings.RetentionView {
	d := retention.Defaults
	return settings.RetentionView{Page: s.page(w, r, "Retention", "retention"), Form: form,
		DefaultPayload: d.DeliveryPayloadDays, DefaultDeadLetter: d.DeadLetterDays, DefaultEvent: d.EventDays}
}

// uiRetention is GET /settings/retention.
func (s *Server) uiRetention(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	st, err := s.Retention.Get(r.Context(), sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	form := settings.RetentionForm{DeliveryPayloadDays: strconv.Itoa(st.DeliveryPayloadDays),
		DeadLetterDays: strconv.Itoa(st.DeadLetterDays), EventDays: strconv.Itoa(st.EventDays)}
	s.render(w, r, http.StatusOK, settings.Retention(s.retentionView(w, r, form)))
}

// uiSaveRetention is POST /settings/retention (the form posts all three).
func (s *Server) uiSaveRetention(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	form := settings.RetentionForm{DeliveryPayloadDays: strings.TrimSpace(r.PostFormValue("delivery_payload_days")),
		DeadLetterDays: strings.TrimSpace(r.PostFormValue("dead_letter_days")), EventDays: strings.TrimSpace(r.PostFormValue("event_days")),
		Errors: map[string]string{}}
	var in retention.Input
	for _, f := range []struct {
		name, value string
		dst         **int
	}{
		{"delivery_payload_days", form.DeliveryPayloadDays, &in.DeliveryPayloadDays},
		{"dead_letter_days", form.DeadLetterDays, &in.DeadLetterDays},
		{"event_days", form.EventDays, &in.EventDays},
	} {
		n, err := strconv.Atoi(f.value)
		if err != nil {
			form.Errors[f.name] = "Enter a whole number of days from 1 to 3650."
			continue
		}
		*f.dst = &n
	}
	if len(form.Errors) == 0 {
		_, err := s.Retention.Set(r.Context(), sess.Tenant.ID, in)
		switch {
		case apperr.Is(err, apperr.Invalid):
			form.Errors = fieldErrors(err)
		case err != nil:
			s.uiError(w, r, err)
			return
		default:
			s.setFlash(w, r, "Retention saved. The hourly purge applies it.")
			seeOther(w, r, "/settings/retention")
			return
		}
	}
	s.render(w, r, http.StatusUnprocessableEntity, settings.Retention(s.retentionView(nil, r, form)))
}
