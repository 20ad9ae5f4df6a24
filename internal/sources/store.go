package sources

import (
	"context"
	"time"

	"leadpipe/internal/db"
)

const sourceCols = `tenant_id, id, slug, name, kind, IFNULL(config, '') AS config, verify_token_enc, reconcile_base_url,
	reconcile_token_enc, reconcile_form_id, reconcile_list_path, reconcile_interval_s,
	reconcile_lookback_s, reconcile_cursor, created_at, updated_at`

func insertSource(ctx context.Context, x db.Ext, s Source) error {
	_, err := x.ExecContext(ctx, `INSERT INTO sources (`+insertCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.TenantID, s.ID, s.Slug, s.Name, s.Kind, nullJSON(s.Config), s.VerifyTokenEnc, s.ReconcileBaseURL,
		s.ReconcileTokenEnc, s.ReconcileFormID, s.ReconcileListPath, s.ReconcileIntervalS,
		s.ReconcileLookbackS, s.ReconcileCursor, s.CreatedAt, s.UpdatedAt)
	return db.MapErr(err, "", "a source with this slug already exists")
}

func updateSource(ctx context.Context, x db.Ext, s Source) error {
	_, err := x.ExecContext(ctx, `UPDATE sources SET name = ?, config = ?, verify_token_enc = ?,
		reconcile_base_url = ?, reconcile_token_enc = ?, reconcile_form_id = ?, reconcile_list_path = ?,
		reconcile_interval_s = ?, reconcile_lookback_s = ?, updated_at = ?
		WHERE tenant_id = ? AND id = ?`,
		s.Name, nullJSON(s.Config), s.VerifyTokenEnc, s.ReconcileBaseURL, s.ReconcileTokenEnc, s.ReconcileFormID,
		s.ReconcileListPath, s.ReconcileIntervalS, s.ReconcileLookbackS, s.UpdatedAt, s.TenantID, s.ID)
	return err
}

func nullJSON(b []byte) any {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return string(b)
}

func getSource(ctx context.Context, x db.Ext, tenantID, id string) (Source, error) {
	var s Source
	err := x.GetContext(ctx, &s, `SELECT `+sourceCols+` FROM sources WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return s, db.MapErr(err, "source not found", "")
}

func getSourceBySlug(ctx context.Context, x db.Ext, tenantID, slug string) (Source, error) {
	var s Source
	err := x.GetContext(ctx, &s, `SELECT `+sourceCols+` FROM sources WHERE tenant_id = ? AND slug = ?`, tenantID, slug)
	return s, db.MapErr(err, "source not found", "")
}

func listSources(ctx context.Context, x db.Ext, tenantID string) ([]Source, error) {
	var ss []Source
	err := x.SelectContext(ctx, &ss, `SELECT `+sourceCols+` FROM sources WHERE tenant_id = ? ORDER BY name, id`, tenantID)
	return ss, err
}

type secretRow struct {
	ID        string     `db:"id"`
	SecretEnc []byte     `db:"secret_enc"`
	CreatedAt time.Time  `db:"created_at"`
	ExpiresAt *time.Time `db:"expires_at"`
}

func insertSecret(ctx context.Context, x db.Ext, tenantID, sourceID, id string, enc []byte, now time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO source_secrets (tenant_id, source_id, id, secret_enc, created_at)
		VALUES (?, ?, ?, ?, ?)`, tenantID, sourceID, id, enc, now)
	return err
}

// liveSecrets returns current (expires_at NULL) then in-grace secrets, newest first.
func liveSecrets(ctx context.Context, x db.Ext, tenantID, sourceID string, now time.Time) ([]secretRow, error) {
	var rows []secretRow
	err := x.SelectContext(ctx, &rows, `SELECT id, secret_enc, created_at, expires_at FROM source_secrets
		WHERE tenant_id = ? AND source_id = ? AND (expires_at IS NULL OR expires_at > ?)
		ORDER BY expires_at IS NULL DESC, created_at DESC`, tenantID, sourceID, now)
	return rows, err
}

// expireCurrent puts every current secret on a grace period ending at until;
// secrets already in grace keep their (earlier) end unless until is sooner.
func expireCurrent(ctx context.Context, x db.Ext, tenantID, sourceID string, until time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE source_secrets
		SET expires_at = CASE WHEN expires_at IS NULL OR expires_at > ? THEN ? ELSE expires_at END
		WHERE tenant_id = ? AND source_id = ?`, until, until, tenantID, sourceID)
	return err
}

// purgeSecrets deletes secrets that ended long ago.
func purgeSecrets(ctx context.Context, x db.Ext, tenantID, sourceID string, before time.Time) error {
	_, err := x.ExecContext(ctx, `DELETE FROM source_secrets WHERE tenant_id = ? AND source_id = ? AND expires_at < ?`,
		tenantID, sourceID, before)
	return err
}

const insertCols = `tenant_id, id, slug, name, kind, config, verify_token_enc, reconcile_base_url,
	reconcile_token_enc, reconcile_form_id, reconcile_list_path, reconcile_interval_s,
	reconcile_lookback_s, reconcile_cursor, created_at, updated_at`

// importSource is the tenant's oldest source of kind import.
func importSource(ctx context.Context, x db.Ext, tenantID string) (Source, error) {
	var s Source
	err := x.GetContext(ctx, &s, `SELECT `+sourceCols+` FROM sources WHERE tenant_id = ? AND kind = 'import' ORDER BY id LIMIT 1`, tenantID)
	return s, db.MapErr(err, "source not found", "")
}

// Names maps the given source ids of a tenant to their names; a source
// that is gone is absent. Other areas label what they show with it (a
// lead's timeline) instead of joining the sources table.
func Names(ctx context.Context, x db.Ext, tenantID string, ids []string) (map[string]string, error) {
	if len(ids) == 0 {
		return map[string]string{}, nil
	}
	return db.KeyValuesIn[string](ctx, x, `SELECT id AS k, name AS v FROM sources WHERE tenant_id = ? AND id IN (?)`, tenantID, ids)
}

// PulledSource is a source with pull settings: its id and how often it is
// reconciled.
type PulledSource struct {
	ID        string `db:"id"`
	IntervalS int    `db:"reconcile_interval_s"`
}

// Pulled lists the tenant's sources that have pull settings (a kind that
// can be reconciled and a base URL).
func Pulled(ctx context.Context, x db.Ext, tenantID string) ([]PulledSource, error) {
	var out []PulledSource
	err := x.SelectContext(ctx, &out, `SELECT id, reconcile_interval_s FROM sources
		WHERE tenant_id = ? AND kind IN ('typeform', 'meta', 'generic')
			AND reconcile_base_url IS NOT NULL AND reconcile_base_url <> ''`, tenantID)
	return out, err
}
