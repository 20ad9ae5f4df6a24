package webhooks

import (
	"context"
	"strings"
	"time"

	"leadpipe/internal/db"
)

// A person's data in the ingest tables (docs/ARCHITECTURE.md, "Personal data"): the raw payloads
// of the deliveries that reached a lead, and dead letters that carry the
// same record. The export reads them; the erasure blanks them in its own
// transaction (x), keeping the rows: counts, duplicate detection and the
// delivery ids stay as they were.

// DeadLetterBody is a dead letter with its whole body.
type DeadLetterBody struct {
	ID         string    `db:"id" json:"id"`
	SourceID   string    `db:"source_id" json:"source_id"`
	Reason     string    `db:"reason" json:"reason"`
	Body       []byte    `db:"body" json:"-"`
	ReceivedAt time.Time `db:"received_at" json:"received_at"`
}

// DeadLetterBodies returns a page of a source's dead letters with their
// bodies, in id order after the id after ("" from the first).
func DeadLetterBodies(ctx context.Context, x db.Ext, tenantID, sourceID, after string, limit int) ([]DeadLetterBody, error) {
	var out []DeadLetterBody
	err := x.SelectContext(ctx, &out, `SELECT id, source_id, reason, body, received_at FROM dead_letters
		WHERE tenant_id = ? AND source_id = ? AND id > ? ORDER BY id LIMIT ?`, tenantID, sourceID, after, limit)
	return out, err
}

// BlankLeadPayloads empties the payload of every delivery that reached a
// lead (the column stays NOT NULL: the empty byte string).
func BlankLeadPayloads(ctx context.Context, x db.Ext, tenantID, leadID string) (int64, error) {
	res, err := x.ExecContext(ctx, `UPDATE deliveries SET payload = '' WHERE tenant_id = ? AND lead_id = ? AND payload <> ''`,
		tenantID, leadID)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// BlankFailedPayloads empties the payloads of a source's deliveries that
// never reached a lead (failed: they could not be mapped) and contain one
// of needles (index ix_deliveries_state: failed deliveries are few).
func BlankFailedPayloads(ctx context.Context, x db.Ext, tenantID, sourceID string, needles []string) (int64, error) {
	if len(needles) == 0 {
		return 0, nil
	}
	cond := strings.TrimSuffix(strings.Repeat("INSTR(payload, ?) > 0 OR ", len(needles)), " OR ")
	args := []any{tenantID, sourceID}
	for _, n := range needles {
		args = append(args, []byte(n))
	}
	res, err := x.ExecContext(ctx, `UPDATE deliveries SET payload = ''
		WHERE tenant_id = ? AND state = 'failed' AND source_id = ? AND lead_id IS NULL AND (`+cond+`)`, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// BlankDeadLetters empties the bodies of dead letters.
func BlankDeadLetters(ctx context.Context, x db.Ext, tenantID string, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := []any{tenantID}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := x.ExecContext(ctx, `UPDATE dead_letters SET body = '' WHERE tenant_id = ? AND id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
