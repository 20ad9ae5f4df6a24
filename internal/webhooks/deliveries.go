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
