package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/events"
	"leadpipe/internal/idempotency"
	epviews "leadpipe/views/endpoints"
)

// endpointUIRoutes are the admin pages of outbound webhooks (inside the
// admin group of uiRoutes).
func (s *Server) endpointUIRoutes(r chi.Router) {
	r.Get("/settings/endpoints", formPage(s, s.endpointsList, epviews.List))
	r.Post("/settings/endpoints", s.withForm(s.uiCreateEndpoint))
	r.Get("/settings/endpoints/{id}", s.uiEndpoint)
	r.Post("/settings/endpoints/{id}", s.withForm(s.uiEditEndpoint))
	r.Post("/settings/endpoints/{id}/enabled", s.withForm(s.uiEndpointEnabled))
	r.Post("/settings/endpoints/{id}/recover", s.withForm(s.uiRecoverEndpoint))
	r.Post("/settings/endpoints/{id}/rotate-secret", s.withForm(s.uiRotateEndpointSecret))
	r.Post("/settings/endpoints/{id}/delete", s.uiDeleteEndpoint)
	r.Get("/settings/events/{id}", s.uiEvent)
	r.Post("/settings/events/{id}/replay", s.withForm(s.uiReplayEvent))
}

func endpointView(ep events.Endpoint) epviews.Endpoint {
	v := epviews.Endpoint{ID: ep.ID, URL: ep.URL, Description: ep.Description, Events: ep.Events, Enabled: ep.Enabled,
		DisabledAt: ep.DisabledAt, FailingSince: ep.FailingSince, LastSuccessAt: ep.LastSuccessAt,
		LastFailureAt: ep.LastFailureAt, CreatedAt: ep.CreatedAt}
	if ep.DisabledReason != nil {
		v.DisabledReason = sentence("", *ep.DisabledReason)
	}
	v.LastError = deref(ep.LastError)
	return v
}

func (s *Server) endpointsList(w http.ResponseWriter, r *http.Request, form epviews.Form) (epviews.ListView, error) {
	sess := sessionFrom(r.Context())
	eps, err := s.Events.List(r.Context(), sess.Tenant.ID)
	if err != nil {
		return epviews.ListView{}, err
	}
	v := epviews.ListView{Page: s.page(w, r, "Outbound endpoints", "endpoints"), Form: form, Now: time.Now()}
	for _, ep := range eps {
		v.Endpoints = append(v.Endpoints, endpointView(ep))
	}
	v.Form.Key = keepFormKey(v.Form.Key)
	if v.Form.Events == nil && v.Form.URL == "" {
		v.Form.Events = []string{events.LeadCreated, events.LeadStatusChanged}
	}
	return v, nil
}

// uiCreateEndpoint answers with the page itself: the secret is shown this
// once and never kept in plain text.
func (s *Server) uiCreateEndpoint(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	in := events.CreateInput{URL: strings.TrimSpace(r.PostFormValue("url")), Description: r.PostFormValue("description"),
		Events: r.PostForm["events"]}
	form := epviews.Form{URL: in.URL, Description: in.Description, Events: in.Events, Key: r.PostFormValue("key")}
	var created events.Endpoint
	_, err := s.uiOnce(r.Context(), sess.Tenant.ID, form.Key, "endpoints", func(k *idempotency.Key) (string, error) {
		ep, err := s.Events.CreateOnce(r.Context(), sess.Tenant.ID, in, idempotency.Once[events.Endpoint]{Key: k,
			Respond: func(ep events.Endpoint) (idempotency.Response, error) {
				return idempotency.SeeOther("/settings/endpoints/" + ep.ID), nil
			}})
		created = ep
		return "/settings/endpoints/" + ep.ID, err
	})
	status := http.StatusOK
	switch {
	case apperr.Is(err, apperr.Invalid):
		status = http.StatusUnprocessableEntity
		form.Errors = fieldErrors(err)
	case err != nil:
		s.uiError(w, r, err)
		return
	default:
		form = epviews.Form{}
	}
	v, verr := s.endpointsList(nil, r, form)
	if verr != nil {
		s.uiError(w, r, verr)
		return
	}
	if created.Secret != "" {
		v.NewSecret, v.NewID = created.Secret, created.ID
	} else if err == nil {
		v.Page.Flash = "This endpoint was already added; its secret was shown once, on the first submit."
	}
	s.render(w, r, status, epviews.List(v))
}

