package webhooks

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/batch"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
)

// The duplicate fast path (docs/ARCHITECTURE.md, "Duplicates in a retry storm"). A
// duplicate of a delivery id whose claim this process saw COMMIT is
// answered at once, with no database round trip: the answer ("we have it,
// as <original>") was already true. Its arrival is tallied in memory per
// original and written by one statement per flush (every FlushEvery,
// DuplicateHold by default; at once when the tally reaches its memory
// bound; and at shutdown), which raises the original's dup_count,
// dup_first_at and dup_last_at as the claim would have, then hints
// Sightings of the originals already processed into a lead, which brings
// the lead's times_seen along. Holding the counts lets one row write carry
// every repeat of an original in the window (a retry storm repeats the
// same ids), which is most of what a duplicate cost MariaDB. A crash
// (kill -9) loses at most the tally of one window, the counts of
// deliveries already stored (internal/faults asserts it): while a flush
// fails nothing more is tallied (duplicates take the claim again), and no
// delivery or original is ever only in memory.
//
// Memory is bounded in bytes (Claimer.Memory, LEADPIPE_DUPLICATE_MEMORY):
// seven eighths for the committed delivery ids, an eighth for the tally.
// A duplicate this process does not know (another server process claimed
// it, or it was forgotten) takes the claim, which finds the original in
// the database and is as right, only slower.

// DuplicateHold is how long a duplicate answered from memory may hold its
// count before it is written (docs/ARCHITECTURE.md: up to 5 s, or
// until the memory bound, whichever comes first).
const DuplicateHold = 5 * time.Second

// DefaultDuplicateMemory is the fast path's memory bound when none is set.
const DefaultDuplicateMemory = 32 << 20

// entryOverhead is what a map entry costs beside its strings' bytes (the
// string headers, the bucket's share, the map's spare room), rounded up.
const entryOverhead = 96

// Answer answers a duplicate without the database when this process knows
// the delivery id's claim committed: it returns our row id of the original
// and whether the duplicate was tallied (true: the caller answers
// duplicate and is done). An original it knows but could not tally (the
// tally is full, a flush is failing, or the claimer is shutting down)
// comes back with false: the caller claims it as before, through the
// primary key.
func (c *Claimer) Answer(tenantID, sourceID, deliveryID string, at time.Time) (string, bool) {
	c.start()
	orig, ok := c.known.get(tenantID, sourceID, deliveryID)
	if !ok {
		return "", false
	}
	switch c.tally.add(tenantID, sourceID, deliveryID, orig, at) {
	case tallyOK:
		return orig, true
	case tallyFull: // the memory bound: write the window now, not at the tick
		c.flushEarly()
	}
	return orig, false
}

// flushEarly writes the tally on a goroutine of its own when it reached
// its memory bound before the tick: one such flush at a time, and
// Shutdown waits for it.
func (c *Claimer) flushEarly() {
	if !c.tally.early.CompareAndSwap(false, true) {
		return
	}
	c.tally.earlyRuns.Add(1)
	go func() {
		defer c.tally.earlyRuns.Done()
		defer c.tally.early.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), batch.FlushTimeout)
		defer cancel()
		if err := c.flushTally(ctx); err != nil && c.Log != nil {
			c.Log.Warn("writing duplicate counts failed; duplicates take the claim until it works", "err", err)
		}
	}()
}

// FlushDuplicates writes the tally of fast-path duplicates now and folds
// the duplicate log into deliveries (duplog.go), so the counts are on
// their deliveries when it returns.
func (c *Claimer) FlushDuplicates(ctx context.Context) error {
	c.start()
	if err := c.flushTally(ctx); err != nil {
		return err
	}
	return c.fold.Fold(ctx)
}

// Shutdown stops tallying (later duplicates take the claim) and writes
// what is tallied: a clean shutdown leaves every count exact. It then
// folds the log once, so the counts are on their deliveries without a
// worker; a fold that fails leaves them in the log for the worker's.
func (c *Claimer) Shutdown(ctx context.Context) error {
	c.start()
	c.tally.close()
	c.flushes.Stop()
	c.tally.earlyRuns.Wait()
	if err := c.flushTally(ctx); err != nil {
		return err
	}
	if err := c.fold.Fold(ctx); err != nil && c.Log != nil {
		c.Log.Warn("folding the last duplicate counts failed; the worker folds them", "err", err)
	}
	return nil
}

// flushTally appends the pending tally to the duplicate log (writeLog):
// once that returned, the counts are durable. On failure they go back
// into the tally, which takes no more until a flush works.
func (c *Claimer) flushTally(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	pending := c.tally.take()
	if len(pending) == 0 {
		return nil
	}
	keys := sortedTallyKeys(pending)
	// One transaction: a huge tally takes several statements, and a
	// count must not be logged twice when a later one fails.
	err := db.InTx(ctx, c.DB, func(tx *sqlx.Tx) error { return writeLog(ctx, tx, keys, pending, time.Now()) })
	if err != nil {
		c.tally.putBack(pending)
		return err
	}
	c.tally.healthy()
	return nil
}

