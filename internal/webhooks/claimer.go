package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/batch"
	"leadpipe/internal/db"
)

// Claimer claims delivery ids with group commit: concurrent requests'
// claims are coalesced into one multi-row INSERT … ON DUPLICATE KEY UPDATE
// that counts a duplicate on its original (autocommit, so the whole batch
// is durable when it returns; strict mode refuses what INSERT IGNORE would
// truncate), then, only when some row
// was a duplicate, one indexed SELECT tells each request whether its row
// won. One-row-per-request designs are capped by the database at a few
// thousand rows/s on 2 cores; here a busy server pays one statement per
// batch.
//
// Batches form from what is waiting, never from an artificial delay: a
// lone claim goes out at once. While a batch is in flight the next one
// gathers; a second batch starts beside the first only when the first has
// been running for Stagger (a slow commit, a lock wait), so batches are as
// large as the load makes them and one stuck statement does not stop
// ingest.
type Claimer struct {
	DB       *sqlx.DB
	Workers  int           // batches in flight at most (default 2)
	Stagger  time.Duration // how long a batch runs before another may start beside it (default 2 ms)
	MaxBatch int           // rows
	MaxBytes int           // payload bytes per batch (under max_allowed_packet)
	// Memory bounds the duplicate fast path (dupfast.go) in bytes:
	// 0 is DefaultDuplicateMemory, negative turns it off (every duplicate
	// is claimed in the database).
	Memory int64
	// FlushEvery is how often the fast path's duplicate counts are
	// written (default DuplicateHold, 5 s, sooner when the tally is full:
	// the count reaches its original within it, times_seen half a second
	// later).
	FlushEvery time.Duration
	Log        *slog.Logger

	batches, rows, runNanos, claimNanos atomic.Int64

	once  sync.Once
	loop  *batch.Loop[*claimReq]
	conns chan *claimConn // Workers slots; nil until first used

	qmu     sync.Mutex
	queries map[[2]int]string // statement text by (shape, rows)

	// known remembers which row holds each delivery id this process
	// claimed (or found) recently: a duplicate it knows is answered from
	// memory (tally) or, failing that, counted through the primary key,
	// with no payload and no lookup afterwards.
	known   knownIDs
	tally   tally
	fold    *DupFolder // FlushDuplicates' and Shutdown's fold of the log
	flushMu sync.Mutex // one tally flush at a time
	flushes batch.Flusher

	// OnDuplicates, when set, is told after each committed batch which
	// original deliveries got duplicates (each listed once), e.g. to bring
	// leads.times_seen up to date. It must not block.
	OnDuplicates func(originals []DeliveryRef)
}

// DeliveryRef names one stored delivery.
type DeliveryRef struct{ TenantID, ID string }

type claimReq struct {
	d     Delivery
	known string // the original's row id when this process knows it (a duplicate)
	done  chan claimRes
}

type claimRes struct {
	isNew      bool
	originalID string
	err        error
}

type claimResults []claimRes

func (r claimResults) allNew() []claimRes {
	for i := range r {
		r[i].isNew = true
	}
	return r
}

func (c *Claimer) start() {
	c.once.Do(func() {
		if c.Workers <= 0 {
			c.Workers = 2
		}
		if c.Stagger <= 0 {
			c.Stagger = 2 * time.Millisecond
		}
		if c.MaxBatch <= 0 {
			c.MaxBatch = 128
		}
		if c.MaxBytes <= 0 {
			c.MaxBytes = 4 << 20
		}
		c.conns = make(chan *claimConn, c.Workers)
		for i := 0; i < c.Workers; i++ {
			c.conns <- nil
		}
		c.queries = map[[2]int]string{}
		if c.Memory == 0 {
			c.Memory = DefaultDuplicateMemory
		}
		if c.FlushEvery <= 0 {
			c.FlushEvery = DuplicateHold
		}
		c.fold = &DupFolder{DB: c.DB, OnDuplicates: c.OnDuplicates, Log: c.Log}
		c.known.init(max(c.Memory, 0) / 8 * 7)
		c.tally.init(max(c.Memory, 0) / 8)
		// Batches form from what is waiting (no linger); a second starts
		// beside the first after Stagger.
		c.loop = batch.New(batch.Options{MaxItems: c.MaxBatch, MaxBytes: c.MaxBytes, Workers: c.Workers, Beside: c.Stagger, Buffer: 4096},
			func(r *claimReq) int { return len(r.d.Payload) }, c.runTimed)
		c.flushes.Start(c.FlushEvery, c.flushTally, func(err error) {
			if c.Log != nil {
				c.Log.Warn("writing duplicate counts failed; duplicates take the claim until it works", "err", err)
			}
		})
	})
}