func attemptViews(atts []events.Attempt, urls map[string]string) []epviews.Attempt {
	out := make([]epviews.Attempt, 0, len(atts))
	for _, a := range atts {
		out = append(out, epviews.Attempt{ID: a.ID, EventID: a.EventID, EventType: a.EventType, EndpointID: a.EndpointID,
			EndpointURL: urls[a.EndpointID], Attempt: a.Attempt, At: a.AttemptedAt, Status: a.Status, LatencyMS: a.LatencyMS,
			Response: a.Response, Error: deref(a.Error), Outcome: a.Outcome})
	}
	return out
}

// deref is what p points at, or T's zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

const datetimeLocal = "2006-01-02T15:04:05"

type endpointPageOpts struct {
	status       int
	form         *epviews.Form
	secret       string
	recoverError string
}

func (s *Server) renderEndpoint(w http.ResponseWriter, r *http.Request, id string, o endpointPageOpts) {
	sess := sessionFrom(r.Context())
	ep, err := s.Events.Get(r.Context(), sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	atts, next, err := s.Events.Attempts(r.Context(), sess.Tenant.ID, id, cursor, 50)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := epviews.DetailView{Page: s.page(w, r, ep.URL, "endpoints"), Endpoint: endpointView(ep), NewSecret: o.secret,
		Attempts: attemptViews(atts, nil), RecoverError: o.recoverError, Now: time.Now()}
	if next != "" {
		v.NextHref = "/settings/endpoints/" + id + "?cursor=" + url.QueryEscape(next)
	}
	since := time.Now().Add(-24 * time.Hour)
	switch {
	case ep.FailingSince != nil:
		since = *ep.FailingSince
	case ep.DisabledAt != nil:
		since = *ep.DisabledAt
	}
	v.RecoverSince = since.UTC().Format(datetimeLocal)
	if o.form != nil {
		v.Form = *o.form
	} else {
		v.Form = epviews.Form{URL: ep.URL, Description: ep.Description, Events: ep.Events}
	}
	status := o.status
	if status == 0 {
		status = http.StatusOK
	}
	s.render(w, r, status, epviews.Detail(v))
}

func (s *Server) uiEndpoint(w http.ResponseWriter, r *http.Request) {
	s.renderEndpoint(w, r, chi.URLParam(r, "id"), endpointPageOpts{})
}

func (s *Server) uiEditEndpoint(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	u, desc, evs := strings.TrimSpace(r.PostFormValue("url")), r.PostFormValue("description"), r.PostForm["events"]
	if evs == nil {
		evs = []string{}
	}
	_, err := s.Events.Patch(r.Context(), sess.Tenant.ID, id, events.PatchInput{URL: &u, Description: &desc, Events: &evs})
	if apperr.Is(err, apperr.Invalid) {
		s.renderEndpoint(w, r, id, endpointPageOpts{status: http.StatusUnprocessableEntity,
			form: &epviews.Form{URL: u, Description: desc, Events: evs, Errors: fieldErrors(err)}})
		return
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Saved.")
	seeOther(w, r, "/settings/endpoints/"+id)
}

func parseSince(v string) (time.Time, bool) {
	for _, layout := range []string{datetimeLocal, "2006-01-02T15:04", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, strings.TrimSpace(v), time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (s *Server) uiEndpointEnabled(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	on := r.PostFormValue("enabled") == "true"
	if _, err := s.Events.Patch(r.Context(), sess.Tenant.ID, id, events.PatchInput{Enabled: &on}); err != nil {
		s.uiError(w, r, err)
		return
	}
	msg := "Endpoint disabled. Nothing is sent to it until you enable it again."
	if on {
		msg = "Endpoint enabled."
		if r.PostFormValue("recover") != "" {
			if since, ok := parseSince(r.PostFormValue("since")); ok {
				n, err := s.Events.Recover(r.Context(), sess.Tenant.ID, id, events.RecoverInput{Since: &since})
				if err != nil {
					s.uiError(w, r, err)
					return
				}
				msg = "Endpoint enabled; " + plural(n, "missed delivery", "missed deliveries") + " on the way."
			}
		}
	}
	s.setFlash(w, r, msg)
	seeOther(w, r, "/settings/endpoints/"+id)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func (s *Server) uiRecoverEndpoint(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	since, ok := parseSince(r.PostFormValue("since"))
	if !ok {
		s.renderEndpoint(w, r, id, endpointPageOpts{status: http.StatusUnprocessableEntity, recoverError: "Enter a date and time, like 2026-12-01 09:00."})
		return
	}
	n, err := s.Events.Recover(r.Context(), sess.Tenant.ID, id, events.RecoverInput{Since: &since})
	switch {
	case apperr.Is(err, apperr.Invalid):
		s.renderEndpoint(w, r, id, endpointPageOpts{status: http.StatusUnprocessableEntity, recoverError: "The time must not be in the future."})
		return
	case apperr.Is(err, apperr.Conflict):
		s.renderEndpoint(w, r, id, endpointPageOpts{status: http.StatusConflict, recoverError: "Enable the endpoint first."})
		return
	case err != nil:
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, plural(n, "delivery", "deliveries")+" queued again.")
	seeOther(w, r, "/settings/endpoints/"+id)
}

func (s *Server) uiRotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id, grace := chi.URLParam(r, "id"), postedGrace(r)
	ep, err := s.Events.Rotate(r.Context(), sess.Tenant.ID, id, events.RotateInput{GraceSeconds: &grace})
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.renderEndpoint(w, r, id, endpointPageOpts{secret: ep.Secret})
}

func (s *Server) uiDeleteEndpoint(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	ep, err := s.Events.Get(r.Context(), sess.Tenant.ID, chi.URLParam(r, "id"))
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	if err := s.Events.Delete(r.Context(), sess.Tenant.ID, ep.ID); err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Endpoint "+ep.URL+" deleted. Nothing more is sent to it.")
	seeOther(w, r, "/settings/endpoints")
}

func (s *Server) uiEvent(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	ev, err := s.Events.Event(r.Context(), sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	atts, _, err := s.Events.EventAttempts(r.Context(), sess.Tenant.ID, id, "", 200)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	eps, err := s.Events.List(r.Context(), sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	urls := make(map[string]string, len(eps))
	for _, ep := range eps {
		urls[ep.ID] = ep.URL
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, ev.Payload, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(ev.Payload)
	}
	v := epviews.EventView{Page: s.page(w, r, ev.Type, "endpoints"), ID: ev.ID, Type: ev.Type, ResourceID: ev.ResourceID,
		Sequence: ev.Sequence, CreatedAt: ev.CreatedAt, Payload: pretty.String(), Attempts: attemptViews(atts, urls), Now: time.Now()}
	for _, d := range ev.Deliveries {
		v.Deliveries = append(v.Deliveries, epviews.Delivery{EndpointID: d.EndpointID, EndpointURL: urls[d.EndpointID], State: d.State,
			Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, LastError: deref(d.LastError)})
	}
	s.render(w, r, http.StatusOK, epviews.Event(v))
}

func (s *Server) uiReplayEvent(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	n, err := s.Events.Replay(r.Context(), sess.Tenant.ID, id, events.ReplayInput{EndpointID: r.PostFormValue("endpoint_id")})
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	back := "/settings/events/" + id
	if b := r.PostFormValue("back"); strings.HasPrefix(b, "/settings/endpoints/") && !strings.ContainsAny(b, "?#\\") {
		back = b
	}
	s.setFlash(w, r, "Replaying: "+plural(n, "delivery", "deliveries")+" queued.")
	seeOther(w, r, back)
}
