package events

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
)

// PurgeBatch is what one batch of the retention purge did.
type PurgeBatch struct {
	Last    string // the highest event id walked past ("" when none)
	Scanned int    // events walked; fewer than the limit: nothing is left below the bound
	Deleted int64  // events deleted (with their deliveries and attempts)
	// Busy: the batch stopped at an event still on its way (not yet
	// relayed, or a delivery still pending, queued or sending); Last is
	// the event before it, and the next run resumes there.
	Busy bool
}

type purgeRow struct {
	ID      string `db:"id"`
	Pending *int   `db:"pending"`
}

// PurgeEvents deletes the tenant's events created before `before`, with
// their event_deliveries and event_attempts rows, walking at most limit
// events of the primary key range (afterID, beforeID) in one short
// transaction. It stops before the first event still being delivered.
func PurgeEvents(ctx context.Context, d *sqlx.DB, tenantID, afterID, beforeID string, before time.Time, limit int) (PurgeBatch, error) {
	var b PurgeBatch
	err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		b = PurgeBatch{}
		var rows []purgeRow
		if err := tx.SelectContext(ctx, &rows, `SELECT id, pending FROM events
			WHERE tenant_id = ? AND id > ? AND id < ? AND created_at < ? ORDER BY id LIMIT ?`,
			tenantID, afterID, beforeID, before.UTC(), limit); err != nil || len(rows) == 0 {
			return err
		}
		b.Scanned = len(rows)
		all := make([]string, len(rows))
		for i, r := range rows {
			all[i] = r.ID
		}
		var open []string
		if err := db.SelectIn(ctx, tx, &open, `SELECT DISTINCT event_id FROM event_deliveries
			WHERE tenant_id = ? AND event_id IN (?) AND state NOT IN (?, ?)`, tenantID, all, StateDelivered, StateFailed); err != nil {
			return err
		}
		busy := make(map[string]bool, len(open))
		for _, id := range open {
			busy[id] = true
		}
		var gone []string
		for _, r := range rows {
			if r.Pending != nil || busy[r.ID] {
				b.Busy = true
				break
			}
			gone = append(gone, r.ID)
		}
		if len(gone) == 0 {
			return nil
		}
		b.Last = gone[len(gone)-1]
		for _, del := range []string{
			`DELETE FROM event_attempts WHERE tenant_id = ? AND event_id IN (?)`,
			`DELETE FROM event_deliveries WHERE tenant_id = ? AND event_id IN (?)`,
		} {
			if _, err := db.ExecIn(ctx, tx, del, tenantID, gone); err != nil {
				return err
			}
		}
		res, err := db.ExecIn(ctx, tx, `DELETE FROM events WHERE tenant_id = ? AND id IN (?)`, tenantID, gone)
		if err != nil {
			return err
		}
		b.Deleted, err = res.RowsAffected()
		return err
	})
	return b, err
}
