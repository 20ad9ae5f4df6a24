package webhooks

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
)

// PurgeBatch is what one batch of a retention purge did.
type PurgeBatch struct {
	Last    string // the highest primary key walked past ("" when none)
	Scanned int    // rows walked; fewer than the limit: nothing is left below the bound
	Changed int64  // rows blanked or deleted
}

// PurgePayloads blanks the raw payload of the tenant's processed
// deliveries received before `before`, walking at most limit rows of the
// primary key range (afterID, beforeID) (ids are ULIDs, so beforeID is
// the first id of `before`). The row stays: counts, the unique key that
// answers a later duplicate, and the lead link keep working. One short
// READ COMMITTED transaction, so only the rows it changes are locked, for
// milliseconds, and none that ingest claims or processes now.
func PurgePayloads(ctx context.Context, d *sqlx.DB, tenantID, afterID, beforeID string, before time.Time, limit int) (PurgeBatch, error) {
	return purgeRange(ctx, d, `SELECT id FROM deliveries WHERE tenant_id = ? AND id > ? AND id < ? ORDER BY id LIMIT ?`, `UPDATE deliveries SET payload = ''
			WHERE tenant_id = ? AND id > ? AND id <= ? AND state = 'processed' AND received_at < ? AND LENGTH(payload) > 0`,
		tenantID, afterID, beforeID, before, limit)
}

// PurgeDeadLetters deletes the tenant's dead letters received before
// `before`, at most limit rows of the primary key range (afterID,
// beforeID), in one short transaction.
func PurgeDeadLetters(ctx context.Context, d *sqlx.DB, tenantID, afterID, beforeID string, before time.Time, limit int) (PurgeBatch, error) {
	return purgeRange(ctx, d, `SELECT id FROM dead_letters WHERE tenant_id = ? AND id > ? AND id < ? ORDER BY id LIMIT ?`, `DELETE FROM dead_letters WHERE tenant_id = ? AND id > ? AND id <= ? AND received_at < ?`,
		tenantID, afterID, beforeID, before, limit)
}

// purgeRange is one purge batch: walk reads at most limit ids of
// (afterID, beforeID) in key order (its arguments: the tenant, afterID,
// beforeID, limit), then change runs on that range (the tenant, afterID,
// the last id walked, before), in one transaction.
func purgeRange(ctx context.Context, d *sqlx.DB, walk, change, tenantID, afterID, beforeID string, before time.Time, limit int) (PurgeBatch, error) {
	var b PurgeBatch
	err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		b = PurgeBatch{}
		last, n, err := pkRange(ctx, tx, walk, tenantID, afterID, beforeID, limit)
		if err != nil || n == 0 {
			return err
		}
		b.Last, b.Scanned = last, n
		res, err := tx.ExecContext(ctx, change, tenantID, afterID, last, before.UTC())
		if err != nil {
			return err
		}
		b.Changed, err = res.RowsAffected()
		return err
	})
	return b, err
}

// pkRange reads a batch's ids in primary key order and returns the last
// one and how many there were.
func pkRange(ctx context.Context, x db.Ext, q string, args ...any) (string, int, error) {
	var ids []string
	if err := x.SelectContext(ctx, &ids, q, args...); err != nil || len(ids) == 0 {
		return "", 0, err
	}
	return ids[len(ids)-1], len(ids), nil
}

// PayloadRemoved is the message of a delivery whose raw payload the
// retention purge blanked: it cannot be processed again.
const PayloadRemoved = "payload removed by retention"

// payloadKept answers Conflict for a delivery whose payload the retention
// purge removed: there is nothing left to process again.
func (a *Admin) payloadKept(ctx context.Context, tenantID, id string) error {
	var empty bool
	if err := a.DB.GetContext(ctx, &empty, `SELECT LENGTH(payload) = 0 FROM deliveries WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		return err
	}
	if empty {
		return apperr.New(apperr.Conflict, PayloadRemoved)
	}
	return nil
}
