package leads

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"leadpipe/internal/db"
)

// LeadCols is the column list every lead SELECT uses.
const LeadCols = `tenant_id, id, source_id, source_ref, payload, email, name, phone, company,
	source_created_at, last_seen_at, times_seen, status, owner_id, tags, version, created_at, updated_at`

// UpsertFromSender writes a sender's record through the lead's natural key
// (tenant_id, source_id, source_ref). Only sender-owned fields are in the
// update clause: status, owner, notes, tags and version are never touched,
// so a human's work survives every re-delivery and reconcile. Empty sender
// values do not blank known ones (a Meta webhook carries no fields until
// enrichment). Returns the lead id and whether the lead is new.
func UpsertFromSender(ctx context.Context, x db.Ext, tenantID, sourceID string, r SenderRecord, now time.Time) (string, bool, error) {
	id := db.NewID()
	tags := Tags(r.Tags)
	payload := r.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	res, err := x.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone,
			company, source_created_at, last_seen_at, times_seen, status, tags, version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'new', ?, 1, ?, ?)
		ON DUPLICATE KEY UPDATE
			payload = VALUES(payload),
			email = IF(VALUES(email) = '', email, VALUES(email)),
			name = IF(VALUES(name) = '', name, VALUES(name)),
			phone = IF(VALUES(phone) = '', phone, VALUES(phone)),
			company = IF(VALUES(company) = '', company, VALUES(company)),
			source_created_at = COALESCE(VALUES(source_created_at), source_created_at),
			last_seen_at = GREATEST(last_seen_at, VALUES(last_seen_at)),
			times_seen = times_seen + 1,
			updated_at = VALUES(updated_at)`,
		tenantID, id, sourceID, r.SourceRef, string(payload), Clip(r.Email, 320), Clip(r.Name, 255), Clip(r.Phone, 64),
		Clip(r.Company, 255), r.CreatedAt, now, tags, now, now)
	if err != nil {
		return "", false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", false, err
	}
	if n == 1 {
		return id, true, nil
	}
	var existing string
	err = x.GetContext(ctx, &existing, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ?`,
		tenantID, sourceID, r.SourceRef)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, errors.New("leads: upserted row vanished")
	}
	return existing, false, err
}

// Clip cuts s to at most n runes (columns are sized; strict mode would
// reject longer values and lose the whole delivery).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Get returns one lead of the tenant.
func Get(ctx context.Context, x db.Ext, tenantID, id string) (Lead, error) {
	var l Lead
	err := x.GetContext(ctx, &l, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return l, db.MapErr(err, "lead not found", "")
}

// AddEvent appends a timeline entry.
func AddEvent(ctx context.Context, x db.Ext, tenantID, leadID, kind, actorID, actorName string, detail any, at time.Time) error {
	var d any
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		d = string(b)
	}
	var actor any
	if actorID != "" {
		actor = actorID
	}
	_, err := x.ExecContext(ctx, `INSERT INTO lead_events (tenant_id, lead_id, id, kind, actor_id, actor_name, detail, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, tenantID, leadID, db.NewID(), kind, actor, Clip(actorName, 255), d, at)
	return err
}