// Claim stores d unless its (tenant, source, delivery id) exists; it
// returns whether d is new and, if not, our id of the original, whose
// duplicate count (with first and last arrival) it then raised. When it
// returns without error the row or the count is committed. A duplicate of
// a delivery this process has seen recently may come without its payload
// (see Known).
func (c *Claimer) Claim(ctx context.Context, d Delivery) (bool, string, error) {
	c.start()
	t0 := time.Now()
	defer func() { c.claimNanos.Add(int64(time.Since(t0))) }()
	r := &claimReq{d: d, done: make(chan claimRes, 1)}
	r.known, _ = c.known.get(d.TenantID, d.SourceID, d.DeliveryID)
	if err := c.loop.Add(ctx, r); err != nil {
		return false, "", err
	}
	// Once queued the claim completes regardless of ctx: the sender gets
	// a truthful answer or a 5xx, never a silent half.
	res := <-r.done
	return res.isNew, res.originalID, res.err
}

// Known returns our row id of a delivery id this process claimed or found
// recently: the request is then a duplicate, and its payload is not needed.
func (c *Claimer) Known(tenantID, sourceID, deliveryID string) (string, bool) {
	c.start()
	return c.known.get(tenantID, sourceID, deliveryID)
}

// runTimed runs one batch and adds its time to the stats.
func (c *Claimer) runTimed(b []*claimReq) {
	started := time.Now()
	c.run(b)
	c.runNanos.Add(int64(time.Since(started)))
}

// ClaimStats is what the claimer has done so far.
type ClaimStats struct {
	Batches, Rows int64
	BatchTime     time.Duration // summed over batches: start to results
	ClaimTime     time.Duration // summed over claims: Claim call to return
}

// Stats reports how many batches and rows the claimer wrote, and the time
// they took.
func (c *Claimer) Stats() ClaimStats {
	return ClaimStats{Batches: c.batches.Load(), Rows: c.rows.Load(),
		BatchTime: time.Duration(c.runNanos.Load()), ClaimTime: time.Duration(c.claimNanos.Load())}
}

