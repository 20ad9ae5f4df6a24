package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
)

// Delivery states (docs/ARCHITECTURE.md, one webhook from route to lead).
const (
	StateReceived   = "received"
	StateProcessed  = "processed"
	StateFailed     = "failed"
	StateDeadLetter = "dead_letter"
)

// DeliveryItem is one delivery (or dead letter) as the API lists it.
type DeliveryItem struct {
	ID          string     `json:"id"`
	State       string     `json:"state"`
	ReceivedAt  time.Time  `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
	Attempts    int        `json:"attempts"`
	LastError   *string    `json:"last_error"`
	LeadID      *string    `json:"lead_id"`
	Duplicates  int        `json:"duplicates"`
	// PayloadRemoved: the retention purge blanked the raw payload.
	PayloadRemoved bool `json:"payload_removed"`
	// Raw is the stored body (the UI's failed list shows it; the API
	// leaves it out), SenderID the sender's delivery id (UI only).
	Raw      []byte `json:"-"`
	SenderID string `json:"-"`
}

// DeliveryPage is one page of a source's deliveries, newest first.
type DeliveryPage struct {
	Items      []DeliveryItem `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// PreviewItem is how one stored delivery or dead letter maps under a
// proposed config.
type PreviewItem struct {
	DeliveryID string            `json:"delivery_id"`
	State      string            `json:"state"`
	NaturalKey *string           `json:"natural_key"`
	Fields     map[string]string `json:"fields"`
	// EventTime is the sender's time of the record (the kind's event time,
	// a generic source's event_time_path): a newer record wins, an older
	// one changes nothing (the README's record order). null: none, the
	// order of receipt decides.
	EventTime *time.Time `json:"event_time"`
	Error     *string    `json:"error"`
	// SenderID is the sender's own delivery id (the source page shows it;
	// the API's delivery_id is Leadpipe's).
	SenderID string `json:"-"`
}

// DeliveryAdmin lists, reprocesses and previews a source's deliveries
// (implemented by internal/webhooks). Unknown or another tenant's ids are
// apperr.NotFound.
type DeliveryAdmin interface {
	ListDeliveries(ctx context.Context, tenantID, sourceID, state, cursor string, limit int) (DeliveryPage, error)
	CountDeliveries(ctx context.Context, tenantID, sourceID, state string) (int, error)
	Reprocess(ctx context.Context, tenantID, id string) (DeliveryItem, error)
	ReprocessSource(ctx context.Context, tenantID, sourceID, state string) (int, error)
	Preview(ctx context.Context, tenantID, sourceID string, config json.RawMessage, limit int) ([]PreviewItem, error)
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

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 50, 200)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	q := r.URL.Query()
	page, err := s.DeliveryOps.ListDeliveries(r.Context(), Tenant(r), chi.URLParam(r, "id"), q.Get("state"), q.Get("cursor"), limit)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	if page.Items == nil {
		page.Items = []DeliveryItem{}
	}
	WriteJSON(w, http.StatusOK, page)
}

func (s *Server) reprocessDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := s.DeliveryOps.Reprocess(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	WriteJSON(w, http.StatusAccepted, map[string]string{"id": d.ID, "state": d.State})
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
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	WriteJSON(w, http.StatusAccepted, map[string]int{"queued": n})
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
	if items == nil {
		items = []PreviewItem{}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items})
}
