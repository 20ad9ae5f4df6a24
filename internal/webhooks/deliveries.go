// Package webhooks is the ingest path: verify a signed webhook, claim each
// delivery id (INSERT … ON DUPLICATE KEY UPDATE on its unique key), answer
// only after the raw delivery is
// committed, enqueue processing, and (in the worker) map the stored bytes
// to a lead through the one sender upsert that reconcile uses too.
package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"leadpipe/internal/db"
)

// Delivery is one stored delivery.
type Delivery struct {
	TenantID    string     `db:"tenant_id" json:"-"`
	SourceID    string     `db:"source_id" json:"source_id"`
	ID          string     `db:"id" json:"id"`
	DeliveryID  string     `db:"delivery_id" json:"sender_delivery_id"`
	Origin      string     `db:"origin" json:"origin"`
	Payload     []byte     `db:"payload" json:"-"`
	ReceivedAt  time.Time  `db:"received_at" json:"received_at"`
	ProcessedAt *time.Time `db:"processed_at" json:"processed_at"`
	LeadID      *string    `db:"lead_id" json:"lead_id"`
	Attempts    int        `db:"attempts" json:"attempts"`
	LastError   *string    `db:"last_error" json:"last_error"`
	State       string     `db:"state" json:"state"` // received | processed | failed
	// Duplicates: arrivals of the same delivery id after this one.
	DupCount    int        `db:"dup_count" json:"duplicates"`
	DupFirstAt  *time.Time `db:"dup_first_at" json:"duplicate_first_at"`
	DupLastAt   *time.Time `db:"dup_last_at" json:"duplicate_last_at"`
	DupsCounted int        `db:"dups_counted" json:"-"` // how many of them leads.times_seen holds
}

const deliveryCols = `tenant_id, source_id, id, delivery_id, origin, payload, received_at, processed_at, lead_id, attempts, last_error, state,
	dup_count, dup_first_at, dup_last_at, dups_counted`

// DeadLetter is a signed request Leadpipe could not use, kept for admins.
type DeadLetter struct {
	TenantID   string          `db:"tenant_id" json:"-"`
	SourceID   string          `db:"source_id" json:"source_id"`
	ID         string          `db:"id" json:"id"`
	Reason     string          `db:"reason" json:"reason"`
	Headers    json.RawMessage `db:"headers" json:"headers"`
	Body       []byte          `db:"body" json:"-"`
	ReceivedAt time.Time       `db:"received_at" json:"received_at"`
}

func insertDeadLetter(ctx context.Context, x db.Ext, d DeadLetter) error {
	_, err := x.ExecContext(ctx, `INSERT INTO dead_letters (tenant_id, source_id, id, reason, headers, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, d.TenantID, d.SourceID, d.ID, d.Reason, string(d.Headers), d.Body, d.ReceivedAt)
	return err
}
