package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// RelayBatch is how many outbox rows one claim takes.
const RelayBatch = 500

// relayStale is how long a claim may stay unfinished before another relay
// takes the rows over (the first one crashed). The takeover is harmless
// even if the first relay is alive: deliveries are keyed (event, endpoint).
const relayStale = 30 * time.Second

// RelayTenant moves up to n committed outbox rows of a tenant to
// event_deliveries and enqueues their first attempts. It claims the rows
// with a conditional UPDATE … LIMIT n (no SKIP LOCKED: TiDB ignores it),
// fans them out and clears pending in one transaction, and only then
// touches Redis: a Redis outage leaves queued rows the sweeper re-enqueues.
func (s *Service) RelayTenant(ctx context.Context, tenantID string, n int) (int, error) {
	if n <= 0 {
		n = RelayBatch
	}
	now := s.now()
	token := ids.New()
	claimed, err := execRC(ctx, s.DB, `UPDATE events SET claimed_by = ?, claimed_at = ?
WHERE tenant_id = ? AND pending = 1 AND (claimed_at IS NULL OR claimed_at < ?) LIMIT ?`,
		token, now, tenantID, now.Add(-relayStale), n)
	if err != nil {
		return 0, fmt.Errorf("events: relay claim: %w", err)
	}
	if claimed == 0 {
		return 0, nil
	}
	var evs []EventRow
	if err := s.DB.SelectContext(ctx, &evs, `SELECT tenant_id, id, type, resource_id, sequence, created_at, pending
FROM events WHERE tenant_id = ? AND pending = 1 AND claimed_by = ?`, tenantID, token); err != nil {
		return 0, fmt.Errorf("events: relay read: %w", err)
	}
	eps, err := listEndpoints(ctx, s.DB, tenantID)
	if err != nil {
		return 0, fmt.Errorf("events: relay endpoints: %w", err)
	}
	var rows []DeliveryRow
	touched := map[string]bool{}
	for _, ev := range evs {
		for _, ep := range eps {
			if ep.Enabled && ep.Subscribes(ev.Type) {
				rows = append(rows, DeliveryRow{ID: ids.New(), EventID: ev.ID, EndpointID: ep.ID, NextAttemptAt: now, CreatedAt: now})
				touched[ep.ID] = true
			}
		}
	}
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		for i := 0; i < len(rows); i += 500 {
			if _, err := insertDeliveries(ctx, tx, tenantID, rows[i:min(i+500, len(rows))]); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE events SET pending = NULL, relayed_at = ?
WHERE tenant_id = ? AND pending = 1 AND claimed_by = ?`, now, tenantID, token)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("events: relay fan-out: %w", err)
	}
	for id := range touched {
		if err := s.Pump(ctx, tenantID, id); err != nil {
			s.log().Warn("events: enqueue after relay failed; the sweeper retries", "tenant_id", tenantID, "endpoint_id", id, "err", err)
		}
	}
	return len(evs), nil
}

// Relay runs RelayTenant over every tenant every Interval, and Sweep every
// SweepEvery, until ctx ends. Any number of relays may run at once.
type Relay struct {
	S          *Service
	Interval   time.Duration // idle poll interval; default 100 ms
	SweepEvery time.Duration // default 1 s
}

// Run blocks until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	interval, sweepEvery := r.Interval, r.SweepEvery
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if sweepEvery <= 0 {
		sweepEvery = time.Second
	}
	var tenants []string
	var listedAt, sweptAt time.Time
	for ctx.Err() == nil {
		if time.Since(listedAt) > 5*time.Second || tenants == nil {
			ts, err := r.S.Tenants(ctx)
			if err != nil {
				r.S.log().Warn("events: relay: listing tenants", "err", err)
			} else {
				tenants, listedAt = ts, time.Now()
			}
		}
		busy := false
		for _, t := range tenants {
			n, err := r.S.RelayTenant(ctx, t, RelayBatch)
			if err != nil && !errors.Is(err, context.Canceled) {
				r.S.log().Warn("events: relay", "tenant_id", t, "err", err)
			}
			busy = busy || n == RelayBatch
		}
		if time.Since(sweptAt) >= sweepEvery {
			sweptAt = time.Now()
			for _, t := range tenants {
				if err := r.S.SweepTenant(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
					r.S.log().Warn("events: sweep", "tenant_id", t, "err", err)
				}
			}
		}
		if busy {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}
