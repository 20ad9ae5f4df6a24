package webhooks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/batch"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// The duplicate log (docs/ARCHITECTURE.md, "Duplicates in a retry
// storm"). A server's flush of the duplicates it answered from memory
// appends their counts to delivery_dup_log: one row per tenant and up to
// tallyChunk originals, the counts packed in a blob. That is what makes
// the count durable, and it costs MariaDB one small row for hundreds of
// originals, where raising each original's own row cost it a primary-key
// update and a secondary-index move per original. The worker folds the
// log into deliveries (DupFolder): it reads a few of a tenant's rows under their locks,
// adds every count to its original in one statement per chunk (the claim's
// own INSERT … ON DUPLICATE KEY UPDATE, writeTally) and deletes the rows,
// in one transaction, so a count is folded once whatever fails. Counts of
// one original from several flushes and servers are summed first: a storm
// that repeats the same ids costs one row write per original per fold.

// tallyChunk is how many originals one log row, and one fold statement,
// carries.
const tallyChunk = 500

// maxLogRowsPerInsert bounds one log statement's rows (each carries up to
// tallyChunk originals, some 100 bytes each).
const maxLogRowsPerInsert = 32

// foldRows is how many log rows one fold transaction takes: a few chunks,
// well inside Galera's write-set limits.
const foldRows = 4

