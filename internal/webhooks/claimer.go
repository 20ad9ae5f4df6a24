package webhooks

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
)

// Claimer claims delivery ids with group commit: concurrent requests'
// claims are coalesced into one multi-row INSERT IGNORE (autocommit, so
// the whole batch is durable when it returns), then, only when some row
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

	batches, rows, runNanos, claimNanos atomic.Int64

	once  sync.Once
	reqs  chan *claimReq
	conns chan *claimConn // Workers slots; nil until first used

	qmu     sync.Mutex
	queries map[[2]int]string // statement text by (shape, rows)
}

type claimReq struct {
	d    Delivery
	done chan claimRes
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
		c.reqs = make(chan *claimReq, 4096)
		c.conns = make(chan *claimConn, c.Workers)
		for i := 0; i < c.Workers; i++ {
			c.conns <- nil
		}
		c.queries = map[[2]int]string{}
		go c.loop()
	})
}

// Claim stores d unless its (tenant, source, delivery id) exists; it
// returns whether d is new and, if not, our id of the original. When it
// returns without error the row is committed.
func (c *Claimer) Claim(ctx context.Context, d Delivery) (bool, string, error) {
	c.start()
	t0 := time.Now()
	defer func() { c.claimNanos.Add(int64(time.Since(t0))) }()
	r := &claimReq{d: d, done: make(chan claimRes, 1)}
	select {
	case c.reqs <- r:
	case <-ctx.Done():
		return false, "", ctx.Err()
	}
	// Once queued the claim completes regardless of ctx: the sender gets
	// a truthful answer or a 5xx, never a silent half.
	res := <-r.done
	return res.isNew, res.originalID, res.err
}

// loop gathers claims into batches and starts them (see Claimer).
func (c *Claimer) loop() {
	done := make(chan time.Time, c.Workers) // a finished batch's start time
	var inflight []time.Time                // start times of batches in flight
	var batch []*claimReq
	size := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	add := func(r *claimReq) {
		batch = append(batch, r)
		size += len(r.d.Payload)
	}
	full := func() bool { return len(batch) >= c.MaxBatch || size >= c.MaxBytes }
	finished := func(started time.Time) {
		for i, t := range inflight {
			if t.Equal(started) {
				inflight = append(inflight[:i], inflight[i+1:]...)
				break
			}
		}
	}
	for {
		if len(batch) == 0 {
			select {
			case r := <-c.reqs:
				add(r)
			case t := <-done:
				finished(t)
				continue
			}
		}
	fill:
		for !full() {
			select {
			case r := <-c.reqs:
				add(r)
			default:
				break fill
			}
		}
		startNow, wait := false, time.Duration(0)
		switch {
		case len(inflight) == 0:
			startNow = true
		case len(inflight) >= c.Workers: // until one finishes
		default:
			wait = c.Stagger - time.Since(slices.MinFunc(inflight, time.Time.Compare))
			startNow = wait <= 0
		}
		if startNow {
			b, started := batch, time.Now()
			batch, size = nil, 0
			inflight = append(inflight, started)
			go func() {
				c.run(b)
				c.runNanos.Add(int64(time.Since(started)))
				done <- started
			}()
			continue
		}
		// Gather more until a batch finishes or the stagger has passed.
		reqs := c.reqs
		if full() {
			reqs = nil
		}
		var tick <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case t := <-done:
			finished(t)
		case r := <-reqs:
			add(r)
		case <-tick:
		}
		timer.Stop()
	}
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
	var results []claimRes
	var err error
	for attempt := 0; attempt < 6; attempt++ {
		// A deadlock (1213) or lock wait timeout rolls the whole statement
		// back, and a broken connection leaves it unknown; INSERT IGNORE is
		// safe to repeat with the same ids (a row this batch did write is
		// then found by its id).
		results, err = c.claimBatch(ctx, batch)
		if err == nil || ctx.Err() != nil || errors.Is(err, errVanished) || (serverError(err) && !db.Retryable(err)) {
			break
		}
		time.Sleep(time.Duration(rand.Int64N(int64(2*time.Millisecond) << attempt)))
	}
	for i, r := range batch {
		if err != nil {
			r.done <- claimRes{err: err}
			continue
		}
		r.done <- results[i]
	}
}

// Statement shapes the claimer prepares.
const (
	shapeInsert = iota
	shapeSelect
	shapeDuplicates
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
	case shapeInsert:
		q = `INSERT IGNORE INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, ?, ?, ?)", n-1)
	case shapeSelect:
		q = `SELECT id, delivery_id FROM deliveries WHERE tenant_id = ? AND source_id = ? AND delivery_id IN (?` +
			strings.Repeat(", ?", n-1) + `)`
	case shapeDuplicates:
		q = `INSERT INTO delivery_duplicates (tenant_id, id, source_id, delivery_row_id, received_at) VALUES (?, ?, ?, ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, ?)", n-1)
	}
	c.queries[[2]int{shape, n}] = q
	return q
}

// claimBatch runs one batch on one of the claimer's connections.
func (c *Claimer) claimBatch(ctx context.Context, batch []*claimReq) ([]claimRes, error) {
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
	res, err := c.claimOn(ctx, cc, batch)
	if err != nil && !serverError(err) {
		cc.close()
		cc = nil
	}
	return res, err
}

func (c *Claimer) claimOn(ctx context.Context, cc *claimConn, batch []*claimReq) ([]claimRes, error) {
	args := make([]any, 0, len(batch)*7)
	for _, r := range batch {
		d := r.d
		args = append(args, d.TenantID, d.SourceID, d.ID, d.DeliveryID, d.Origin, d.Payload, d.ReceivedAt)
	}
	res, err := cc.exec(ctx, c.query(shapeInsert, len(batch)), args...)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err == nil && int(n) == len(batch) {
		// Every row was inserted: all are new, no lookup needed (the
		// common case: duplicates are the exception).
		return claimResults(make([]claimRes, len(batch))).allNew(), nil
	}
	// Which row holds each key now? Grouped by (tenant, source) so every
	// lookup is an IN list on the unique key's last column.
	type group struct {
		tenantID, sourceID string
		ids                []any
	}
	groups := map[[2]string]*group{}
	for _, r := range batch {
		k := [2]string{r.d.TenantID, r.d.SourceID}
		g := groups[k]
		if g == nil {
			g = &group{tenantID: r.d.TenantID, sourceID: r.d.SourceID}
			groups[k] = g
		}
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
	out := make([]claimRes, len(batch))
	var dupArgs []any
	for i, r := range batch {
		id, ok := owner[[3]string{r.d.TenantID, r.d.SourceID, r.d.DeliveryID}]
		switch {
		case !ok:
			return nil, errVanished
		case id == r.d.ID:
			out[i] = claimRes{isNew: true}
		default:
			out[i] = claimRes{originalID: id}
			dupArgs = append(dupArgs, r.d.TenantID, db.NewID(), r.d.SourceID, id, r.d.ReceivedAt)
		}
	}
	if len(dupArgs) > 0 {
		if _, err := cc.exec(ctx, c.query(shapeDuplicates, len(dupArgs)/5), dupArgs...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var errVanished = errors.New("webhooks: claimed delivery row not found")
