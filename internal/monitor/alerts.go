package monitor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/keyset"
)

// Alert states, and the filter for both.
const (
	StateOpen     = "open"
	StateResolved = "resolved"
	StateAll      = "all"
)

// Alert event types (alert_events.type), kept for later notification
// delivery (email, outbound webhooks).
const (
	EventFired        = "fired"
	EventResolved     = "resolved"
	EventAcknowledged = "acknowledged"
)

// Alert is one firing of a rule on a source, open until its condition has
// been false for a whole window.
type Alert struct {
	TenantID       string          `db:"tenant_id" json:"-"`
	ID             string          `db:"id" json:"id"`
	SourceID       string          `db:"source_id" json:"source_id"`
	Rule           string          `db:"rule" json:"rule"`
	State          string          `db:"state" json:"state"`
	FiredAt        time.Time       `db:"fired_at" json:"fired_at"`
	ResolvedAt     *time.Time      `db:"resolved_at" json:"resolved_at"`
	AcknowledgedAt *time.Time      `db:"acknowledged_at" json:"acknowledged_at"`
	AcknowledgedBy *string         `db:"acknowledged_by" json:"acknowledged_by"`
	Detail         json.RawMessage `db:"detail" json:"detail"`
	ClearSince     *time.Time      `db:"clear_since" json:"-"`
}

// Summary is the one-line description stored in the detail ("duplicate
// rate 41.2% over 15 min vs 2.0% baseline …").
func (a Alert) Summary() string {
	var d struct {
		Summary string `json:"summary"`
	}
	_ = json.Unmarshal(a.Detail, &d)
	return d.Summary
}

// AlertEvent is one entry of an alert's history.
type AlertEvent struct {
	ID      string          `db:"id" json:"id"`
	AlertID string          `db:"alert_id" json:"alert_id"`
	Type    string          `db:"type" json:"type"`
	At      time.Time       `db:"at" json:"at"`
	Actor   *string         `db:"actor" json:"actor"`
	Detail  json.RawMessage `db:"detail" json:"detail"`
}

// Alerts lists the tenant's alerts newest first, filtered by state (open,
// resolved or all). cursor is the previous page's next cursor ("" for the
// first page); next is "" on the last page.
func (s *Service) Alerts(ctx context.Context, tenantID, state, cursor string, limit int) (items []Alert, next string, err error) {
	f := map[string]string{}
	if state == "" {
		state = StateAll
	}
	if state != StateOpen && state != StateResolved && state != StateAll {
		f["state"] = "must be open, resolved or all"
	}
	if cursor != "" && !ids.Valid(cursor) {
		f["cursor"] = "is not a cursor this API returned"
	}
	if limit <= 0 {
		limit = 50
	}
	if limit > 200 {
		f["limit"] = "must be between 1 and 200"
	}
	if len(f) > 0 {
		return nil, "", apperr.InvalidFields(f)
	}
	items, err = listAlerts(ctx, s.DB, tenantID, state, cursor, limit+1)
	if err != nil {
		return nil, "", err
	}
	items, next = keyset.Cut(items, limit, func(a Alert) string { return a.ID })
	if items == nil {
		items = []Alert{}
	}
	return items, next, nil
}

// Alert returns one alert.
func (s *Service) Alert(ctx context.Context, tenantID, id string) (Alert, error) {
	if !ids.Valid(id) {
		return Alert{}, apperr.New(apperr.NotFound, "alert not found")
	}
	return getAlert(ctx, s.DB, tenantID, id, false)
}

// AlertEvents returns an alert's history (fired, acknowledged, resolved).
func (s *Service) AlertEvents(ctx context.Context, tenantID, alertID string) ([]AlertEvent, error) {
	if !ids.Valid(alertID) {
		return nil, apperr.New(apperr.NotFound, "alert not found")
	}
	ev, err := listEvents(ctx, s.DB, tenantID, alertID)
	if ev == nil {
		ev = []AlertEvent{}
	}
	return ev, err
}

// OpenAlertCount is the number of open alerts (for the banner).
func (s *Service) OpenAlertCount(ctx context.Context, tenantID string) (int, error) {
	n, _, err := countOpenAlerts(ctx, s.DB, tenantID)
	return n, err
}

