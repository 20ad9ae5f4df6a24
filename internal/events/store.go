package events

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/keyset"
)

// Every statement names tenant_id (docs/SCALING.md).

const endpointCols = `tenant_id, id, url, description, events, enabled, disabled_reason, disabled_at, failing_since,
last_success_at, last_failure_at, last_error, created_at, updated_at`

func insertEndpoint(ctx context.Context, x db.Ext, ep Endpoint) error {
	_, err := x.ExecContext(ctx, `INSERT INTO event_endpoints (tenant_id, id, url, description, events, enabled, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, ep.TenantID, ep.ID, ep.URL, ep.Description, encodeEvents(ep.Events), ep.Enabled, ep.CreatedAt, ep.UpdatedAt)
	return err
}

func updateEndpoint(ctx context.Context, x db.Ext, ep Endpoint) error {
	_, err := x.ExecContext(ctx, `UPDATE event_endpoints SET url = ?, description = ?, events = ?, enabled = ?,
disabled_reason = ?, disabled_at = ?, failing_since = ?, last_error = ?, updated_at = ?
WHERE tenant_id = ? AND id = ?`, ep.URL, ep.Description, encodeEvents(ep.Events), ep.Enabled,
		ep.DisabledReason, ep.DisabledAt, ep.FailingSince, ep.LastError, ep.UpdatedAt, ep.TenantID, ep.ID)
	return err
}

func getEndpoint(ctx context.Context, x db.Ext, tenantID, id string, forUpdate bool) (Endpoint, error) {
	q := `SELECT ` + endpointCols + ` FROM event_endpoints WHERE tenant_id = ? AND id = ?`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var ep Endpoint
	if err := x.GetContext(ctx, &ep, q, tenantID, id); err != nil {
		return Endpoint{}, err
	}
	decodeEvents(&ep)
	return ep, nil
}

func listEndpoints(ctx context.Context, x db.Ext, tenantID string) ([]Endpoint, error) {
	var out []Endpoint
	if err := x.SelectContext(ctx, &out, `SELECT `+endpointCols+` FROM event_endpoints WHERE tenant_id = ? ORDER BY id DESC`, tenantID); err != nil {
		return nil, err
	}
	for i := range out {
		decodeEvents(&out[i])
	}
	return out, nil
}

func deleteEndpoint(ctx context.Context, x db.Ext, tenantID, id string) error {
	for _, q := range []string{
		`DELETE FROM event_attempts WHERE tenant_id = ? AND endpoint_id = ?`,
		`DELETE FROM event_deliveries WHERE tenant_id = ? AND endpoint_id = ?`,
		`DELETE FROM event_endpoint_secrets WHERE tenant_id = ? AND endpoint_id = ?`,
		`DELETE FROM event_endpoints WHERE tenant_id = ? AND id = ?`,
	} {
		if _, err := x.ExecContext(ctx, q, tenantID, id); err != nil {
			return err
		}
	}
	return nil
}

type secretRow struct {
	ID        string `db:"id"`
	SecretEnc []byte `db:"secret_enc"`
}

func insertSecret(ctx context.Context, x db.Ext, tenantID, endpointID, id string, enc []byte, now time.Time, expires *time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO event_endpoint_secrets (tenant_id, endpoint_id, id, secret_enc, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?)`, tenantID, endpointID, id, enc, now, expires)
	return err
}

