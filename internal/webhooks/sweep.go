package webhooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/db"
	"leadpipe/internal/jobs"
	"leadpipe/internal/tenants"
)

// sweepPage is the sweeper's page size; sweepBudget bounds the rows one
// sweep looks at over all tenants (the rest waits for the next sweep,
// which continues from each tenant's cursor).
const (
	sweepPage   = 500
	sweepBudget = 20000
)

// errSweepBudgetSpent stops the walk over tenants when a sweep has looked
// at its budget of rows; the next sweep goes on from the saved cursors.
var errSweepBudgetSpent = errors.New("sweep budget spent")

// sweepCursor is the keyset position (received_at, id) a tenant's walk
// stopped at when a sweep ran out of budget.
type sweepCursor struct {
	at time.Time
	id string
}

// sweepState keeps each tenant's cursor between sweeps of one process.
// Losing it (a restart, another worker running the next sweep) only means
// a walk starts again from the oldest row: every row is still reached,
// because a walk never stops before the end of the backlog or the budget.
type sweepState struct {
	mu      sync.Mutex
	cursors map[string]sweepCursor
}

func (s *sweepState) get(tenantID string) (sweepCursor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[tenantID]
	return c, ok
}

func (s *sweepState) set(tenantID string, c *sweepCursor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cursors == nil {
		s.cursors = map[string]sweepCursor{}
	}
	if c == nil {
		delete(s.cursors, tenantID)
		return
	}
	s.cursors[tenantID] = *c
}

// Sweep settles archived processing tasks (see SettleArchived), then
// walks every tenant's backlog of deliveries still `received` for longer
// than after, with a keyset cursor (received_at, id), and enqueues each
// one's task. A row whose task is still queued (TaskID conflict) is passed
// over, never a reason to stop: stuck rows at the head of a backlog cannot
// hide the rows behind them. It returns the number of tasks enqueued.
func (p *Processor) Sweep(ctx context.Context, after time.Duration) (int, error) {
	if _, err := p.SettleArchived(ctx); err != nil {
		p.Log.WarnContext(ctx, "settle archived delivery tasks", "err", err)
	}
	if p.queueBusy() {
		// The worker is behind its queue: the deliveries queued will come,
		// and a later sweep looks again.
		return 0, nil
	}
	before := p.now().Add(-after)
	budget := sweepBudget
	if p.SweepBudget > 0 {
		budget = p.SweepBudget
	}
	n := 0
	err := tenants.ForEach(ctx, p.DB, func(tenantID string) error {
		if budget <= 0 {
			return errSweepBudgetSpent
		}
		queued, seen, err := p.sweepTenant(ctx, tenantID, before, budget)
		n += queued
		budget -= seen
		return err
	})
	if err != nil && !errors.Is(err, errSweepBudgetSpent) {
		return n, err
	}
	if n > 0 {
		p.Log.InfoContext(ctx, "sweeper enqueued unprocessed deliveries", "count", n)
	}
	return n, nil
}

// sweepMaxPending is how many processing tasks may wait in the queue for
// a sweep to run. Batch tasks hold no TaskID per delivery, so the sweeper
// cannot tell a delivery whose batch still waits from one whose task was
// lost; while the worker is behind, a sweep would queue the backlog a
// second time. It waits until the queue is short: what was lost is found
// then.
const sweepMaxPending = 64

// queueBusy reports whether more than sweepMaxPending tasks wait in the
// processing queue. Without an Inspector, or when the queue cannot be read
// (it does not exist before its first task), the sweep goes on: queuing a
// delivery twice costs work, never correctness.
func (p *Processor) queueBusy() bool {
	if p.Inspector == nil {
		return false
	}
	qi, err := p.Inspector.GetQueueInfo(jobs.QueueCritical)
	return err == nil && qi.Pending > sweepMaxPending
}

// sweepTenant walks one tenant's backlog from its saved cursor (or the
// oldest row) until the end or until budget rows were looked at.
func (p *Processor) sweepTenant(ctx context.Context, tenantID string, before time.Time, budget int) (queued, seen int, err error) {
	cur, resumed := p.sweep.get(tenantID)
	var after *sweepCursor
	if resumed {
		after = &cur
	}
	for seen < budget {
		limit := min(sweepPage, budget-seen)
		page, err := pendingDeliveries(ctx, p.DB, tenantID, before, after, limit)
		if err != nil {
			return queued, seen, err
		}
		seen += len(page)
		for _, d := range page {
			t, opts := NewProcessTask(tenantID, d.ID, d.Attempts)
			_, err := p.Queue.EnqueueContext(ctx, t, opts...)
			switch {
			case err == nil:
				queued++
			case errors.Is(err, asynq.ErrTaskIDConflict):
				// Still queued, retrying or archived (SettleArchived's job).
			default:
				p.sweep.set(tenantID, after)
				return queued, seen, fmt.Errorf("sweep enqueue: %w", err)
			}
		}
		if len(page) < limit {
			// End of the backlog: the next sweep starts from the oldest row.
			p.sweep.set(tenantID, nil)
			return queued, seen, nil
		}
		last := page[len(page)-1]
		after = &sweepCursor{at: last.ReceivedAt, id: last.ID}
	}
	// Out of budget: the next sweep continues here.
	p.sweep.set(tenantID, after)
	return queued, seen, nil
}

// pendingDeliveries lists a page of a tenant's deliveries still `received`
// that arrived before `before`, oldest first, strictly after the keyset
// cursor when one is given (index ix_deliveries_state).
func pendingDeliveries(ctx context.Context, x db.Ext, tenantID string, before time.Time, after *sweepCursor, limit int) ([]Delivery, error) {
	var rows []Delivery
	var err error
	if after == nil {
		err = x.SelectContext(ctx, &rows, `SELECT `+pendingCols+` FROM deliveries
		WHERE tenant_id = ? AND state = 'received' AND received_at < ?
		ORDER BY received_at, id LIMIT ?`, tenantID, before, limit)
	} else {
		err = x.SelectContext(ctx, &rows, `SELECT `+pendingCols+` FROM deliveries
		WHERE tenant_id = ? AND state = 'received' AND received_at < ?
		  AND (received_at > ? OR (received_at = ? AND id > ?))
		ORDER BY received_at, id LIMIT ?`, tenantID, before, after.at, after.at, after.id, limit)
	}
	return rows, err
}
