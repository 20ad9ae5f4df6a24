package monitor

import (
	"cmp"
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/batch"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Counter indexes into a counts array, in column order.
const (
	iDeliveries = iota
	iDuplicates
	iRejected
	iDeadLetters
	iReconcileNew
	iReconcileKnown
	iProcessingFailures
	iBackfill
	numCounters
)

var counterNames = [numCounters]string{Deliveries, Duplicates, Rejected, DeadLetters, ReconcileNew, ReconcileKnown, ProcessingFailures, Backfill}

// statColumns lists the counter columns of the statistics tables, in
// counter order ("deliveries, duplicates, …").
var statColumns = strings.Join(counterNames[:], ", ")

func counterIndex(name string) int {
	switch name {
	case Deliveries:
		return iDeliveries
	case Duplicates:
		return iDuplicates
	case Rejected:
		return iRejected
	case DeadLetters:
		return iDeadLetters
	case ReconcileNew:
		return iReconcileNew
	case ReconcileKnown:
		return iReconcileKnown
	case ProcessingFailures:
		return iProcessingFailures
	case Backfill:
		return iBackfill
	}
	return -1
}

type counts [numCounters]int64

func (c *counts) add(o *counts) {
	for i := range c {
		c[i] += o[i]
	}
}

// minuteKey names one row of the per-minute table.
type minuteKey struct {
	tenant, source string
	minute         int64 // unix seconds / 60
}

// seriesKey names one Prometheus series family member (tenant, source).
type seriesKey struct{ tenant, source string }

const numShards = 16

// shard is one lock stripe; the padding keeps neighbouring mutexes off one
// cache line.
type shard struct {
	mu sync.Mutex
	m  map[minuteKey]*counts
	_  [40]byte
}

// Recorder is the production Sink. Add only touches one of numShards
// in-memory maps (picked at random, so even a single hot source spreads
// over every stripe); a background loop flushes the sums every Interval
// with one multi-row additive upsert per table. No request ever waits on
// the database for counting, and no row is updated per request.
type Recorder struct {
	DB       *sqlx.DB
	Log      *slog.Logger
	Now      func() time.Time
	Interval time.Duration // flush period, default 2 s
	// MaxPendingKeys caps memory while the database is unreachable: beyond
	// it the oldest minutes are dropped (and counted in
	// leadpipe_monitor_dropped_total).
	MaxPendingKeys int

	ingest *ingestMetrics

	shards [numShards]shard

	flushMu sync.Mutex // one flush at a time per process

	pendMu  sync.Mutex
	pending map[minuteKey]*counts // taken from the shards, not yet written
	totals  map[seriesKey]*counts // cumulative since start, for /metrics

	flushErrors atomic.Int64
	dropped     atomic.Int64
	lastErrLog  time.Time

	loop batch.Flusher
}

var _ Sink = (*Recorder)(nil)

// NewRecorder returns a Recorder writing to d. Call Start to flush in the
// background and Close to stop (with a final flush).
func NewRecorder(d *sqlx.DB, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{DB: d, Log: log, Now: time.Now, Interval: 2 * time.Second, MaxPendingKeys: 200_000,
		ingest:  newIngestMetrics(),
		pending: map[minuteKey]*counts{}, totals: map[seriesKey]*counts{}}
	for i := range r.shards {
		r.shards[i].m = map[minuteKey]*counts{}
	}
	return r
}

// Add counts n events of counter for a source in the minute of at.
// Unknown counters and malformed ids are ignored: a counting bug must
// never fail an ingest request, nor poison every later flush with a row
// MySQL refuses.
func (r *Recorder) Add(tenantID, sourceID, counter string, n int64, at time.Time) {
	i := counterIndex(counter)
	if i < 0 || n <= 0 || !ids.Valid(tenantID) || !ids.Valid(sourceID) {
		return
	}
	if at.IsZero() {
		at = r.Now()
	}
	k := minuteKey{tenantID, sourceID, floorDiv(at.Unix(), 60)}
	s := &r.shards[rand.Uint32()%numShards]
	s.mu.Lock()
	c := s.m[k]
	if c == nil {
		c = new(counts)
		s.m[k] = c
	}
	c[i] += n
	s.mu.Unlock()
}

// ObserveIngest records one webhook request's handling time.
func (r *Recorder) ObserveIngest(kind, result string, d time.Duration) {
	r.ingest.observe(kind, result, d)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// drainLocked moves every shard's sums into pending and totals. pendMu
// must be held.
func (r *Recorder) drainLocked() {
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		if len(s.m) == 0 {
			s.mu.Unlock()
			continue
		}
		m := s.m
		s.m = make(map[minuteKey]*counts, len(m))
		s.mu.Unlock()
		for k, c := range m {
			if p := r.pending[k]; p != nil {
				p.add(c)
			} else {
				r.pending[k] = c
			}
			sk := seriesKey{k.tenant, k.source}
			t := r.totals[sk]
			if t == nil {
				t = new(counts)
				r.totals[sk] = t
			}
			t.add(c)
		}
	}
}

// Flush writes everything counted so far. On failure the increments stay
// in memory and the next flush retries them.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()

	r.pendMu.Lock()
	r.drainLocked()
	batch := r.pending
	r.pending = map[minuteKey]*counts{}
	r.pendMu.Unlock()
	if len(batch) == 0 {
		return nil
	}

	err := writeStats(ctx, r.DB, batch)
	if err == nil {
		return nil
	}
	r.flushErrors.Add(1)
	r.pendMu.Lock()
	for k, c := range batch { // put back, merged with what arrived meanwhile
		if p := r.pending[k]; p != nil {
			p.add(c)
		} else {
			r.pending[k] = c
		}
	}
	r.capPendingLocked()
	r.pendMu.Unlock()
	return err
}