func (c *Claimer) run(batch []*claimReq) {
	c.batches.Add(1)
	c.rows.Add(int64(len(batch)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Rows in key order: two batches then take their locks in the same
	// order, which keeps overlapping batches from deadlocking each other.
	sort.SliceStable(batch, func(i, j int) bool {
		a, b := batch[i].d, batch[j].d
		if a.TenantID != b.TenantID {
			return a.TenantID < b.TenantID
		}
		if a.SourceID != b.SourceID {
			return a.SourceID < b.SourceID
		}
		return a.DeliveryID < b.DeliveryID
	})
	results, err := c.claimRetrying(ctx, batch)
	if err != nil && len(batch) > 1 && rowError(err) {
		// One row the server refuses (a value it will not store) must not
		// fail the requests beside it: each row alone, each its own answer.
		results, err = make([]claimRes, len(batch)), nil
		for i := range batch {
			res, rerr := c.claimRetrying(ctx, batch[i:i+1])
			if rerr != nil {
				results[i] = claimRes{err: rowRefused(rerr)}
				continue
			}
			results[i] = res[0]
		}
	}
	var dups []DeliveryRef
	for i, r := range batch {
		if err != nil {
			r.done <- claimRes{err: rowRefused(err)}
			continue
		}
		res := results[i]
		if res.err == nil {
			if res.isNew {
				c.known.put(r.d.TenantID, r.d.SourceID, r.d.DeliveryID, r.d.ID)
			} else {
				c.known.put(r.d.TenantID, r.d.SourceID, r.d.DeliveryID, res.originalID)
				if len(dups) == 0 || dups[len(dups)-1] != (DeliveryRef{r.d.TenantID, res.originalID}) {
					dups = append(dups, DeliveryRef{r.d.TenantID, res.originalID})
				}
			}
		}
		r.done <- res
	}
	if len(dups) > 0 && c.OnDuplicates != nil {
		c.OnDuplicates(dups)
	}
}

// claimRetrying runs claimBatch, repeating it after a deadlock, a lock
// wait timeout or a broken connection.
func (c *Claimer) claimRetrying(ctx context.Context, batch []*claimReq) ([]claimRes, error) {
	var results []claimRes
	var err error
	unsure := false // a previous attempt may have committed
	for attempt := 0; attempt < 6; attempt++ {
		// A deadlock (1213) or lock wait timeout rolls the whole statement
		// back; a broken connection leaves it unknown, so the next attempt
		// first looks whether our rows are there (see claimOn).
		results, err = c.claimBatch(ctx, batch, unsure)
		if err == nil || ctx.Err() != nil || errors.Is(err, errVanished) || (serverError(err) && !db.Retryable(err)) {
			break
		}
		if !serverError(err) {
			unsure = true
		}
		time.Sleep(time.Duration(rand.Int64N(int64(2*time.Millisecond) << attempt)))
	}
	return results, err
}

// rowError reports a server error caused by a value in some row (too long,
// not a valid string for the column, out of range, invalid JSON), as
// opposed to the connection or the server as a whole.
func rowError(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1048, 1264, 1265, 1292, 1366, 1406, 3140, 4025:
		return true
	}
	return false
}

// rowRefused wraps the error of a delivery the database would not store,
// so the ingest answers that sender 422 and the others as usual.
func rowRefused(err error) error {
	if rowError(err) {
		return apperr.Wrap(apperr.Invalid, err, "the database refused to store this delivery (a value it cannot hold); it was not stored")
	}
	return err
}

// Statement shapes the claimer prepares.
const (
	shapeClaim = iota
	shapeSelect
)

// query returns the text of a statement shape for n rows, built once.
func (c *Claimer) query(shape, n int) string {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if q, ok := c.queries[[2]int{shape, n}]; ok {
		return q
	}
	var q string
	switch shape {
	case shapeClaim:
		// A new delivery id inserts its row; a known one (the unique key,
		// or the primary key when the row id is known) adds to the
		// original's duplicate count. Not INSERT IGNORE: that would store a
		// value MariaDB cannot hold cut or mangled instead of refusing it.
		q = `INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at, state, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1) +
			` ON DUPLICATE KEY UPDATE dup_count = dup_count + 1, ` + spareForFirstDuplicate + `,
				dup_first_at = IFNULL(dup_first_at, VALUES(received_at)),
				dup_last_at = GREATEST(IFNULL(dup_last_at, VALUES(received_at)), VALUES(received_at))`
	case shapeSelect:
		q = `SELECT id, delivery_id FROM deliveries WHERE tenant_id = ? AND source_id = ? AND delivery_id IN (?` +
			strings.Repeat(", ?", n-1) + `)`
	}
	c.queries[[2]int{shape, n}] = q
	return q
}

// claimBatch runs one batch on one of the claimer's connections.
func (c *Claimer) claimBatch(ctx context.Context, batch []*claimReq, unsure bool) ([]claimRes, error) {
	cc := <-c.conns
	defer func() { c.conns <- cc }()
	if cc != nil && time.Since(cc.opened) > claimConnMaxAge {
		cc.close()
		cc = nil
	}
	if cc == nil {
		var err error
		if cc, err = openClaimConn(ctx, c.DB.DB); err != nil {
			return nil, err
		}
	}
	res, err := c.claimOn(ctx, cc, batch, unsure)
	if err != nil && !serverError(err) {
		cc.close()
		cc = nil
	}
	return res, err
}

// vanishedOriginal is stored, failed, in the place of a duplicate whose
// original this process remembered but which is gone (its tenant was
// deleted): never in practice, and harmless if it happens.
const vanishedOriginal = "the original of a duplicate was gone when the duplicate arrived"

func (c *Claimer) claimOn(ctx context.Context, cc *claimConn, batch []*claimReq, unsure bool) ([]claimRes, error) {
	if unsure {
		// A previous attempt's fate is unknown. If any of our own new rows
		// is there, that statement committed (it is atomic): only the
		// answers are missing.
		owner, err := c.owners(ctx, cc, batch)
		if err != nil {
			return nil, err
		}
		for _, r := range batch {
			if r.known == "" && owner[[3]string{r.d.TenantID, r.d.SourceID, r.d.DeliveryID}] == r.d.ID {
				return c.resolve(batch, owner)
			}
		}
	}
	args := make([]any, 0, len(batch)*9)
	known := 0
	for _, r := range batch {
		d := r.d
		if r.known != "" {
			known++
			args = append(args, d.TenantID, d.SourceID, r.known, d.DeliveryID, d.Origin, []byte{}, d.ReceivedAt, "failed", vanishedOriginal)
			continue
		}
		// A delivery stored on hold (a web form whose captcha could not be
		// checked: docs/FORMS.md) is kept `failed` with its reason, to be
		// reprocessed by an admin; every other one is `received`.
		state, lastErr := "received", any(nil)
		if d.State == "failed" && d.LastError != nil {
			state, lastErr = "failed", *d.LastError
		}
		args = append(args, d.TenantID, d.SourceID, d.ID, d.DeliveryID, d.Origin, d.Payload, d.ReceivedAt, state, lastErr)
	}
	res, err := cc.exec(ctx, c.query(shapeClaim, len(batch)), args...)
	if err != nil {
		return nil, err
	}
	// Each inserted row counts 1, each counted duplicate 2.
	if n, err := res.RowsAffected(); err == nil && int(n)-len(batch) == known {
		out := make([]claimRes, len(batch))
		for i, r := range batch {
			if r.known != "" {
				out[i] = claimRes{originalID: r.known}
			} else {
				out[i] = claimRes{isNew: true}
			}
		}
		return out, nil
	}
	// Some delivery ids this process did not know were duplicates: which
	// row holds each key now?
	owner, err := c.owners(ctx, cc, batch)
	if err != nil {
		return nil, err
	}
	return c.resolve(batch, owner)
}

// owners looks up the row holding each unknown key of the batch, grouped
// by (tenant, source) so every lookup is an IN list on the unique key's
// last column.
func (c *Claimer) owners(ctx context.Context, cc *claimConn, batch []*claimReq) (map[[3]string]string, error) {
	type group struct {
		tenantID, sourceID string
		ids                []any
	}
	var groups []*group
	for _, r := range batch {
		if r.known != "" {
			continue
		}
		if n := len(groups); n == 0 || groups[n-1].tenantID != r.d.TenantID || groups[n-1].sourceID != r.d.SourceID {
			groups = append(groups, &group{tenantID: r.d.TenantID, sourceID: r.d.SourceID})
		}
		g := groups[len(groups)-1]
		g.ids = append(g.ids, r.d.DeliveryID)
	}
	owner := map[[3]string]string{}
	for _, g := range groups {
		rows, err := cc.query(ctx, c.query(shapeSelect, len(g.ids)), append([]any{g.tenantID, g.sourceID}, g.ids...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, did string
			if err := rows.Scan(&id, &did); err != nil {
				rows.Close()
				return nil, err
			}
			owner[[3]string{g.tenantID, g.sourceID, did}] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return owner, nil
}

func (c *Claimer) resolve(batch []*claimReq, owner map[[3]string]string) ([]claimRes, error) {
	out := make([]claimRes, len(batch))
	for i, r := range batch {
		if r.known != "" {
			out[i] = claimRes{originalID: r.known}
			continue
		}
		id, ok := owner[[3]string{r.d.TenantID, r.d.SourceID, r.d.DeliveryID}]
		switch {
		case !ok:
			return nil, errVanished
		case id == r.d.ID:
			out[i] = claimRes{isNew: true}
		default:
			out[i] = claimRes{originalID: id}
		}
	}
	return out, nil
}

var errVanished = errors.New("webhooks: claimed delivery row not found")
