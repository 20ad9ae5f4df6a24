package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
	srcviews "leadpipe/views/sources"
)

// mappingFields are the lead fields the editor offers, in display order.
var mappingFields = []struct{ name, label string }{
	{"email", "Email"}, {"name", "Name"}, {"first_name", "First name"}, {"last_name", "Last name"},
	{"phone", "Phone"}, {"company", "Company"}, {"created_at", "Created at"},
}

func mappingFromConfig(c kinds.GenericConfig) *srcviews.Mapping {
	m := &srcviews.Mapping{SignatureHeader: c.SignatureHeader, Encoding: c.Encoding, Prefix: c.Prefix,
		DeliveryIDHeader: c.DeliveryIDHeader, DeliveryIDPath: c.DeliveryIDPath, NaturalKeyPath: c.NaturalKeyPath,
		EventTimePath: c.EventTimePath}
	if m.Encoding == "" {
		m.Encoding = "hex"
	}
	for _, f := range mappingFields {
		m.Fields = append(m.Fields, srcviews.MappingField{Name: f.name, Label: f.label, Path: c.Fields[f.name]})
	}
	return m
}

// mappingForm reads the editor's form into a config.
func mappingForm(r *http.Request) kinds.GenericConfig {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	c := kinds.GenericConfig{SignatureHeader: v("signature_header"), Encoding: v("encoding"), Prefix: v("prefix"),
		DeliveryIDHeader: v("delivery_id_header"), DeliveryIDPath: v("delivery_id_path"), NaturalKeyPath: v("natural_key_path"),
		EventTimePath: v("event_time_path"), Fields: map[string]string{}}
	for _, f := range mappingFields {
		if p := v("field_" + f.name); p != "" {
			c.Fields[f.name] = p
		}
	}
	return c
}

func (s *Server) genericSource(w http.ResponseWriter, r *http.Request) (sources.Source, bool) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return sources.Source{}, false
	}
	src, err := s.Sources.Get(r.Context(), sessionFrom(r.Context()).Tenant.ID, chi.URLParam(r, "id"))
	if err == nil && src.Kind != "generic" {
		err = apperr.New(apperr.NotFound, "only generic sources have a mapping editor")
	}
	if err != nil {
		s.uiError(w, r, err)
		return src, false
	}
	return src, true
}

// uiMappingPreview maps the last 20 deliveries under the edited mapping
// (htmx swaps in the preview; without JavaScript the page comes back with
// the form as typed). Nothing is saved.
func (s *Server) uiMappingPreview(w http.ResponseWriter, r *http.Request) {
	src, ok := s.genericSource(w, r)
	if !ok {
		return
	}
	c := mappingForm(r)
	m := mappingFromConfig(c)
	m.Previewed = true
	cfg, _ := json.Marshal(c)
	items, err := s.DeliveryOps.Preview(r.Context(), sessionFrom(r.Context()).Tenant.ID, src.ID, cfg, 20)
	status := http.StatusOK
	var ae *apperr.Error
	switch {
	case err == nil:
		for _, it := range items {
			row := srcviews.PreviewRow{ID: it.DeliveryID, State: it.State, Email: it.Fields["email"], Name: it.Fields["name"],
				Phone: it.Fields["phone"], Company: it.Fields["company"], EventTime: it.EventTime}
			if it.NaturalKey != nil {
				row.NaturalKey = *it.NaturalKey
			}
			if it.Error != nil {
				row.Error = *it.Error
			}
			m.Preview = append(m.Preview, row)
		}
	case errors.As(err, &ae) && ae.Code == apperr.Invalid:
		m.Errors = ae.Fields
		status = http.StatusUnprocessableEntity
	default:
		s.uiError(w, r, err)
		return
	}
	s.renderSourceWith(w, r, status, src.ID, "", "", "", m)
}

// uiMappingSave stores the edited mapping (PATCH's rules: a 422 re-renders
// the form with the offending settings).
func (s *Server) uiMappingSave(w http.ResponseWriter, r *http.Request) {
	src, ok := s.genericSource(w, r)
	if !ok {
		return
	}
	c := mappingForm(r)
	cfg, _ := json.Marshal(c)
	_, err := s.Sources.Patch(r.Context(), sessionFrom(r.Context()).Tenant.ID, src.ID, sources.PatchInput{Config: cfg})
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code == apperr.Invalid {
		m := mappingFromConfig(c)
		m.Errors = ae.Fields
		s.renderSourceWith(w, r, http.StatusUnprocessableEntity, src.ID, "", "", "", m)
		return
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.renderSourceWith(w, r, http.StatusOK, src.ID, "", "", "Mapping saved. Reprocess the failed deliveries to apply it to them.", nil)
}

// uiReprocessFailed reprocesses every failed delivery of the source.
func (s *Server) uiReprocessFailed(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	n, err := s.DeliveryOps.ReprocessSource(r.Context(), sessionFrom(r.Context()).Tenant.ID, id, StateFailed)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	flash := "Queued " + strconv.Itoa(n) + " failed deliveries again."
	if n == 1 {
		flash = "Queued 1 failed delivery again."
	}
	s.renderSourceWith(w, r, http.StatusOK, id, "", "", flash, nil)
}
