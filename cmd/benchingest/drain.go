package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// drain measures the worker alone on a stored backlog: n deliveries are
// stored and their tasks queued with no worker running, then the worker
// starts (startWorker) and the drain is timed until every delivery is
// processed. The baseline, in the same run: raw autocommit single-row
// INSERT … ON DUPLICATE KEY UPDATE of the same records into the real leads
// table (all its indexes) from conns connections, for d.
type drain struct {
	raw                *sqlx.DB
	queue              webhooks.Enqueuer
	tenantID, sourceID string
	n, conns           int
	d                  time.Duration
	startWorker        func() error
	procs              []watched // child processes whose CPU counts (the worker's, the server's)
	// fill, when set, makes the backlog instead of storing rows directly:
	// -e2e sends n signed deliveries through the running server, whose
	// dispatcher queues their tasks as it does in production.
	fill func(ctx context.Context, n int) (time.Duration, error)
	// settle, when set, runs before the baseline and before the drain (see
	// settleMariaDB).
	settle func()
	// noBase skips the ODKU baseline (-assign-compare compares drains
	// with each other).
	noBase bool
}

// drainResult is what a drain measured.
type drainResult struct {
	odku          *phase
	stored, leads int
	took          time.Duration // first to last processed
	wall          time.Duration // from the worker's start
	cpu           string        // per lead, per process
	// work is MariaDB's server-wide counters per lead over the drain
	// (statements, handler calls, redo bytes): what the machine's speed
	// does not change, unlike the rate and the CPU.
	work string
	// shape is when half and 95 % of the leads were made, from the first:
	// a drain whose rate falls short from a slow tail (a batch that waited
	// or ran again) tells apart from one that is slower throughout.
	shape string
}

func (r drainResult) rate() float64 { return float64(r.stored) / r.took.Seconds() }

func (r drainResult) ratio(d time.Duration) float64 { return r.rate() / r.odku.rate(d.Seconds()) }

func (dr drain) run(ctx context.Context) (drainResult, error) {
	var out drainResult
	now := time.Now().UTC().Truncate(time.Microsecond)
	bodies := drainBodies(dr.n, now)
	// Baseline: the records as single-row upserts into leads, each a new
	// lead as in the drain, under a tenant of its own.
	base := &phase{name: "odku"}
	base.fn = func() error {
		seq := base.take()
		i := seq % dr.n
		_, err := dr.raw.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone,
				company, source_created_at, last_seen_at, times_seen, status, tags, version, created_at, updated_at, order_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, '', 'Bench', ?, ?, 1, 'new', '[]', 1, ?, ?, ?)
			ON DUPLICATE KEY UPDATE payload = VALUES(payload), email = VALUES(email), name = VALUES(name),
				company = VALUES(company), last_seen_at = VALUES(last_seen_at), times_seen = times_seen + 1, updated_at = VALUES(updated_at),
				order_key = VALUES(order_key)`,
			"T0000000000000000000000009", ids.New(), dr.sourceID, fmt.Sprintf("lead_%d_%d", i, seq/dr.n), bodies[i],
			fmt.Sprintf("d%d@example.com", i), fmt.Sprintf("Drain Lead %d", i), now, now, now, now, leads.OrderKey(now, ids.New()))
		return err
	}
	if dr.settle != nil {
		dr.settle()
	}
	if !dr.noBase {
		base.run(dr.conns, dr.d)
	}
	out.odku = base
	// The backlog: stored rows, tasks queued, no worker.
	if dr.fill != nil {
		took, err := dr.fill(ctx, dr.n)
		if err != nil {
			return out, err
		}
		fmt.Printf("backlog: %d deliveries sent through the server (worker stopped) in %s", dr.n, took.Round(time.Millisecond))
	} else if err := dr.store(ctx, bodies, now); err != nil {
		return out, err
	}
	var ids []string
	if err := dr.raw.SelectContext(ctx, &ids, `SELECT id FROM deliveries WHERE tenant_id = ? AND state = 'received'`, dr.tenantID); err != nil {
		return out, err
	}
	if dr.fill != nil {
		fmt.Printf(", %d stored\n", len(ids))
	}
	// Drain.
	if dr.settle != nil {
		dr.settle()
	}
	before := cpuSnapshot(dr.procs...)
	work0 := serverWork(ctx, dr.raw)
	start := time.Now()
	if err := dr.startWorker(); err != nil {
		return out, err
	}
	if err := waitProcessed(ctx, dr.raw, dr.tenantID, 10*time.Minute); err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	out.wall = time.Since(start)
	out.stored = len(ids)
	// The drain itself: from the first batch to the last, without the
	// worker's start-up.
	var first, last time.Time
	if err := dr.raw.QueryRowContext(ctx, `SELECT MIN(processed_at), MAX(processed_at) FROM deliveries WHERE tenant_id = ?`, dr.tenantID).Scan(&first, &last); err != nil {
		return out, err
	}
	out.took = max(last.Sub(first), time.Millisecond)
	var at []time.Time
	if err := dr.raw.SelectContext(ctx, &at, `SELECT processed_at FROM deliveries WHERE tenant_id = ? ORDER BY processed_at`, dr.tenantID); err == nil && len(at) > 0 {
		q := func(f float64) string {
			return fmt.Sprintf("%.2fs", at[int(f*float64(len(at)-1))].Sub(first).Seconds())
		}
		out.shape = fmt.Sprintf("half at %s, 95 %% at %s, all at %s", q(0.5), q(0.95), q(1))
	}
	out.cpu = cpuSnapshot(dr.procs...).since(before, int64(len(ids)))
	out.work = serverWork(ctx, dr.raw).per(work0, len(ids))
	if err := dr.raw.GetContext(ctx, &out.leads, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, dr.tenantID); err != nil {
		return out, err
	}
	return out, nil
}

// drainBodies are a drain's n deliveries, each a new lead.
func drainBodies(n int, now time.Time) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = kinds.SampleBody(kinds.Standard, fmt.Sprintf("dr_%d", i), fmt.Sprintf("lead_%d", i),
			kinds.Lead{Email: fmt.Sprintf("d%d@example.com", i), Name: fmt.Sprintf("Drain Lead %d", i), Company: "Bench"}, now)
	}
	return bodies
}

// store writes the backlog's rows directly and queues their processing
// through a Dispatcher fed one delivery at a time from 16 goroutines, as
// requests would.
func (dr drain) store(ctx context.Context, bodies [][]byte, now time.Time) error {
	rows := make([]string, 0, dr.n)
	for i := 0; i < dr.n; i += 500 {
		m := min(500, dr.n-i)
		q := `INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at) VALUES (?, ?, ?, ?, 'webhook', ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, 'webhook', ?, ?)", m-1)
		args := make([]any, 0, m*6)
		for j := i; j < i+m; j++ {
			id := ids.New()
			rows = append(rows, id)
			args = append(args, dr.tenantID, dr.sourceID, id, fmt.Sprintf("dr_%d", j), bodies[j], now)
		}
		if _, err := dr.raw.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	t0 := time.Now()
	d := &webhooks.Dispatcher{Queue: dr.queue, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Timeout: 5 * time.Second}
	work := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				d.Dispatch(dr.tenantID, []string{id})
			}
		}()
	}
	for _, id := range rows {
		work <- id
	}
	close(work)
	wg.Wait()
	d.Flush(ctx)
	fmt.Printf("backlog: %d deliveries stored, tasks queued in %s\n", len(rows), time.Since(t0).Round(time.Millisecond))
	return nil
}

