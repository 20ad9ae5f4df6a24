package retention

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"leadpipe/internal/db"
)

type settingsRow struct {
	DeliveryPayloadDays int `db:"delivery_payload_days"`
	DeadLetterDays      int `db:"dead_letter_days"`
	EventDays           int `db:"event_days"`
}

func getSettings(ctx context.Context, x db.Ext, tenantID string) (Settings, error) {
	return readSettings(ctx, x, `SELECT delivery_payload_days, dead_letter_days, event_days FROM retention_settings WHERE tenant_id = ?`, tenantID)
}

// getSettingsForUpdate locks the tenant's row (when there is one) so two
// concurrent changes record their old values in order.
func getSettingsForUpdate(ctx context.Context, x db.Ext, tenantID string) (Settings, error) {
	return readSettings(ctx, x, `SELECT delivery_payload_days, dead_letter_days, event_days FROM retention_settings WHERE tenant_id = ? FOR UPDATE`, tenantID)
}

func readSettings(ctx context.Context, x db.Ext, q, tenantID string) (Settings, error) {
	var r settingsRow
	err := x.GetContext(ctx, &r, q, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return Defaults, nil
	}
	if err != nil {
		return Settings{}, err
	}
	return Settings(r), nil
}

func putSettings(ctx context.Context, x db.Ext, tenantID string, st Settings, now time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO retention_settings (tenant_id, delivery_payload_days, dead_letter_days, event_days, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE delivery_payload_days = VALUES(delivery_payload_days), dead_letter_days = VALUES(dead_letter_days),
			event_days = VALUES(event_days), updated_at = VALUES(updated_at)`,
		tenantID, st.DeliveryPayloadDays, st.DeadLetterDays, st.EventDays, now)
	return err
}

// getCursor returns where the purge of one table stopped ("" at first).
func getCursor(ctx context.Context, x db.Ext, tenantID, table string) (string, error) {
	var after string
	err := x.GetContext(ctx, &after, `SELECT after_id FROM retention_cursors WHERE tenant_id = ? AND tbl = ?`, tenantID, table)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return after, err
}

func putCursor(ctx context.Context, x db.Ext, tenantID, table, after string, now time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO retention_cursors (tenant_id, tbl, after_id, updated_at) VALUES (?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE after_id = VALUES(after_id), updated_at = VALUES(updated_at)`, tenantID, table, after, now)
	return err
}
