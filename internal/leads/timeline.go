package leads

import (
	"context"
	"encoding/json"
	"sort"
	"time"
)

// Timeline entry kinds that come from the ingest tables rather than
// lead_events.
const (
	EventDelivery  = "delivery"  // a webhook delivery that reached this lead
	EventDuplicate = "duplicate" // a re-delivery of one of those deliveries
	EventReconcile = "reconcile" // a record a reconcile run pulled
)

// timelineCap bounds each part of the timeline: a lead retried thousands of
// times by a broken sender still answers quickly.
const timelineCap = 1000

// TimelineEntry is one thing that happened to a lead, with who and when.
type TimelineEntry struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	At        time.Time `json:"at"`
	ActorID   *string   `json:"actor_id"`   // the user, for people's changes
	ActorName string    `json:"actor_name"` // user or API token name, or the source's name
	// Deliveries and duplicates: the source, Leadpipe's id of the stored
	// delivery and the sender's own delivery id.
	SourceID         string          `json:"source_id,omitempty"`
	DeliveryID       string          `json:"delivery_id,omitempty"`
	SenderDeliveryID string          `json:"sender_delivery_id,omitempty"`
	Detail           json.RawMessage `json:"detail"`
}

// Timeline merges the lead's events (people's changes, notes, reconcile
// touches), the deliveries that upserted it and their duplicates, newest
// first. Another tenant's lead is 404.
func (s *Service) Timeline(ctx context.Context, tenantID, leadID string) ([]TimelineEntry, error) {
	if _, err := s.Get(ctx, tenantID, leadID); err != nil {
		return nil, err
	}
	var events []struct {
		ID        string    `db:"id"`
		Kind      string    `db:"kind"`
		ActorID   *string   `db:"actor_id"`
		ActorName string    `db:"actor_name"`
		Detail    *string   `db:"detail"`
		At        time.Time `db:"at"`
	}
	if err := s.DB.SelectContext(ctx, &events, `SELECT id, kind, actor_id, actor_name, detail, at
		FROM lead_events WHERE tenant_id = ? AND lead_id = ? ORDER BY id DESC LIMIT ?`, tenantID, leadID, timelineCap); err != nil {
		return nil, err
	}
	var deliveries []struct {
		ID         string    `db:"id"`
		SourceID   string    `db:"source_id"`
		DeliveryID string    `db:"delivery_id"`
		Origin     string    `db:"origin"`
		ReceivedAt time.Time `db:"received_at"`
		SourceName *string   `db:"source_name"`
	}
	if err := s.DB.SelectContext(ctx, &deliveries, `SELECT d.id, d.source_id, d.delivery_id, d.origin, d.received_at,
			s.name AS source_name
		FROM deliveries d LEFT JOIN sources s ON s.tenant_id = d.tenant_id AND s.id = d.source_id
		WHERE d.tenant_id = ? AND d.lead_id = ? ORDER BY d.received_at DESC LIMIT ?`, tenantID, leadID, timelineCap); err != nil {
		return nil, err
	}
	var dups []struct {
		ID         string    `db:"id"`
		SourceID   string    `db:"source_id"`
		DeliveryID string    `db:"delivery_row_id"`
		SenderID   string    `db:"delivery_id"`
		ReceivedAt time.Time `db:"received_at"`
		SourceName *string   `db:"source_name"`
	}
	if err := s.DB.SelectContext(ctx, &dups, `SELECT dd.id, dd.source_id, dd.delivery_row_id, d.delivery_id, dd.received_at,
			s.name AS source_name
		FROM deliveries d
		JOIN delivery_duplicates dd ON dd.tenant_id = d.tenant_id AND dd.delivery_row_id = d.id
		LEFT JOIN sources s ON s.tenant_id = d.tenant_id AND s.id = d.source_id
		WHERE d.tenant_id = ? AND d.lead_id = ? ORDER BY dd.received_at DESC LIMIT ?`, tenantID, leadID, timelineCap); err != nil {
		return nil, err
	}

	out := make([]TimelineEntry, 0, len(events)+len(deliveries)+len(dups))
	for _, e := range events {
		t := TimelineEntry{ID: e.ID, Kind: e.Kind, At: e.At, ActorID: e.ActorID, ActorName: e.ActorName, Detail: json.RawMessage("null")}
		if e.Detail != nil {
			t.Detail = json.RawMessage(*e.Detail)
		}
		out = append(out, t)
	}
	for _, d := range deliveries {
		kind := EventDelivery
		if d.Origin == string(OriginReconcile) {
			kind = EventReconcile
		}
		detail, _ := json.Marshal(map[string]string{"origin": d.Origin})
		out = append(out, TimelineEntry{ID: d.ID, Kind: kind, At: d.ReceivedAt, ActorName: nameOr(d.SourceName, d.Origin),
			SourceID: d.SourceID, DeliveryID: d.ID, SenderDeliveryID: d.DeliveryID, Detail: detail})
	}
	for _, d := range dups {
		out = append(out, TimelineEntry{ID: d.ID, Kind: EventDuplicate, At: d.ReceivedAt, ActorName: nameOr(d.SourceName, "webhook"),
			SourceID: d.SourceID, DeliveryID: d.DeliveryID, SenderDeliveryID: d.SenderID, Detail: json.RawMessage("null")})
	}
	// Newest first; ties (same microsecond) by id, which is time-ordered.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.After(out[j].At)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func nameOr(name *string, fallback string) string {
	if name != nil && *name != "" {
		return *name
	}
	return fallback
}
