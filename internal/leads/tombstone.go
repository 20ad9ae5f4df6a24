package leads

import (
	"context"
	"crypto/sha256"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// OutcomeErased: the record belongs to an erased lead (a tombstone holds
// its natural key's hash). Nothing is written; the caller drops the record
// and, for a delivery, its payload (docs/ARCHITECTURE.md, "Personal data").
const OutcomeErased = "erased"

// TombstoneKey is the hash a tombstone keeps of a lead's natural key:
// SHA-256 of the source id, a NUL byte and the source ref (clipped as the
// leads table stores it). It is all that is left of an erased lead.
func TombstoneKey(sourceID, sourceRef string) []byte {
	h := sha256.New()
	h.Write([]byte(sourceID))
	h.Write([]byte{0})
	h.Write([]byte(Clip(sourceRef, 191)))
	return h.Sum(nil)
}

// insertTombstone records an erased natural key (again: the later time).
func insertTombstone(ctx context.Context, x db.Ext, tenantID string, key []byte, at time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO lead_tombstones (tenant_id, key_hash, erased_at) VALUES (?, ?, ?)
		ON DUPLICATE KEY UPDATE erased_at = VALUES(erased_at)`, tenantID, key, at)
	return err
}

// erasedKeys returns which of keys have a tombstone: one primary-key
// lookup per key in one statement. Under READ COMMITTED (db.InTx) it sees
// an erasure that committed before the statement, and the erasure deletes
// the lead in the same transaction as it writes the tombstone, so a batch
// that found no lead for a key finds its tombstone here.
func erasedKeys(ctx context.Context, x db.Ext, tenantID string, keys [][]byte) (map[string]bool, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(keys)+1)
	args = append(args, tenantID)
	for _, k := range keys {
		args = append(args, k)
	}
	var found [][]byte
	if err := x.SelectContext(ctx, &found, `SELECT key_hash FROM lead_tombstones WHERE tenant_id = ? AND key_hash IN (?`+
		strings.Repeat(", ?", len(keys)-1)+`)`, args...); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(found))
	for _, k := range found {
		out[string(k)] = true
	}
	return out, nil
}

// EraseTx deletes a lead with its notes and timeline entries in the
// caller's transaction and leaves a tombstone of its natural key, so no
// sender record re-creates it (UpsertFromSenderBatch). It returns the lead
// as it was, for the caller to find the person's data elsewhere. The lead
// row is locked first: of concurrent erasures one deletes it, the others
// then find nothing (NotFound, also for another tenant's lead).
func EraseTx(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) (Lead, error) {
	if !ids.Valid(id) {
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	}
	ls, err := lockLeads(ctx, x, tenantID, []string{id})
	if err != nil {
		return Lead{}, err
	}
	if len(ls) == 0 {
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	}
	for _, q := range []string{
		`DELETE FROM lead_notes WHERE tenant_id = ? AND lead_id = ?`,
		`DELETE FROM lead_events WHERE tenant_id = ? AND lead_id = ?`,
		`DELETE FROM leads WHERE tenant_id = ? AND id = ?`,
	} {
		if _, err := x.ExecContext(ctx, q, tenantID, id); err != nil {
			return Lead{}, err
		}
	}
	if err := insertTombstone(ctx, x, tenantID, TombstoneKey(ls[0].SourceID, ls[0].SourceRef), now); err != nil {
		return Lead{}, err
	}
	return ls[0], nil
}

// AllNotes lists every note of a lead, oldest first (a person's export).
func AllNotes(ctx context.Context, x db.Ext, tenantID, leadID string) ([]Note, error) {
	notes := []Note{}
	err := x.SelectContext(ctx, &notes, `SELECT id, lead_id, author_id, author_name, body, created_at
		FROM lead_notes WHERE tenant_id = ? AND lead_id = ? ORDER BY id`, tenantID, leadID)
	return notes, err
}
