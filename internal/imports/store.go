package imports

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
)

// This file holds every SQL statement on the imports area's tables:
// imports, import_chunks and import_errors.

const importCols = `tenant_id, id, source_id, state, filename, natural_key, mapping, size_bytes, chunks, body_sha256,
	total_rows, offset_rows, new_rows, updated_rows, unchanged_rows, error_rows, last_error, created_by, created_at, updated_at, finished_at`

func insertImport(ctx context.Context, x db.Ext, im Import) error {
	_, err := x.ExecContext(ctx, `INSERT INTO imports (`+importCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		im.TenantID, im.ID, im.SourceID, im.State, im.Filename, im.NaturalKey, string(im.Plan), im.Size, im.Chunks, im.SHA256,
		im.Rows, im.Offset, im.New, im.Updated, im.Unchanged, im.Errors, im.LastError, im.CreatedBy, im.CreatedAt, im.UpdatedAt, im.FinishedAt)
	return err
}

func insertChunk(ctx context.Context, x db.Ext, tenantID, importID string, seq int, data []byte) error {
	_, err := x.ExecContext(ctx, `INSERT INTO import_chunks (tenant_id, import_id, seq, data) VALUES (?, ?, ?, ?)`,
		tenantID, importID, seq, data)
	return err
}

func getChunk(ctx context.Context, x db.Ext, tenantID, importID string, seq int) ([]byte, error) {
	var data []byte
	err := x.GetContext(ctx, &data, `SELECT data FROM import_chunks WHERE tenant_id = ? AND import_id = ? AND seq = ?`,
		tenantID, importID, seq)
	return data, db.MapErr(err, "the import's file is missing a piece", "")
}

func getImport(ctx context.Context, x db.Ext, tenantID, id string) (Import, error) {
	var im Import
	err := x.GetContext(ctx, &im, `SELECT `+importCols+` FROM imports WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return im, db.MapErr(err, "import not found", "")
}

func listImports(ctx context.Context, x db.Ext, tenantID string, limit int) ([]Import, error) {
	var ims []Import
	err := x.SelectContext(ctx, &ims, `SELECT `+importCols+` FROM imports WHERE tenant_id = ? ORDER BY id DESC LIMIT ?`, tenantID, limit)
	return ims, err
}

// lockImport reads an import's state and offset and locks its row for the
// batch's transaction.
func lockImport(ctx context.Context, x db.Ext, tenantID, id string) (string, int, error) {
	var r struct {
		State  string `db:"state"`
		Offset int    `db:"offset_rows"`
	}
	err := x.GetContext(ctx, &r, `SELECT state, offset_rows FROM imports WHERE tenant_id = ? AND id = ? FOR UPDATE`, tenantID, id)
	return r.State, r.Offset, db.MapErr(err, "import not found", "")
}

// advanceImport adds a batch's counts and moves the offset; at the end of
// the file the import has succeeded.
func advanceImport(ctx context.Context, x db.Ext, tenantID, id string, offset int, n counts, done bool, now time.Time) error {
	var finished any
	state := StateRunning
	if done {
		state, finished = StateSucceeded, now
	}
	_, err := x.ExecContext(ctx, `UPDATE imports SET offset_rows = ?, new_rows = new_rows + ?, updated_rows = updated_rows + ?,
			unchanged_rows = unchanged_rows + ?, error_rows = error_rows + ?, state = ?, updated_at = ?, finished_at = ?
		WHERE tenant_id = ? AND id = ?`,
		offset, n.created, n.updated, n.unchanged, n.refused, state, now, finished, tenantID, id)
	if err != nil || !done {
		return err
	}
	return deleteChunks(ctx, x, tenantID, id)
}

// deleteChunks drops a finished import's file: its rows are applied and
// the refused ones kept in import_errors.
func deleteChunks(ctx context.Context, x db.Ext, tenantID, id string) error {
	_, err := x.ExecContext(ctx, `DELETE FROM import_chunks WHERE tenant_id = ? AND import_id = ?`, tenantID, id)
	return err
}

// failImport fails an import still in state from (running, or a draft
// the sweep expires) and deletes its file, in one transaction; one that
// has left that state meanwhile is left as it is. A Start racing a
// draft's expiry is serialised by the import's row lock: one that
// commits first leaves a running import, which this UPDATE then does not
// match; one that comes after finds the import failed and starts nothing.
func failImport(ctx context.Context, d *sqlx.DB, tenantID, id, from, reason string, now time.Time) error {
	return db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE imports SET state = 'failed', last_error = ?, updated_at = ?, finished_at = ?
			WHERE tenant_id = ? AND id = ? AND state = ?`, reason, now, now, tenantID, id, from)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return deleteChunks(ctx, tx, tenantID, id)
	})
}

func insertErrors(ctx context.Context, x db.Ext, tenantID, importID string, rows []ErrorRow) error {
	if len(rows) == 0 {
		return nil
	}
	args := make([]any, 0, len(rows)*5)
	for _, r := range rows {
		args = append(args, tenantID, importID, r.Row, r.Reason, r.Raw)
	}
	_, err := x.ExecContext(ctx, `INSERT INTO import_errors (tenant_id, import_id, row_num, reason, raw) VALUES (?, ?, ?, ?, ?)`+
		strings.Repeat(", (?, ?, ?, ?, ?)", len(rows)-1), args...)
	return err
}

func errorPage(ctx context.Context, x db.Ext, tenantID, importID string, after, limit int) ([]ErrorRow, error) {
	var rows []ErrorRow
	err := x.SelectContext(ctx, &rows, `SELECT row_num, reason, raw FROM import_errors
		WHERE tenant_id = ? AND import_id = ? AND row_num > ? ORDER BY row_num LIMIT ?`, tenantID, importID, after, limit)
	return rows, err
}

// stalledImports lists a tenant's running imports not updated since before.
func stalledImports(ctx context.Context, x db.Ext, tenantID string, before time.Time) ([]string, error) {
	var out []string
	err := x.SelectContext(ctx, &out, `SELECT id FROM imports WHERE tenant_id = ? AND state = 'running' AND updated_at < ? LIMIT 100`,
		tenantID, before)
	return out, err
}

// expiredDrafts lists a tenant's drafts not changed since before (one
// range of ix_imports_state).
func expiredDrafts(ctx context.Context, x db.Ext, tenantID string, before time.Time) ([]string, error) {
	var out []string
	err := x.SelectContext(ctx, &out, `SELECT id FROM imports WHERE tenant_id = ? AND state = 'draft' AND updated_at < ? LIMIT 100`,
		tenantID, before)
	return out, err
}

// lockDraft reads an import and locks its row.
func lockDraft(ctx context.Context, x db.Ext, tenantID, id string) (Import, error) {
	var im Import
	err := x.GetContext(ctx, &im, `SELECT `+importCols+` FROM imports WHERE tenant_id = ? AND id = ? FOR UPDATE`, tenantID, id)
	return im, db.MapErr(err, "import not found", "")
}

// startDraft writes a draft's confirmed plan and its new state.
func startDraft(ctx context.Context, x db.Ext, im Import) error {
	_, err := x.ExecContext(ctx, `UPDATE imports SET mapping = ?, natural_key = ?, state = ?, updated_at = ?, finished_at = ?
		WHERE tenant_id = ? AND id = ? AND state = 'draft'`,
		string(im.Plan), im.NaturalKey, im.State, im.UpdatedAt, im.FinishedAt, im.TenantID, im.ID)
	return err
}
