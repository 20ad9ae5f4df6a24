package events

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/keyset"
)

// ReplayInput is POST /api/v1/events/{id}/replay; without endpoint_id the
// event goes again to every enabled endpoint that subscribes to its type.
type ReplayInput struct {
	EndpointID string `json:"endpoint_id"`
}

// Replay sends one event again. A delivery still in flight is left alone
// (it is being sent); the others restart the retry schedule. The body and
// webhook-id are the original ones, so a receiver that already has the
// event can tell.
func (s *Service) Replay(ctx context.Context, tenantID, eventID string, in ReplayInput) (int, error) {
	if !ids.Valid(eventID) {
		return 0, apperr.New(apperr.NotFound, "event not found")
	}
	ev, err := getEvent(ctx, s.DB, tenantID, eventID)
	if err != nil {
		return 0, db.MapErr(err, "event not found", "")
	}
	if len(ev.Body) == 0 {
		return 0, apperr.New(apperr.Conflict, "%s: the lead it was about was erased", ErasedReason)
	}
	var targets []Endpoint
	if in.EndpointID != "" {
		ep, err := s.Get(ctx, tenantID, in.EndpointID)
		if apperr.Is(err, apperr.NotFound) {
			return 0, apperr.InvalidFields(map[string]string{"endpoint_id": "no such endpoint"})
		}
		if err != nil {
			return 0, err
		}
		if !ep.Enabled {
			return 0, apperr.New(apperr.Conflict, "the endpoint is disabled: enable it first")
		}
		if !ep.Subscribes(ev.Type) {
			return 0, apperr.InvalidFields(map[string]string{"endpoint_id": "the endpoint does not subscribe to " + ev.Type})
		}
		targets = []Endpoint{ep}
	} else {
		eps, err := listEndpoints(ctx, s.DB, tenantID)
		if err != nil {
			return 0, err
		}
		for _, ep := range eps {
			if ep.Enabled && ep.Subscribes(ev.Type) {
				targets = append(targets, ep)
			}
		}
	}
	now := s.now()
	n := 0
	for _, ep := range targets {
		err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			if _, err := insertDeliveries(ctx, tx, tenantID, []DeliveryRow{{ID: ids.New(), EventID: ev.ID, EndpointID: ep.ID, NextAttemptAt: now, CreatedAt: now}}); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `UPDATE event_deliveries SET state = 'pending', next_attempt_at = ?, schedule_base = attempts, updated_at = ?
WHERE tenant_id = ? AND endpoint_id = ? AND event_id = ? AND state IN ('pending', 'delivered', 'failed')`, now, now, tenantID, ep.ID, ev.ID)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if err := s.Pump(ctx, tenantID, ep.ID); err != nil {
			s.log().Warn("events: enqueue after replay failed; the sweeper retries", "tenant_id", tenantID, "endpoint_id", ep.ID, "err", err)
		}
	}
	return n, nil
}

// RecoverInput is POST /api/v1/endpoints/{id}/recover.
type RecoverInput struct {
	Since *time.Time `json:"since"`
}

// Recover sends an endpoint everything since a time that it did not get:
// failed deliveries (the schedule ran out, the endpoint was disabled) and
// subscribed events that were never fanned out to it (emitted while it was
// disabled). What it got is not sent again.
func (s *Service) Recover(ctx context.Context, tenantID, endpointID string, in RecoverInput) (int, error) {
	ep, err := s.Get(ctx, tenantID, endpointID)
	if err != nil {
		return 0, err
	}
	now := s.now()
	if in.Since == nil {
		return 0, apperr.InvalidFields(map[string]string{"since": "is required (RFC 3339)"})
	}
	since := in.Since.UTC()
	if since.After(now) {
		return 0, apperr.InvalidFields(map[string]string{"since": "must not be in the future"})
	}
	if !ep.Enabled {
		return 0, apperr.New(apperr.Conflict, "the endpoint is disabled: enable it first")
	}
	total := 0
	cursor := ""
	for { // events never fanned out to this endpoint, in pages
		var missing []EventRow
		q, args := inIDs(ep.Events)
		qargs := append([]any{ep.ID, tenantID, since, cursor}, args...)
		if err := s.DB.SelectContext(ctx, &missing, `SELECT e.tenant_id, e.id, e.type, e.resource_id, e.sequence, e.created_at, e.pending
FROM events e LEFT JOIN event_deliveries d ON d.tenant_id = e.tenant_id AND d.endpoint_id = ? AND d.event_id = e.id
WHERE e.tenant_id = ? AND e.created_at >= ? AND e.pending IS NULL AND e.id > ? AND d.id IS NULL AND e.type IN (`+q+`)
ORDER BY e.id LIMIT 500`, qargs...); err != nil {
			return 0, err
		}
		if len(missing) == 0 {
			break
		}
		rows := make([]DeliveryRow, len(missing))
		for i, ev := range missing {
			rows[i] = DeliveryRow{ID: ids.New(), EventID: ev.ID, EndpointID: ep.ID, NextAttemptAt: now, CreatedAt: now}
		}
		var k int64
		err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			var err error
			k, err = insertDeliveries(ctx, tx, tenantID, rows)
			return err
		})
		if err != nil {
			return 0, err
		}
		total += int(k)
		cursor = missing[len(missing)-1].ID
	}
	k, err := execRC(ctx, s.DB, `UPDATE event_deliveries d JOIN events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
SET d.state = 'pending', d.next_attempt_at = ?, d.schedule_base = d.attempts, d.updated_at = ?
WHERE d.tenant_id = ? AND d.endpoint_id = ? AND d.state = 'failed' AND e.created_at >= ?`, now, now, tenantID, ep.ID, since)
	if err != nil {
		return 0, err
	}
	total += int(k)
	// What waits for its next retry goes at once too: recovering means the
	// endpoint works again, so its backlog need not sit out the schedule.
	k, err = execRC(ctx, s.DB, `UPDATE event_deliveries d JOIN events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
SET d.next_attempt_at = ?, d.updated_at = ?
WHERE d.tenant_id = ? AND d.endpoint_id = ? AND d.state = 'pending' AND d.next_attempt_at > ? AND e.created_at >= ?`, now, now, tenantID, ep.ID, now, since)
	if err != nil {
		return 0, err
	}
	total += int(k)
	if err := s.Pump(ctx, tenantID, ep.ID); err != nil {
		s.log().Warn("events: enqueue after recover failed; the sweeper retries", "tenant_id", tenantID, "endpoint_id", ep.ID, "err", err)
	}
	return total, nil
}