// writeTally adds each original's tallied duplicates in one statement,
// in the caller's transaction (the fold's): the claim's own INSERT … ON
// DUPLICATE KEY UPDATE (claimer.go), each row naming its original's
// primary key and carrying its count and first and last arrival, so every
// row costs the server one primary-key lookup (a CASE per column would
// cost it the whole list per row). An original that is gone (its tenant
// was deleted) is stored failed in its place, as the claim does.
//
// On MariaDB the statement RETURNs, from each row as its update left it
// (under its row lock), whether the lead's times_seen is behind: a
// delivery already processed into a lead whose dup_count now exceeds
// dups_counted. Only those are handed to Sightings. A delivery not yet
// processed needs nothing: the worker reads dup_count under the row lock
// when it makes the lead (1 + dup_count), after this statement committed
// or before it took the lock (then the row read here is processed and
// returned). So a storm of duplicates of unprocessed deliveries costs no
// sightings work. MySQL has no INSERT … RETURNING: there a read in the
// same transaction after the statement asks the same under the locks the
// statement holds.
func writeTally(ctx context.Context, x db.Ext, returning bool, keys []tallyKey, pending map[tallyKey]tallied) ([]DeliveryRef, error) {
	args := make([]any, 0, len(keys)*8)
	for _, k := range keys {
		t := pending[k]
		args = append(args, k.tenantID, k.sourceID, k.id, k.deliveryID, t.first, t.n, t.first, t.last)
	}
	q := `INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at, state, last_error, dup_count, dup_first_at, dup_last_at)
		VALUES ` + tallyRow + strings.Repeat(", "+tallyRow, len(keys)-1) + `
		ON DUPLICATE KEY UPDATE dup_count = dup_count + VALUES(dup_count), ` + spareForFirstDuplicate + `,
			dup_first_at = IFNULL(dup_first_at, VALUES(dup_first_at)),
			dup_last_at = GREATEST(IFNULL(dup_last_at, VALUES(dup_last_at)), VALUES(dup_last_at))`
	if returning {
		q += `
		RETURNING tenant_id, id, IFNULL(state = 'processed' AND lead_id IS NOT NULL AND dup_count > dups_counted, 0)`
		return execTally(ctx, x, q, args)
	}
	if _, err := x.ExecContext(ctx, q, args...); err != nil {
		return nil, err
	}
	return behind(ctx, x, keys)
}

// behind reads which of the originals just written have a lead whose
// times_seen is behind (MySQL, where the tally statement cannot return
// it).
func behind(ctx context.Context, x db.Ext, keys []tallyKey) ([]DeliveryRef, error) {
	byTenant := map[string][]string{}
	for _, k := range keys {
		byTenant[k.tenantID] = append(byTenant[k.tenantID], k.id)
	}
	var refs []DeliveryRef
	for tenantID, ids := range byTenant {
		var got []string
		if err := db.SelectIn(ctx, x, &got, `SELECT id FROM deliveries
			WHERE tenant_id = ? AND id IN (?) AND state = 'processed' AND lead_id IS NOT NULL AND dup_count > dups_counted`, tenantID, ids); err != nil {
			return nil, err
		}
		for _, id := range got {
			refs = append(refs, DeliveryRef{TenantID: tenantID, ID: id})
		}
	}
	return refs, nil
}

// tallyRow is one original's row of the tally statement. The constants
// are literals, not parameters: the driver interpolates parameters into
// the statement's text, and the vanished original's message would be
// escaped and sent, and parsed by the server, once per row.
var tallyRow = `(?, ?, ?, ?, 'webhook', '', ?, 'failed', '` + vanishedOriginal + `', ?, ?, ?)`

// execTally runs the tally statement and reads what it returned. Only the
// server's error (rows.Err: the statement failed) is a failure; a row
// this side cannot read is handed on as behind (Sightings reads it again
// under its lock), since the statement's counts stand all the same.
func execTally(ctx context.Context, x db.Ext, q string, args []any) ([]DeliveryRef, error) {
	rows, err := x.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var refs []DeliveryRef
	for rows.Next() {
		var r DeliveryRef
		var behind bool
		if err := rows.Scan(&r.TenantID, &r.ID, &behind); err != nil {
			behind = r.TenantID != "" && r.ID != ""
		}
		if behind {
			refs = append(refs, r)
		}
	}
	return refs, rows.Err()
}