// waitProcessed waits until no delivery of the tenant is left received.
func waitProcessed(ctx context.Context, raw *sqlx.DB, tenantID string, limit time.Duration) error {
	start := time.Now()
	for {
		// One index probe, not a count: a COUNT(*) of 20,000 received
		// rows every 50 ms took 10 ms of MariaDB each, a tenth of the
		// drain's database time spent by the measurement.
		var left []int
		if err := raw.SelectContext(ctx, &left, `SELECT 1 FROM deliveries WHERE tenant_id = ? AND state = 'received' LIMIT 1`, tenantID); err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if time.Since(start) > limit {
			return fmt.Errorf("deliveries still received after %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r drainResult) print(conns, conc int, d time.Duration) {
	fmt.Printf("(a) raw single-row ODKU into leads, %d connections: %.0f rows/s  p50 %s  p99 %s  CPU per row %s\n",
		conns, r.odku.rate(d.Seconds()), pct(r.odku.lat, 50), pct(r.odku.lat, 99), r.odku.cpuPer())
	fmt.Printf("(b) worker drain of %d stored deliveries (concurrency %d): %s from the first processed to the last (%s from the worker's start), %.0f leads/s (%d leads)  CPU per lead %s\n",
		r.stored, conc, r.took.Round(time.Millisecond), r.wall.Round(time.Millisecond), r.rate(), r.leads, r.cpu)
	fmt.Printf("drain ratio b/a = %.2f (target ≥ 0.80)\n", r.ratio(d))
}

// workCounters are MariaDB's global counters read by serverWork.
var workCounters = []string{"Questions", "Handler_write", "Handler_update", "Handler_delete", "Handler_read_key", "Handler_read_next", "Innodb_lsn_current"}

// work is a reading of workCounters.
type work []int64

func serverWork(ctx context.Context, raw *sqlx.DB) work {
	w := make(work, len(workCounters))
	for i, c := range workCounters {
		w[i] = innodbStatus(ctx, raw, c)
	}
	return w
}

// per formats the counters' growth since w0 per item (redo in bytes).
func (w work) per(w0 work, n int) string {
	if n <= 0 {
		return ""
	}
	names := []string{"statements", "writes", "updates", "deletes", "key reads", "next reads", "redo B"}
	var b strings.Builder
	for i := range w {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.2f", names[i], float64(w[i]-w0[i])/float64(n))
	}
	return b.String()
}