// Attempts lists an endpoint's attempts, newest first (keyset on the id).
func (s *Service) Attempts(ctx context.Context, tenantID, endpointID, cursor string, limit int) ([]Attempt, string, error) {
	if _, err := s.Get(ctx, tenantID, endpointID); err != nil {
		return nil, "", err
	}
	return s.attempts(ctx, tenantID, "endpoint_id", endpointID, cursor, limit)
}

// EventAttempts lists an event's attempts to all endpoints, newest first.
func (s *Service) EventAttempts(ctx context.Context, tenantID, eventID, cursor string, limit int) ([]Attempt, string, error) {
	if _, err := s.Event(ctx, tenantID, eventID); err != nil {
		return nil, "", err
	}
	return s.attempts(ctx, tenantID, "event_id", eventID, cursor, limit)
}

func pageArgs(cursor string, limit int) (int, error) {
	f := map[string]string{}
	if cursor != "" && !ids.Valid(cursor) {
		f["cursor"] = "is not a cursor this API returned"
	}
	if limit == 0 {
		limit = 50
	}
	if limit < 1 || limit > 200 {
		f["limit"] = "must be between 1 and 200"
	}
	if len(f) > 0 {
		return 0, apperr.InvalidFields(f)
	}
	return limit, nil
}

func (s *Service) attempts(ctx context.Context, tenantID, col, id, cursor string, limit int) ([]Attempt, string, error) {
	limit, err := pageArgs(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	items, err := listAttempts(ctx, s.DB, tenantID, col, id, cursor, limit+1)
	if err != nil {
		return nil, "", err
	}
	items, next := keyset.Cut(items, limit, func(a Attempt) string { return a.ID })
	if items == nil {
		items = []Attempt{}
	}
	return items, next, nil
}

// EventView is an event as the API shows it: the envelope that is sent,
// and where it went.
type EventView struct {
	ID         string        `json:"id"`
	Type       string        `json:"type"`
	ResourceID string        `json:"resource_id"`
	Sequence   int64         `json:"sequence"`
	CreatedAt  time.Time     `json:"created_at"`
	Relayed    bool          `json:"relayed"`
	Payload    RawJSON       `json:"payload"`
	Deliveries []DeliveryRow `json:"deliveries,omitempty"`
}

// RawJSON is stored JSON passed through as is.
type RawJSON []byte

// MarshalJSON returns the bytes (null when empty).
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

func view(e EventRow) EventView {
	return EventView{ID: e.ID, Type: e.Type, ResourceID: e.ResourceID, Sequence: e.Sequence, CreatedAt: e.CreatedAt,
		Relayed: e.Pending == nil, Payload: RawJSON(e.Body)}
}

// Event returns one event with its deliveries.
func (s *Service) Event(ctx context.Context, tenantID, id string) (EventView, error) {
	if !ids.Valid(id) {
		return EventView{}, apperr.New(apperr.NotFound, "event not found")
	}
	e, err := getEvent(ctx, s.DB, tenantID, id)
	if err != nil {
		return EventView{}, db.MapErr(err, "event not found", "")
	}
	v := view(e)
	v.Deliveries, err = listDeliveriesOfEvent(ctx, s.DB, tenantID, id)
	return v, err
}

// Events lists the tenant's events newest first, optionally of one type.
func (s *Service) Events(ctx context.Context, tenantID, typ, cursor string, limit int) ([]EventView, string, error) {
	limit, err := pageArgs(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	if typ != "" && !KnownType(typ) {
		return nil, "", apperr.InvalidFields(map[string]string{"type": "unknown event type"})
	}
	rows, err := listEvents(ctx, s.DB, tenantID, typ, cursor, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := keyset.Cut(rows, limit, func(e EventRow) string { return e.ID })
	out := make([]EventView, len(rows))
	for i, r := range rows {
		out[i] = view(r)
	}
	return out, next, nil
}