// knownIDs is a bounded map of the delivery ids whose claim committed
// recently to our row ids, in two generations: when the young one has
// used its half of the bytes it becomes the old one, and the old one is
// dropped, so memory stays bounded without per-entry bookkeeping. Only
// the claimer's batch results put entries, after their statement
// returned (autocommit: committed); nothing that may roll back does.
type knownIDs struct {
	mu         sync.Mutex
	max        int64 // bytes per generation
	youngBytes int64
	young, old map[string]string
}

func (k *knownIDs) init(maxBytes int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.max = maxBytes / 2
	k.youngBytes = 0
	k.young, k.old = map[string]string{}, map[string]string{}
}

// knownKey appends the map key of a delivery id to b: tenant and source
// ids are 26 characters each, so the concatenation is unambiguous.
func knownKey(b []byte, tenantID, sourceID, deliveryID string) []byte {
	return append(append(append(b, tenantID...), sourceID...), deliveryID...)
}

func (k *knownIDs) get(tenantID, sourceID, deliveryID string) (string, bool) {
	var buf [256]byte
	key := knownKey(buf[:0], tenantID, sourceID, deliveryID)
	k.mu.Lock()
	defer k.mu.Unlock()
	if id, ok := k.young[string(key)]; ok { // no allocation: the compiler looks up without copying
		return id, true
	}
	id, ok := k.old[string(key)]
	return id, ok
}

func (k *knownIDs) put(tenantID, sourceID, deliveryID, id string) {
	key := string(knownKey(nil, tenantID, sourceID, deliveryID))
	size := int64(len(key) + len(id) + entryOverhead)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.max <= 0 {
		return
	}
	if _, ok := k.young[key]; ok {
		k.young[key] = id
		return
	}
	if k.youngBytes+size > k.max {
		k.old, k.young, k.youngBytes = k.young, map[string]string{}, 0
	}
	k.young[key] = id
	k.youngBytes += size
}

// tally holds the fast-path duplicates not yet written, per original.
type tally struct {
	mu      sync.Mutex
	max     int64 // bytes
	bytes   int64
	pending map[tallyKey]tallied
	failing bool // the last flush failed: take nothing until one works
	closed  bool

	early     atomic.Bool    // a flush for the memory bound is running
	earlyRuns sync.WaitGroup // that flush, for Shutdown

}

// tallyKey is an original: our row id, with the delivery id's key (the
// flush names them all, as the claim does).
type tallyKey struct{ tenantID, id, sourceID, deliveryID string }

func (k tallyKey) size() int64 {
	return int64(len(k.tenantID)+len(k.id)+len(k.sourceID)+len(k.deliveryID)) + entryOverhead
}

type tallied struct {
	n           int
	first, last time.Time
}

// tallyResult is what add did with a duplicate.
type tallyResult int

const (
	tallyOK   tallyResult = iota // counted in memory: answered
	tallyFull                    // the memory bound is reached: claim it, and flush now
	tallyShut                    // failing or closed: claim it
)

func (t *tally) init(maxBytes int64) {
	t.max = maxBytes
	t.pending = map[tallyKey]tallied{}
}

// add tallies one duplicate of original id; anything but tallyOK means
// it cannot (full, failing, closed), and the duplicate must take the claim.
func (t *tally) add(tenantID, sourceID, deliveryID, id string, at time.Time) tallyResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.failing {
		return tallyShut
	}
	k := tallyKey{tenantID: tenantID, id: id, sourceID: sourceID, deliveryID: deliveryID}
	e, ok := t.pending[k]
	if !ok {
		size := k.size()
		if t.bytes+size > t.max {
			return tallyFull
		}
		t.bytes += size
		e = tallied{first: at, last: at}
	}
	e.n++
	if at.Before(e.first) {
		e.first = at
	}
	if at.After(e.last) {
		e.last = at
	}
	t.pending[k] = e
	return tallyOK
}

// take hands over what is pending and starts an empty tally.
func (t *tally) take() map[tallyKey]tallied {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pending
	t.pending, t.bytes = map[tallyKey]tallied{}, 0
	return p
}

// putBack merges a tally whose flush failed into the pending one and
// stops taking duplicates until a flush works. It may go over the byte
// bound by what was added while the flush ran (at most one flush's).
func (t *tally) putBack(p map[tallyKey]tallied) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failing = true
	for k, e := range p {
		cur, ok := t.pending[k]
		if !ok {
			t.pending[k] = e
			t.bytes += k.size()
			continue
		}
		cur.n += e.n
		cur.first = clock.Earlier(cur.first, e.first)
		cur.last = clock.Later(cur.last, e.last)
		t.pending[k] = cur
	}
}

func (t *tally) healthy() {
	t.mu.Lock()
	t.failing = false
	t.mu.Unlock()
}

func (t *tally) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
}
