package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/clip"
	"leadpipe/internal/db"
	"leadpipe/internal/jobs"
	"leadpipe/internal/monitor"
)

// TaskInspector is the part of asynq.Inspector the failure handling uses
// (*asynq.Inspector implements it).
type TaskInspector interface {
	ListArchivedTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	GetTaskInfo(queue, id string) (*asynq.TaskInfo, error)
	DeleteTask(queue, id string) error
	RunTask(queue, id string) error
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// Lifecycle is the Processor's failure handling: the final failure of a
// processing task marks its delivery `failed`, archived tasks are settled
// (never left holding a delivery's TaskID), and failures are counted.
type Lifecycle struct {
	// Inspector reads and deletes archived tasks. Without it archived
	// tasks are only settled by the error handler.
	Inspector TaskInspector
	// Stats counts processing_failures per source and minute.
	Stats monitor.Sink
	// SweepBudget overrides how many rows one sweep looks at (tests).
	SweepBudget int

	sweep sweepState
}

func (l *Lifecycle) stats() monitor.Sink {
	if l.Stats == nil {
		return monitor.Discard{}
	}
	return l.Stats
}

// maxErrorLen fits deliveries.last_error (VARCHAR(1024)) with room to spare.
const maxErrorLen = 1000

// MarkFailed records that processing of a delivery gave up: state
// `failed`, one more attempt, the cause in last_error, counted once in
// processing_failures. Only a `received` delivery changes, so a late or
// repeated call (the handler, then Asynq's error handler, then the archive
// check) changes and counts nothing more; nor does the failure of a task
// queued before a reprocess (pl.Runs, see ProcessPayload). It reports
// whether it changed the row. attempts is how many runs the task made
// (its failed runs rolled back, so the row has not counted them); 0 counts
// this one.
func (p *Processor) MarkFailed(ctx context.Context, pl ProcessPayload, attempts int, cause string) (bool, error) {
	now := p.now()
	tenantID, id := pl.TenantID, pl.DeliveryID
	runs := pl.Runs
	changed, err := setFailed(ctx, p.DB, tenantID, id, &runs, attempts, cause, now)
	if err != nil || !changed {
		return false, err
	}
	var sourceID string
	if err := p.DB.GetContext(ctx, &sourceID, `SELECT source_id FROM deliveries WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		return true, err
	}
	p.countFailure(ctx, tenantID, sourceID, id, cause, now)
	return true, nil
}

// setFailed is the one statement that marks a delivery failed: state
// `failed`, one more attempt (at least attempts), the cause in last_error.
// Only a `received` delivery changes, and with runs only while its row
// has counted that many runs (a task queued before a reprocess changes
// nothing). x is the database, or a batch's transaction. It reports
// whether the row changed; the caller counts the failure (countFailure)
// once it is committed.
func setFailed(ctx context.Context, x db.Ext, tenantID, id string, runs *int, attempts int, cause string, now time.Time) (bool, error) {
	q := `UPDATE deliveries SET state = 'failed', processed_at = ?, attempts = GREATEST(attempts + 1, ?), last_error = ?, ` + spareForFinish + `
		WHERE tenant_id = ? AND id = ? AND state = 'received'`
	args := []any{now, attempts, clip.Bytes(cause, maxErrorLen, ""), tenantID, id}
	if runs != nil {
		q += ` AND attempts = ?`
		args = append(args, *runs)
	}
	res, err := x.ExecContext(ctx, q, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// countFailure counts a delivery that just became `failed` (once: the
// caller changed its row) in processing_failures and logs it.
func (p *Processor) countFailure(ctx context.Context, tenantID, sourceID, id, cause string, now time.Time) {
	p.stats().Add(tenantID, sourceID, monitor.ProcessingFailures, 1, now)
	p.Log.WarnContext(ctx, "delivery processing failed", "tenant_id", tenantID, "delivery", id, "err", cause)
}

// failTask is MarkFailed for the task handler: a database error is
// logged (the error handler or the archive check retries the marking).
func (p *Processor) failTask(ctx context.Context, pl ProcessPayload, cause error) {
	if _, err := p.MarkFailed(ctx, pl, 0, cause.Error()); err != nil {
		p.Log.ErrorContext(ctx, "mark delivery failed", "delivery", pl.DeliveryID, "err", err)
	}
}

// HandleFinalFailure is the Asynq error handler's hook for
// TypeProcessDelivery and TypeProcessBatch: called for every failed run,
// it marks the task's deliveries still `received` `failed` when this was
// the last one (retries exhausted, or SkipRetry).
func (p *Processor) HandleFinalFailure(ctx context.Context, t *asynq.Task, err error) {
	if !jobs.FinalFailure(ctx, err) {
		return
	}
	pls, ok := taskDeliveries(t.Type(), t.Payload())
	if !ok {
		return
	}
	// The task's own context may be past its deadline (a timeout is a
	// failure too); the marking must still reach the database.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	retried, _ := asynq.GetRetryCount(ctx)
	cause := err.Error()
	if !errors.Is(err, asynq.SkipRetry) {
		cause = fmt.Sprintf("gave up after %d attempts: %s", retried+1, cause)
	}
	for _, pl := range pls {
		if _, merr := p.MarkFailed(mctx, pl, retried+1, cause); merr != nil {
			p.Log.ErrorContext(ctx, "mark delivery failed (the archive check will retry)", "delivery", pl.DeliveryID, "err", merr)
		}
	}
}

// settleBatch is how many archived tasks one SettleArchived call handles.
const settleBatch = 1000

// SettleArchived makes sure no archived processing task is left holding
// a delivery: each archived processing task's deliveries are marked
// `failed` (if the error handler did not get to it) and the task is
// deleted, which frees its TaskID for a reprocess or the sweeper. It
// returns the number of tasks settled.
func (p *Processor) SettleArchived(ctx context.Context) (int, error) {
	if p.Inspector == nil {
		return 0, nil
	}
	n := 0
	for n < settleBatch {
		tasks, err := p.Inspector.ListArchivedTasks(jobs.QueueCritical, asynq.PageSize(100), asynq.Page(1))
		if err != nil {
			if errors.Is(err, asynq.ErrQueueNotFound) {
				return n, nil
			}
			return n, err
		}
		settled := 0
		for _, ti := range tasks {
			if ti.Type != TypeProcessDelivery && ti.Type != TypeProcessBatch {
				continue
			}
			pls, _ := taskDeliveries(ti.Type, ti.Payload)
			for _, pl := range pls {
				cause := fmt.Sprintf("gave up after %d attempts: %s", ti.Retried+1, ti.LastErr)
				if _, err := p.MarkFailed(ctx, pl, ti.Retried+1, cause); err != nil {
					return n, err // keep the task: the next sweep tries again
				}
			}
			if err := p.Inspector.DeleteTask(jobs.QueueCritical, ti.ID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
				return n, err
			}
			settled++
			n++
		}
		if settled == 0 {
			// Only other task types left on this page (or none at all).
			return n, nil
		}
	}
	return n, nil
}

// Requeue enqueues a delivery's processing task now: a task holding its
// TaskID in the archive is deleted first, one waiting for a retry or a
// schedule is run at once, one pending or running is left alone.
func (p *Processor) Requeue(ctx context.Context, tenantID, id string) error {
	var runs int
	if err := p.DB.GetContext(ctx, &runs, `SELECT attempts FROM deliveries WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		return db.MapErr(err, "delivery not found", "")
	}
	t, opts := NewProcessTask(tenantID, id, runs)
	_, err := p.Queue.EnqueueContext(ctx, t, opts...)
	if err == nil || !errors.Is(err, asynq.ErrTaskIDConflict) || p.Inspector == nil {
		return err
	}
	ti, err := p.Inspector.GetTaskInfo(jobs.QueueCritical, id)
	if err != nil {
		if errors.Is(err, asynq.ErrTaskNotFound) {
			// Gone meanwhile: enqueue again.
			_, err = p.Queue.EnqueueContext(ctx, t, opts...)
			if errors.Is(err, asynq.ErrTaskIDConflict) {
				return nil
			}
		}
		return err
	}
	switch ti.State {
	case asynq.TaskStateArchived, asynq.TaskStateCompleted:
		if err := p.Inspector.DeleteTask(jobs.QueueCritical, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
			return err
		}
		_, err = p.Queue.EnqueueContext(ctx, t, opts...)
		if errors.Is(err, asynq.ErrTaskIDConflict) {
			return nil
		}
		return err
	case asynq.TaskStateRetry, asynq.TaskStateScheduled:
		if err := p.Inspector.RunTask(jobs.QueueCritical, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
			return err
		}
	}
	return nil
}
