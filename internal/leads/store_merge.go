package leads

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"leadpipe/internal/db"
)

// Possible duplicates, merge and unmerge: the statements on lead_merges and
// the merged leads' pointers (docs/ARCHITECTURE.md, "Merged leads").

// sameContact reads the other visible leads with the normalized email and
// with the normalized phone (each "" asks nothing), newest first: one
// range of ix_leads_email_norm / ix_leads_phone_norm each.
func sameContact(ctx context.Context, x db.Ext, tenantID, id, email, phone string, limit int) (byEmail, byPhone []Lead, err error) {
	if email != "" {
		if err = x.SelectContext(ctx, &byEmail, `SELECT `+LeadCols+` FROM leads FORCE INDEX (ix_leads_email_norm)
			WHERE tenant_id = ? AND email_norm = ? AND id <> ? AND status <> '`+StatusMerged+`' ORDER BY id DESC LIMIT ?`,
			tenantID, email, id, limit); err != nil {
			return nil, nil, err
		}
	}
	if phone != "" {
		if err = x.SelectContext(ctx, &byPhone, `SELECT `+LeadCols+` FROM leads FORCE INDEX (ix_leads_phone_norm)
			WHERE tenant_id = ? AND phone_norm = ? AND id <> ? AND status <> '`+StatusMerged+`' ORDER BY id DESC LIMIT ?`,
			tenantID, phone, id, limit); err != nil {
			return nil, nil, err
		}
	}
	return byEmail, byPhone, nil
}

// groupOf is a lead's id and the ids of the leads merged into it.
func groupOf(ctx context.Context, x db.Ext, tenantID, id string) ([]string, error) {
	var merged []string
	if err := x.SelectContext(ctx, &merged, `SELECT id FROM leads WHERE tenant_id = ? AND merged_into = ? ORDER BY id`,
		tenantID, id); err != nil {
		return nil, err
	}
	return append([]string{id}, merged...), nil
}

// anyMergedInto returns one of ids that has leads merged into it ("" for
// none).
func anyMergedInto(ctx context.Context, x db.Ext, tenantID string, ids []string) (string, error) {
	var parent string
	err := db.GetIn(ctx, x, &parent, `SELECT merged_into FROM leads WHERE tenant_id = ? AND merged_into IN (?) LIMIT 1`, tenantID, ids)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return parent, err
}

// writeMergedSurvivor writes a survivor as a merge or an unmerge leaves it
// (the row is locked): the picked fields, tags, sightings and version.
func writeMergedSurvivor(ctx context.Context, x db.Ext, tenantID string, l Lead) error {
	_, err := x.ExecContext(ctx, `UPDATE leads SET email = ?, name = ?, phone = ?, company = ?, email_norm = ?, phone_norm = ?,
			status = ?, owner_id = ?, next_step = ?, due_at = ?, tags = ?, times_seen = ?, last_seen_at = ?, version = ?, updated_at = ?
		WHERE tenant_id = ? AND id = ?`,
		l.Email, l.Name, l.Phone, l.Company, Clip(NormalizeEmail(l.Email), 320), NormalizePhone(l.Phone),
		l.Status, l.OwnerID, l.NextStep, l.DueAt, l.Tags, l.TimesSeen, l.LastSeenAt, l.Version, l.UpdatedAt, tenantID, l.ID)
	return err
}

// markMerged points the merged leads at their survivor and takes them out
// of the lists.
func markMerged(ctx context.Context, x db.Ext, tenantID, survivorID string, merged []string, now time.Time) error {
	_, err := db.ExecIn(ctx, x, `UPDATE leads SET merged_into = ?, status = ?, version = version + 1, updated_at = ?
		WHERE tenant_id = ? AND id IN (?)`, survivorID, StatusMerged, now, tenantID, merged)
	return err
}

// restoreMerged gives an unmerged lead its own status back.
func restoreMerged(ctx context.Context, x db.Ext, tenantID, id, status string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE leads SET merged_into = NULL, status = ?, version = version + 1, updated_at = ?
		WHERE tenant_id = ? AND id = ?`, status, now, tenantID, id)
	return err
}

// mergeRecord is one lead_merges row.
type mergeRecord struct {
	ID         string    `db:"id"`
	SurvivorID string    `db:"survivor_id"`
	MergedID   string    `db:"merged_id"`
	State      []byte    `db:"state"`
	ActorName  string    `db:"actor_name"`
	MergedAt   time.Time `db:"merged_at"`
}

func insertMergeRecords(ctx context.Context, x db.Ext, tenantID string, recs []mergeRecord) error {
	if len(recs) == 0 {
		return nil
	}
	args := make([]any, 0, 7*len(recs))
	for _, r := range recs {
		args = append(args, tenantID, r.ID, r.SurvivorID, r.MergedID, string(r.State), Clip(r.ActorName, 255), r.MergedAt)
	}
	const v = `(?, ?, ?, ?, ?, ?, ?)`
	_, err := x.ExecContext(ctx, `INSERT INTO lead_merges (tenant_id, id, survivor_id, merged_id, state, actor_name, merged_at)
		VALUES `+v+strings.Repeat(", "+v, len(recs)-1), args...)
	return err
}

// openMergeRecord reads (and locks) the merge of mergedID into survivorID
// that is not undone.
func openMergeRecord(ctx context.Context, x db.Ext, tenantID, survivorID, mergedID string) (mergeRecord, error) {
	var r mergeRecord
	err := x.GetContext(ctx, &r, `SELECT id, survivor_id, merged_id, state, actor_name, merged_at FROM lead_merges
		WHERE tenant_id = ? AND merged_id = ? AND survivor_id = ? AND undone_at IS NULL ORDER BY id DESC LIMIT 1 FOR UPDATE`,
		tenantID, mergedID, survivorID)
	return r, db.MapErr(err, "no merge record of this lead", "")
}

func closeMergeRecord(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE lead_merges SET undone_at = ? WHERE tenant_id = ? AND id = ?`, now, tenantID, id)
	return err
}

// eraseMerges removes an erased lead's merge records (they hold its
// fields) in the erasure's transaction; leads merged into it stand alone
// again with their own status.
func eraseMerges(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) error {
	var recs []struct {
		MergedID string `db:"merged_id"`
		State    []byte `db:"state"`
	}
	if err := x.SelectContext(ctx, &recs, `SELECT merged_id, state FROM lead_merges
		WHERE tenant_id = ? AND survivor_id = ? AND undone_at IS NULL ORDER BY merged_id`, tenantID, id); err != nil {
		return err
	}
	for _, r := range recs {
		var st mergeState
		if json.Unmarshal(r.State, &st) != nil || !ValidStatus(st.Status) {
			st.Status = "new"
		}
		if _, err := x.ExecContext(ctx, `UPDATE leads SET merged_into = NULL, status = ?, version = version + 1, updated_at = ?
			WHERE tenant_id = ? AND id = ? AND merged_into = ?`, st.Status, now, tenantID, r.MergedID, id); err != nil {
			return err
		}
	}
	_, err := x.ExecContext(ctx, `DELETE FROM lead_merges WHERE tenant_id = ? AND (survivor_id = ? OR merged_id = ?)`, tenantID, id, id)
	return err
}
