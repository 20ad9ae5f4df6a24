package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/webhooks"
)

// DeliveryAdmin lists, reprocesses and previews a source's deliveries
// (implemented by webhooks.Admin). Unknown or another tenant's ids are
// apperr.NotFound.
type DeliveryAdmin interface {
	ListDeliveries(ctx context.Context, tenantID, sourceID, state, cursor string, limit int) (webhooks.DeliveryPage, error)
	CountDeliveries(ctx context.Context, tenantID, sourceID, state string) (int, error)
	Reprocess(ctx context.Context, tenantID, id string) (webhooks.DeliveryItem, error)
	ReprocessSource(ctx context.Context, tenantID, sourceID, state string) (int, error)
	Preview(ctx context.Context, tenantID, sourceID string, config json.RawMessage, limit int) ([]webhooks.PreviewItem, error)
	DiscardDeadLetters(ctx context.Context, tenantID, sourceID string, ids []string) (int, error)
}

// limitParam reads ?limit= (default def, 1..max).
func limitParam(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, apperr.InvalidFields(map[string]string{"limit": "must be a whole number from 1 to " + strconv.Itoa(max)})
	}
	return n, nil
}

// positiveLimit reads ?limit= for a service that caps it itself: absent is
// 0 (the service's default), anything but a whole number from 1 is invalid
// with msg.
func positiveLimit(q url.Values, msg string) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apperr.InvalidFields(map[string]string{"limit": msg})
	}
	return n, nil
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 50, 200)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	q := r.URL.Query()
	page, err := s.DeliveryOps.ListDeliveries(r.Context(), Tenant(r), chi.URLParam(r, "id"), q.Get("state"), q.Get("cursor"), limit)
	page.Items = nonNil(page.Items)
	s.writeResult(w, r, http.StatusOK, page, err)
}

func (s *Server) reprocessDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := s.DeliveryOps.Reprocess(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	s.writeResult(w, r, http.StatusAccepted, map[string]string{"id": d.ID, "state": d.State}, err)
}

func (s *Server) reprocessSource(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State string `json:"state"`
	}
	if err := DecodeJSON(w, r, &in); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	n, err := s.DeliveryOps.ReprocessSource(r.Context(), Tenant(r), chi.URLParam(r, "id"), in.State)
	s.writeQueued(w, r, n, err)
}

// MaxPreview bounds a preview's limit.
const MaxPreview = 100

func (s *Server) previewSource(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Config json.RawMessage `json:"config"`
		Limit  *int            `json:"limit"`
	}
	if err := DecodeJSON(w, r, &in); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	limit := 20
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > MaxPreview {
		WriteError(w, r, s.Log, apperr.InvalidFields(map[string]string{"limit": "must be from 1 to " + strconv.Itoa(MaxPreview)}))
		return
	}
	items, err := s.DeliveryOps.Preview(r.Context(), Tenant(r), chi.URLParam(r, "id"), in.Config, limit)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	items = nonNil(items)
	WriteJSON(w, http.StatusOK, map[string]any{"items": items})
}
