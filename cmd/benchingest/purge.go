package main

// -purge N: ingest while the retention purge removes N payloads, against
// ingest without it, in one run (target ≥ 0.9×; docs/BENCHMARKS.md, "Retention purge").
//
// N processed deliveries with payloads, received 200 days ago, are seeded
// into the bench tenant (the one the webhooks go to, so the purge walks the
// same table and the same tenant's primary key range as the claims). Then
// phase (b) runs in alternating rounds: once as in the default mode, once
// while the retention service's PurgeTenant (the scheduled purge's own
// code, with its production batch and pause) runs beside it. The purge is
// stopped at the end of each purge round and resumes from its cursor in
// the next, until it has removed all N; the run then ends with one more
// pair of rounds when asked for (-rounds is the minimum).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/retention"
)

type purgeBench struct {
	raw                *sqlx.DB
	svc                *retention.Service
	tenantID, sourceID string
	n                  int
	payload            []byte
	conns              int
	slice              time.Duration
	rounds             int
	plain, purging     *phase // (b) without and with the purge
	maxRounds          int
}

// seed inserts the old processed deliveries in chunks of one INSERT …
// SELECT from MariaDB's sequence engine each. Their ids start with "00"
// (a ULID time near 1970), below every id made now, as old rows' are.
func (pb *purgeBench) seed(ctx context.Context) error {
	const chunk = 50000
	t0 := time.Now()
	old := time.Now().UTC().Add(-200 * 24 * time.Hour)
	for from := 1; from <= pb.n; from += chunk {
		to := min(from+chunk-1, pb.n)
		q := fmt.Sprintf(`INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at, processed_at, state, attempts)
			SELECT ?, ?, CONCAT('00', LPAD(seq, 24, '0')), CONCAT('old_', seq), 'webhook', ?, ?, ?, 'processed', 1
			FROM seq_%d_to_%d`, from, to)
		if _, err := pb.raw.ExecContext(ctx, q, pb.tenantID, pb.sourceID, pb.payload, old, old); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	fmt.Printf("seeded %d processed deliveries of %d payload bytes, received 200 days ago, in %s\n",
		pb.n, len(pb.payload), time.Since(t0).Round(time.Second))
	return nil
}

func (pb *purgeBench) left(ctx context.Context) (int, error) {
	var n int
	err := pb.raw.GetContext(ctx, &n, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND id < '01' AND LENGTH(payload) > 0`, pb.tenantID)
	return n, err
}

func (pb *purgeBench) run(ctx context.Context, runPhase func(*phase) error) error {
	if err := pb.seed(ctx); err != nil {
		return err
	}
	var removed atomic.Int64
	var purgeTime time.Duration
	var batches int
	done := false
	r := 0
	for ; r < pb.maxRounds && (!done || r < pb.rounds); r++ {
		if err := runPhase(pb.plain); err != nil {
			return err
		}
		// The purge beside the second phase of the round.
		pctx, stop := context.WithCancel(ctx)
		finished := make(chan error, 1)
		t0 := time.Now()
		go func() {
			rep, err := pb.svc.PurgeTenant(pctx, pb.tenantID)
			removed.Add(rep.PayloadsRemoved)
			batches += rep.Batches
			finished <- err
		}()
		err := runPhase(pb.purging)
		stop()
		perr := <-finished
		purgeTime += time.Since(t0)
		if err != nil {
			return err
		}
		if perr != nil && !errors.Is(perr, context.Canceled) {
			return fmt.Errorf("purge: %w", perr)
		}
		if perr == nil {
			// It finished inside the round: nothing older is left.
			left, err := pb.left(ctx)
			if err != nil {
				return err
			}
			done = left == 0
		}
		fmt.Printf("round %d: (b) %.0f req/s, with the purge %.0f req/s (%.2f); payloads removed so far %d\n",
			r+1, pb.plain.per[r], pb.purging.per[r], pb.purging.per[r]/pb.plain.per[r], removed.Load())
	}
	left, err := pb.left(ctx)
	if err != nil {
		return err
	}
	secs := pb.slice.Seconds() * float64(r)
	var per []string
	for i := range pb.plain.per {
		per = append(per, fmt.Sprintf("%.2f", pb.purging.per[i]/pb.plain.per[i]))
	}
	fmt.Printf("%d rounds of %s per phase, alternating\n", r, pb.slice)
	fmt.Printf("(b) webhook deliveries acknowledged, %d senders: %.0f req/s  p50 %s  p99 %s  CPU per request %s\n",
		pb.conns, pb.plain.rate(secs), pct(pb.plain.lat, 50), pct(pb.plain.lat, 99), pb.plain.cpuPer())
	fmt.Printf("(b) while the purge runs:                %.0f req/s  p50 %s  p99 %s  CPU per request %s\n",
		pb.purging.rate(secs), pct(pb.purging.lat, 50), pct(pb.purging.lat, 99), pb.purging.cpuPer())
	fmt.Printf("purge: %d payloads removed in %d batches of at most %d, %s of purging (%.0f payloads/s), rest max(%s, %g × batch); %d old payloads left\n",
		removed.Load(), batches, pb.svc.Batch, purgeTime.Round(time.Second), float64(removed.Load())/purgeTime.Seconds(), pb.svc.Pause, pb.svc.PauseFactor, left)
	fmt.Printf("    with/without of each round: %s\n", strings.Join(per, " "))
	fmt.Printf("ratio (b with purge)/(b) = %.3f (target ≥ 0.9)\n", pb.purging.rate(secs)/pb.plain.rate(secs))
	return nil
}
