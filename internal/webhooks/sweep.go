package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/db"
)

// TypeSweep re-enqueues deliveries left unprocessed (Redis was down, a
// worker crashed between commit and enqueue).
const TypeSweep = "delivery:sweep"

// Sweep enqueues every delivery unprocessed for longer than after.
func (p *Processor) Sweep(ctx context.Context, after time.Duration) (int, error) {
	var tenantIDs []string
	if err := p.DB.SelectContext(ctx, &tenantIDs, `SELECT id FROM tenants`); err != nil {
		return 0, err
	}
	before := p.now().Add(-after)
	n := 0
	for _, tid := range tenantIDs {
		for {
			ids, err := pendingDeliveries(ctx, p.DB, tid, before, 500)
			if err != nil {
				return n, err
			}
			queued := 0
			for _, id := range ids {
				t, opts := NewProcessTask(tid, id)
				_, err := p.Queue.EnqueueContext(ctx, t, opts...)
				if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
					return n, fmt.Errorf("sweep enqueue: %w", err)
				}
				if err == nil {
					queued++
				}
			}
			n += queued
			// A full page where everything was already queued: stop, the
			// queue holds them; otherwise continue only while pages are full.
			if len(ids) < 500 || queued == 0 {
				break
			}
		}
	}
	if n > 0 {
		p.Log.InfoContext(ctx, "sweeper enqueued unprocessed deliveries", "count", n)
	}
	return n, nil
}

// pendingDeliveries lists a tenant's deliveries still unprocessed that were
// received before `before` (the sweeper's work), oldest first.
func pendingDeliveries(ctx context.Context, x db.Ext, tenantID string, before time.Time, limit int) ([]string, error) {
	var ids []string
	err := x.SelectContext(ctx, &ids, `SELECT id FROM deliveries
		WHERE tenant_id = ? AND state = 'received' AND received_at < ?
		ORDER BY received_at, id LIMIT ?`, tenantID, before, limit)
	return ids, err
}