// OpenAlertCounts returns open alerts and how many of them nobody has
// acknowledged yet.
func (s *Service) OpenAlertCounts(ctx context.Context, tenantID string) (open, unacknowledged int, err error) {
	return countOpenAlerts(ctx, s.DB, tenantID)
}

// Ack acknowledges an alert. Acknowledging again changes nothing (the
// first acknowledgement is kept); another tenant's alert is not found.
// by names who acknowledged (a user id or "token:<id>").
func (s *Service) Ack(ctx context.Context, tenantID, alertID, by string) (Alert, error) {
	if !ids.Valid(alertID) {
		return Alert{}, apperr.New(apperr.NotFound, "alert not found")
	}
	at := s.now().Truncate(time.Microsecond)
	var out Alert
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		a, err := getAlert(ctx, tx, tenantID, alertID, true)
		if err != nil {
			return err
		}
		if a.AcknowledgedAt == nil {
			if err := ackAlert(ctx, tx, tenantID, alertID, at, by); err != nil {
				return err
			}
			if err := insertEvent(ctx, tx, a, EventAcknowledged, at, by, nil); err != nil {
				return err
			}
			a.AcknowledgedAt = &at
			if by != "" {
				a.AcknowledgedBy = &by
			}
		}
		out = a
		return nil
	})
	return out, err
}

// RuleEndpointDisabled is the alert an outbound endpoint gets when it is
// disabled by itself (410 Gone, 5 days of failures). Its source_id holds
// the endpoint id: one open alert per endpoint.
const RuleEndpointDisabled = "endpoint_disabled"

// OpenEndpointAlert fires the endpoint_disabled alert in tx (the
// transaction that disabled the endpoint); an open one is kept.
func (s *Service) OpenEndpointAlert(ctx context.Context, tx db.Ext, tenantID, endpointID string, detail map[string]any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	var open int
	if err := tx.GetContext(ctx, &open, `SELECT COUNT(*) FROM alerts WHERE tenant_id = ? AND source_id = ? AND rule = ? AND open_key = 1`,
		tenantID, endpointID, RuleEndpointDisabled); err != nil {
		return err
	}
	if open > 0 {
		return nil
	}
	now := s.now().Truncate(time.Microsecond)
	a := Alert{TenantID: tenantID, ID: ids.New(), SourceID: endpointID, Rule: RuleEndpointDisabled, State: StateOpen, FiredAt: now, Detail: b}
	return s.insertFired(ctx, tx, a)
}

// insertFired stores a newly fired alert with its fired event, in tx, and
// tells the listener (notifications) in the same transaction.
func (s *Service) insertFired(ctx context.Context, tx db.Ext, a Alert) error {
	if err := insertAlert(ctx, tx, a); err != nil {
		return err
	}
	if err := insertEvent(ctx, tx, a, EventFired, a.FiredAt, "", a.Detail); err != nil {
		return err
	}
	if s.fired != nil {
		return s.fired.AlertFired(ctx, tx, a.TenantID, a)
	}
	return nil
}

// ResolveEndpointAlert resolves the endpoint's open endpoint_disabled
// alert (it was re-enabled), in tx.
func (s *Service) ResolveEndpointAlert(ctx context.Context, tx db.Ext, tenantID, endpointID string) error {
	var open []Alert
	if err := tx.SelectContext(ctx, &open, `SELECT tenant_id, id, source_id, rule, state, fired_at, resolved_at, acknowledged_at,
acknowledged_by, detail, clear_since FROM alerts WHERE tenant_id = ? AND source_id = ? AND rule = ? AND open_key = 1`,
		tenantID, endpointID, RuleEndpointDisabled); err != nil {
		return err
	}
	now := s.now().Truncate(time.Microsecond)
	for _, a := range open {
		ok, err := resolveAlert(ctx, tx, tenantID, a.ID, now)
		if err != nil {
			return err
		}
		if ok {
			if err := insertEvent(ctx, tx, a, EventResolved, now, "", json.RawMessage(`{"summary":"the endpoint was enabled again"}`)); err != nil {
				return err
			}
		}
	}
	return nil
}