// expireSecrets gives every live secret of the endpoint an end of until
// (those already ending sooner keep their end).
func expireSecrets(ctx context.Context, x db.Ext, tenantID, endpointID string, until, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE event_endpoint_secrets SET expires_at = ?
WHERE tenant_id = ? AND endpoint_id = ? AND (expires_at IS NULL OR expires_at > ?)`, until, tenantID, endpointID, until)
	if err != nil {
		return err
	}
	_, err = x.ExecContext(ctx, `DELETE FROM event_endpoint_secrets WHERE tenant_id = ? AND endpoint_id = ? AND expires_at <= ?`,
		tenantID, endpointID, now)
	return err
}

// listSecrets returns the live secrets, newest (the current one) first.
func listSecrets(ctx context.Context, x db.Ext, tenantID, endpointID string, now time.Time) ([]secretRow, error) {
	var out []secretRow
	err := x.SelectContext(ctx, &out, `SELECT id, secret_enc FROM event_endpoint_secrets
WHERE tenant_id = ? AND endpoint_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id DESC`, tenantID, endpointID, now)
	return out, err
}

// failOpenDeliveries marks what an endpoint still had to send as failed
// (it was disabled); Recover brings them back.
func failOpenDeliveries(ctx context.Context, x db.Ext, tenantID, endpointID, reason string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE event_deliveries SET state = 'failed', last_error = ?, queued_by = NULL, updated_at = ?
WHERE tenant_id = ? AND endpoint_id = ? AND state IN ('pending', 'queued')`, reason, now, tenantID, endpointID)
	return err
}

// EventRow is a stored event.
type EventRow struct {
	TenantID   string    `db:"tenant_id" json:"-"`
	ID         string    `db:"id" json:"id"`
	Type       string    `db:"type" json:"type"`
	ResourceID string    `db:"resource_id" json:"resource_id"`
	Sequence   int64     `db:"sequence" json:"sequence"`
	Body       []byte    `db:"body" json:"-"`
	CreatedAt  time.Time `db:"created_at" json:"created_at"`
	// Pending is 1 until the relay fanned the event out.
	Pending *int `db:"pending" json:"-"`
	// Traceparent is the emitting span's W3C context (tracing on only).
	Traceparent *string `db:"traceparent" json:"-"`
}

// DeliveryRow is one (event, endpoint) delivery.
type DeliveryRow struct {
	TenantID      string     `db:"tenant_id" json:"-"`
	ID            string     `db:"id" json:"id"`
	EventID       string     `db:"event_id" json:"event_id"`
	EndpointID    string     `db:"endpoint_id" json:"endpoint_id"`
	State         string     `db:"state" json:"state"`
	Attempts      int        `db:"attempts" json:"attempts"`
	NextAttemptAt time.Time  `db:"next_attempt_at" json:"next_attempt_at"`
	LastStatus    *int       `db:"last_status" json:"last_status"`
	LastError     *string    `db:"last_error" json:"last_error"`
	DeliveredAt   *time.Time `db:"delivered_at" json:"delivered_at"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt     time.Time  `db:"updated_at" json:"updated_at"`
}

const deliveryCols = `tenant_id, id, event_id, endpoint_id, state, attempts, next_attempt_at, last_status, last_error,
delivered_at, created_at, updated_at`

// Attempt is one recorded delivery attempt.
type Attempt struct {
	TenantID    string    `db:"tenant_id" json:"-"`
	ID          string    `db:"id" json:"id"`
	DeliveryID  string    `db:"delivery_id" json:"delivery_id"`
	EventID     string    `db:"event_id" json:"event_id"`
	EventType   string    `db:"event_type" json:"event_type"`
	EndpointID  string    `db:"endpoint_id" json:"endpoint_id"`
	Attempt     int       `db:"attempt" json:"attempt"`
	AttemptedAt time.Time `db:"attempted_at" json:"attempted_at"`
	Status      *int      `db:"status" json:"status"`
	LatencyMS   int       `db:"latency_ms" json:"latency_ms"`
	Response    string    `db:"response" json:"response"`
	Error       *string   `db:"error" json:"error"`
	Outcome     string    `db:"outcome" json:"outcome"`
}

func insertAttempt(ctx context.Context, x db.Ext, a Attempt) error {
	_, err := x.ExecContext(ctx, `INSERT INTO event_attempts (tenant_id, id, delivery_id, event_id, endpoint_id, attempt,
attempted_at, status, latency_ms, response, error, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.TenantID, a.ID, a.DeliveryID, a.EventID, a.EndpointID, a.Attempt, a.AttemptedAt, a.Status, a.LatencyMS,
		a.Response, a.Error, a.Outcome)
	return err
}