// writeLog appends the tally of keys (sorted by tenant, then id) to the
// duplicate log, autocommit.
func writeLog(ctx context.Context, tx *sqlx.Tx, keys []tallyKey, pending map[tallyKey]tallied, now time.Time) error {
	type logRow struct {
		tenantID string
		dups     int
		body     []byte
	}
	var rows []logRow
	for len(keys) > 0 {
		n := 1
		for n < len(keys) && n < tallyChunk && keys[n].tenantID == keys[0].tenantID {
			n++
		}
		r := logRow{tenantID: keys[0].tenantID}
		for _, k := range keys[:n] {
			t := pending[k]
			r.dups += t.n
			r.body = appendLogEntry(r.body, k, t)
		}
		rows = append(rows, r)
		keys = keys[n:]
	}
	for len(rows) > 0 {
		n := min(len(rows), maxLogRowsPerInsert)
		args := make([]any, 0, 4*n)
		for _, r := range rows[:n] {
			args = append(args, r.tenantID, ids.New(), r.dups, now, r.body)
		}
		q := `INSERT INTO delivery_dup_log (tenant_id, id, dups, logged_at, body) VALUES (?, ?, ?, ?, ?)` + strings.Repeat(", (?, ?, ?, ?, ?)", n-1)
		// Prepared: the blobs travel as bytes, where the driver's
		// interpolation would escape every byte into the statement's text
		// and the server parse it back (two round trips more per flush).
		stmt, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		_, err = stmt.ExecContext(ctx, args...)
		if cerr := stmt.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// appendLogEntry packs one original's count: its row id, source and
// delivery id (length-prefixed), the count, the first arrival in Unix
// microseconds and the last as microseconds after the first.
func appendLogEntry(b []byte, k tallyKey, t tallied) []byte {
	for _, s := range [...]string{k.id, k.sourceID, k.deliveryID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(t.n))
	b = binary.AppendVarint(b, t.first.UnixMicro())
	return binary.AppendUvarint(b, uint64(max(t.last.Sub(t.first), 0)/time.Microsecond))
}

var errBadLog = errors.New("malformed duplicate log entry")

// readLogEntries adds the counts packed in body (tenant tenantID) to into.
func readLogEntries(tenantID string, body []byte, into map[tallyKey]tallied) error {
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(body)
		if n <= 0 {
			return 0, errBadLog
		}
		body = body[n:]
		return v, nil
	}
	str := func() (string, error) {
		l, err := uv()
		if err != nil || l > uint64(len(body)) {
			return "", errBadLog
		}
		s := string(body[:l])
		body = body[l:]
		return s, nil
	}
	for len(body) > 0 {
		k := tallyKey{tenantID: tenantID}
		var err error
		if k.id, err = str(); err != nil {
			return err
		}
		if k.sourceID, err = str(); err != nil {
			return err
		}
		if k.deliveryID, err = str(); err != nil {
			return err
		}
		n, err := uv()
		if err != nil {
			return err
		}
		first, w := binary.Varint(body)
		if w <= 0 {
			return errBadLog
		}
		body = body[w:]
		span, err := uv()
		if err != nil {
			return err
		}
		t := tallied{n: int(n), first: time.UnixMicro(first).UTC()}
		t.last = t.first.Add(time.Duration(span) * time.Microsecond)
		if cur, ok := into[k]; ok {
			t.n += cur.n
			t.first = clock.Earlier(cur.first, t.first)
			t.last = clock.Later(cur.last, t.last)
		}
		into[k] = t
	}
	return nil
}

// DupFolder folds the duplicate log into deliveries. The worker runs one
// (Start, every second); a server folds once at FlushDuplicates and at a
// clean Shutdown. Any number may run at once, on any Galera node: each
// transaction takes its rows under their locks (a second fold of the same
// tenant waits, then finds them gone) and deletes them, so a row is folded
// once (on Galera a second node's fold of the same rows fails
// certification, and its retry finds them gone).
type DupFolder struct {
	DB *sqlx.DB
	// OnDuplicates is told, after each fold committed, which originals
	// have a lead whose times_seen is behind (see writeTally).
	OnDuplicates func(originals []DeliveryRef)
	Log          *slog.Logger

	flavour flavour
	loop    batch.Flusher
}

// Start folds every interval until Close.
func (f *DupFolder) Start(every time.Duration) {
	f.loop.Start(every, f.Fold, func(err error) {
		if f.Log != nil {
			f.Log.Warn("folding duplicate counts failed; will retry", "err", err)
		}
	})
}

// Close stops the loop and folds once more.
func (f *DupFolder) Close(ctx context.Context) error {
	f.loop.Stop()
	return f.Fold(ctx)
}

// Fold folds the whole log as it stands, tenant by tenant (in a random
// order, so folds running at once mostly work apart).
func (f *DupFolder) Fold(ctx context.Context) error {
	tenants, err := loggedTenants(ctx, f.DB)
	if err != nil {
		return fmt.Errorf("fold duplicate log: %w", err)
	}
	rand.Shuffle(len(tenants), func(i, j int) { tenants[i], tenants[j] = tenants[j], tenants[i] })
	var errs []error
	for _, tenantID := range tenants {
		for {
			n, err := f.foldOnce(ctx, tenantID)
			if err != nil {
				errs = append(errs, err)
			}
			if err != nil || n < foldRows {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// loggedTenants lists the tenants with duplicate counts to fold.
func loggedTenants(ctx context.Context, x db.Ext) ([]string, error) {
	var tenants []string
	err := x.SelectContext(ctx, &tenants, `SELECT DISTINCT tenant_id FROM delivery_dup_log`)
	return tenants, err
}

// foldOnce folds up to foldRows of a tenant's log rows in one transaction
// and returns how many it took.
func (f *DupFolder) foldOnce(ctx context.Context, tenantID string) (int, error) {
	returning := f.flavour.returning(ctx, f.DB)
	var refs []DeliveryRef
	var took int
	err := db.InTx(ctx, f.DB, func(tx *sqlx.Tx) error {
		refs, took = nil, 0
		var rows []struct {
			ID   string `db:"id"`
			Body []byte `db:"body"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT id, body FROM delivery_dup_log
			WHERE tenant_id = ? ORDER BY id LIMIT ? FOR UPDATE`, tenantID, foldRows); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		took = len(rows)
		pending := map[tallyKey]tallied{}
		args := []any{tenantID}
		for _, r := range rows {
			args = append(args, r.ID)
			if err := readLogEntries(tenantID, r.Body, pending); err != nil && f.Log != nil {
				// Only a bug writes one; what was read before the bad
				// entry is folded, the rest of the row is lost.
				f.Log.Error("duplicate log row unreadable; its remaining counts are dropped", "tenant_id", tenantID, "id", r.ID, "err", err)
			}
		}
		keys := sortedTallyKeys(pending)
		for len(keys) > 0 {
			n := min(len(keys), tallyChunk)
			got, err := writeTally(ctx, tx, returning, keys[:n], pending)
			if err != nil {
				return err
			}
			refs = append(refs, got...)
			keys = keys[n:]
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM delivery_dup_log WHERE tenant_id = ? AND id IN (?`+strings.Repeat(", ?", len(rows)-1)+`)`, args...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fold duplicate log: %w", err)
	}
	if f.OnDuplicates != nil && len(refs) > 0 {
		f.OnDuplicates(refs)
	}
	return took, nil
}

// sortedTallyKeys lists the tally's originals in key order: concurrent
// writers of the same rows (claims, the worker, other folds) lock them in
// this order too.
func sortedTallyKeys(pending map[tallyKey]tallied) []tallyKey {
	keys := make([]tallyKey, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tallyKey) int {
		if a.tenantID != b.tenantID {
			return strings.Compare(a.tenantID, b.tenantID)
		}
		return strings.Compare(a.id, b.id)
	})
	return keys
}

// flavour tells whether the database takes INSERT … RETURNING (MariaDB
// does, MySQL does not), asking the server's version once: 0 not asked
// yet, 1 yes, 2 no.
type flavour struct{ v atomic.Int32 }

func (fl *flavour) returning(ctx context.Context, d *sqlx.DB) bool {
	switch fl.v.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	var v string
	if err := d.GetContext(ctx, &v, `SELECT VERSION()`); err != nil {
		return false // ask again next time
	}
	if strings.Contains(strings.ToLower(v), "mariadb") {
		fl.v.Store(1)
		return true
	}
	fl.v.Store(2)
	return false
}
