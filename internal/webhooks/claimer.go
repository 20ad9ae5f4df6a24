package webhooks

import (
	"context"
	"errors"
	"math/rand/v2"
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
// the whole batch is durable when it returns), then one indexed SELECT
// tells each request whether its row won. A batch forms only from what is
// already waiting (no artificial delay), so a lone request pays one round
// trip more than a single-row insert (the SELECT) and a busy server pays
// two statements per batch instead of one per request: one-row-per-request
// designs are capped by the database at a few thousand rows/s on 2 cores.
type Claimer struct {
	DB       *sqlx.DB
	Workers  int // concurrent batches in flight
	MaxBatch int // rows
	MaxBytes int // payload bytes per batch (under max_allowed_packet)
	// Linger is how long a batch that is not full waits for more claims
	// after the queue ran dry (0: never wait).
	Linger time.Duration

	batches, rows atomic.Int64

	once sync.Once
	reqs chan *claimReq
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
		if c.MaxBatch <= 0 {
			c.MaxBatch = 128
		}
		if c.MaxBytes <= 0 {
			c.MaxBytes = 4 << 20
		}
		c.reqs = make(chan *claimReq, 4096)
		for i := 0; i < c.Workers; i++ {
			go c.loop()
		}
	})
}

// Claim stores d unless its (tenant, source, delivery id) exists; it
// returns whether d is new and, if not, our id of the original. When it
// returns without error the row is committed.
func (c *Claimer) Claim(ctx context.Context, d Delivery) (bool, string, error) {
	c.start()
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

func (c *Claimer) loop() {
	for first := range c.reqs {
		batch := []*claimReq{first}
		size := len(first.d.Payload)
	fill:
		for len(batch) < c.MaxBatch && size < c.MaxBytes {
			select {
			case r := <-c.reqs:
				batch = append(batch, r)
				size += len(r.d.Payload)
			default:
				break fill
			}
		}
		if c.Linger > 0 && len(batch) < c.MaxBatch {
			// Under load, waiting a fraction of a commit's latency for more
			// claims buys bigger batches: fewer statements per row.
			t := time.NewTimer(c.Linger)
		linger:
			for len(batch) < c.MaxBatch && size < c.MaxBytes {
				select {
				case r := <-c.reqs:
					batch = append(batch, r)
					size += len(r.d.Payload)
				case <-t.C:
					break linger
				}
			}
			t.Stop()
		}
		c.run(batch)
	}
}

// BatchStats reports how many batches and rows the claimer wrote.
func (c *Claimer) BatchStats() (batches, rows int64) { return c.batches.Load(), c.rows.Load() }

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
		// back; INSERT IGNORE is safe to repeat with the same ids.
		results, err = claimBatch(ctx, c.DB, batch)
		if err == nil || !db.Retryable(err) {
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

func claimBatch(ctx context.Context, x db.Ext, batch []*claimReq) ([]claimRes, error) {
	var sb strings.Builder
	args := make([]any, 0, len(batch)*7)
	sb.WriteString(`INSERT IGNORE INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at) VALUES `)
	for i, r := range batch {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?)")
		d := r.d
		args = append(args, d.TenantID, d.SourceID, d.ID, d.DeliveryID, d.Origin, d.Payload, d.ReceivedAt)
	}
	res, err := x.ExecContext(ctx, sb.String(), args...)
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
		q := `SELECT id, delivery_id FROM deliveries WHERE tenant_id = ? AND source_id = ? AND delivery_id IN (?` +
			strings.Repeat(", ?", len(g.ids)-1) + `)`
		rows, err := x.QueryxContext(ctx, q, append([]any{g.tenantID, g.sourceID}, g.ids...)...)
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
		n := len(dupArgs) / 5
		q := `INSERT INTO delivery_duplicates (tenant_id, id, source_id, delivery_row_id, received_at) VALUES (?, ?, ?, ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, ?)", n-1)
		if _, err := x.ExecContext(ctx, q, dupArgs...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var errVanished = errors.New("webhooks: claimed delivery row not found")