const attemptCols = `a.tenant_id, a.id, a.delivery_id, a.event_id, e.type AS event_type, a.endpoint_id, a.attempt,
a.attempted_at, a.status, a.latency_ms, a.response, a.error, a.outcome`

// listAttempts lists attempts of an endpoint or of an event (column is
// "endpoint_id" or "event_id"), newest first, before cursor.
func listAttempts(ctx context.Context, x db.Ext, tenantID, column, id, cursor string, limit int) ([]Attempt, error) {
	if column != "endpoint_id" && column != "event_id" {
		return nil, errors.New("events: bad attempts filter")
	}
	q := `SELECT ` + attemptCols + ` FROM event_attempts a
JOIN events e ON e.tenant_id = a.tenant_id AND e.id = a.event_id
WHERE a.tenant_id = ? AND a.` + column + ` = ?`
	args := []any{tenantID, id}
	if cursor != "" {
		q += ` AND a.id < ?`
		args = append(args, cursor)
	}
	q += ` ORDER BY a.id DESC LIMIT ?`
	args = append(args, limit)
	var out []Attempt
	err := x.SelectContext(ctx, &out, q, args...)
	return out, err
}

func getEvent(ctx context.Context, x db.Ext, tenantID, id string) (EventRow, error) {
	var e EventRow
	err := x.GetContext(ctx, &e, `SELECT tenant_id, id, type, resource_id, sequence, body, created_at, pending, traceparent
FROM events WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return e, err
}

func listEvents(ctx context.Context, x db.Ext, tenantID, typ, cursor string, limit int) ([]EventRow, error) {
	q, args := keyset.New(`SELECT tenant_id, id, type, resource_id, sequence, body, created_at, pending FROM events WHERE tenant_id = ?`, tenantID).
		And(typ != "", "type = ?", typ).
		Page(cursor, limit)
	var out []EventRow
	err := x.SelectContext(ctx, &out, q, args...)
	return out, err
}

func listDeliveriesOfEvent(ctx context.Context, x db.Ext, tenantID, eventID string) ([]DeliveryRow, error) {
	var out []DeliveryRow
	err := x.SelectContext(ctx, &out, `SELECT `+deliveryCols+` FROM event_deliveries WHERE tenant_id = ? AND event_id = ? ORDER BY id`,
		tenantID, eventID)
	return out, err
}

func getDelivery(ctx context.Context, x db.Ext, tenantID, id string) (DeliveryRow, error) {
	var d DeliveryRow
	err := x.GetContext(ctx, &d, `SELECT `+deliveryCols+` FROM event_deliveries WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return d, err
}

// insertDeliveries fans events out: one row per (event, endpoint), ignoring
// pairs that exist (a second relay of the same event, a recover).
func insertDeliveries(ctx context.Context, x db.Ext, tenantID string, rows []DeliveryRow) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	var b strings.Builder
	b.WriteString(`INSERT IGNORE INTO event_deliveries (tenant_id, id, event_id, endpoint_id, state, attempts, next_attempt_at, created_at, updated_at) VALUES `)
	args := make([]any, 0, len(rows)*9)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, 'pending', 0, ?, ?, ?)")
		args = append(args, tenantID, r.ID, r.EventID, r.EndpointID, r.NextAttemptAt, r.CreatedAt, r.CreatedAt)
	}
	res, err := x.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// inIDs returns "?, ?, ?" and the ids as arguments.
func inIDs(ids []string) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), args
}

// exec runs one write statement in its own READ COMMITTED transaction
// with deadlock retry: at the session default (REPEATABLE READ) a
// range UPDATE takes gap locks that block the business transactions'
// outbox inserts and deadlock with the delivery workers.
func execRC(ctx context.Context, d *sqlx.DB, q string, args ...any) (int64, error) {
	var n int64
	err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