// capPendingLocked drops the oldest minutes beyond MaxPendingKeys.
func (r *Recorder) capPendingLocked() {
	over := len(r.pending) - r.MaxPendingKeys
	if r.MaxPendingKeys <= 0 || over <= 0 {
		return
	}
	keys := make([]minuteKey, 0, len(r.pending))
	for k := range r.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b minuteKey) int { return cmp.Compare(a.minute, b.minute) })
	var lost int64
	for _, k := range keys[:over] {
		for _, n := range r.pending[k] {
			lost += n
		}
		delete(r.pending, k)
	}
	r.dropped.Add(lost)
	r.Log.Error("monitor: dropped unflushed counters (database unreachable for too long)", "keys", over, "events", lost)
}

// Pending reports how many (tenant, source, minute) rows wait to be
// written (tests, /metrics).
func (r *Recorder) Pending() int {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	r.drainLocked()
	return len(r.pending)
}

// snapshotTotals returns cumulative sums per (tenant, source) including
// everything added so far.
func (r *Recorder) snapshotTotals() (map[seriesKey]counts, int) {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	r.drainLocked()
	out := make(map[seriesKey]counts, len(r.totals))
	for k, c := range r.totals {
		out[k] = *c
	}
	return out, len(r.pending)
}

// Start runs the flush loop until Close.
func (r *Recorder) Start() {
	r.loop.Start(r.Interval, r.Flush, func(err error) {
		// Called from the loop's one goroutine only.
		if time.Since(r.lastErrLog) > time.Minute {
			r.lastErrLog = time.Now()
			r.Log.Warn("monitor: flushing counters failed; kept in memory and retried", "err", err, "pending", r.Pending())
		}
	})
}

// Close stops the flush loop (if started) and flushes once more.
func (r *Recorder) Close(ctx context.Context) error {
	r.loop.Stop()
	return r.Flush(ctx)
}

// flushBatchRows bounds one statement (9 placeholders a row, far below
// MySQL's 65,535).
const flushBatchRows = 1000

type statRow struct {
	tenant, source string
	bucket         int64 // unix seconds
	c              counts
}

// rollup aggregates minute sums into buckets of gran seconds.
func rollup(batch map[minuteKey]*counts, gran int64) []statRow {
	m := make(map[minuteKey]*counts, len(batch))
	for k, c := range batch {
		b := minuteKey{k.tenant, k.source, floorDiv(k.minute*60, gran) * gran}
		if p := m[b]; p != nil {
			p.add(c)
		} else {
			cc := *c
			m[b] = &cc
		}
	}
	rows := make([]statRow, 0, len(m))
	for k, c := range m {
		rows = append(rows, statRow{k.tenant, k.source, k.minute, *c})
	}
	// A fixed order makes concurrent flushers lock rows in the same order
	// (fewer deadlocks; InTx retries the rest).
	slices.SortFunc(rows, func(a, b statRow) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.source, b.source), cmp.Compare(a.bucket, b.bucket))
	})
	return rows
}

// writeStats adds batch to the minute, hour and day tables in one
// transaction, so a retry after a failure never counts anything twice.
func writeStats(ctx context.Context, d *sqlx.DB, batch map[minuteKey]*counts) error {
	tables := []struct {
		name string
		rows []statRow
	}{
		{tableMinute, rollup(batch, 60)},
		{tableHour, rollup(batch, 3600)},
		{tableDay, rollup(batch, 86400)},
	}
	return db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		for _, t := range tables {
			for i := 0; i < len(t.rows); i += flushBatchRows {
				if err := upsertStats(ctx, tx, t.name, t.rows[i:min(i+flushBatchRows, len(t.rows))]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func upsertStats(ctx context.Context, x db.Ext, table string, rows []statRow) error {
	var q strings.Builder
	q.Grow(200 + len(rows)*24)
	q.WriteString("INSERT INTO ")
	q.WriteString(table)
	q.WriteString(" (tenant_id, source_id, bucket, ")
	q.WriteString(statColumns)
	q.WriteString(") VALUES ")
	row := "(?,?,?" + strings.Repeat(",?", numCounters) + ")"
	args := make([]any, 0, len(rows)*(3+numCounters))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(row)
		args = append(args, r.tenant, r.source, time.Unix(r.bucket, 0).UTC())
		for _, v := range r.c {
			args = append(args, v)
		}
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE ")
	for i, c := range counterNames {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(c + " = " + c + " + VALUES(" + c + ")")
	}
	_, err := x.ExecContext(ctx, q.String(), args...)
	return err
}
