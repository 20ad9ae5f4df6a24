package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/tenants"
)

// Task types.
const (
	// TypeTick runs every minute: it enqueues TypeSource for every source
	// whose schedule window has no run yet.
	TypeTick = "reconcile:tick"
	// TypeSource runs one reconcile of one source: a schedule window
	// (TaskID "reconcile:<source id>:<window unix>") or a claimed manual run
	// (TaskID "reconcile:<run id>").
	TypeSource = "reconcile:source"
	// TypePurge deletes old finished runs.
	TypePurge = "reconcile:purge"
)

// sourcePayload is TypeSource's payload: RunID for a manual run, Window
// (unix seconds) for a scheduled one.
type sourcePayload struct {
	TenantID string `json:"tenant_id"`
	SourceID string `json:"source_id"`
	RunID    string `json:"run_id,omitempty"`
	Window   int64  `json:"window,omitempty"`
}

// newSourceTask builds a TypeSource task. retention keeps a finished task's
// id, so a late second scheduler cannot queue the same window again.
func newSourceTask(p sourcePayload, taskID string, retention, runTimeout time.Duration) (*asynq.Task, []asynq.Option) {
	b, _ := json.Marshal(p)
	opts := []asynq.Option{asynq.TaskID(taskID), asynq.Queue(jobs.QueueLow), asynq.MaxRetry(3),
		asynq.Timeout(runTimeout + 2*time.Minute)}
	if retention > 0 {
		opts = append(opts, asynq.Retention(retention))
	}
	return asynq.NewTask(TypeSource, b), opts
}

// WindowStart is the start of the schedule window now falls in, for a
// source reconciled every interval. Each source's windows are shifted by a
// fixed offset derived from its id, so sources with the same interval do
// not all hit their senders (and our workers) at the same second.
func WindowStart(now time.Time, interval time.Duration, sourceID string) time.Time {
	if interval < time.Minute {
		interval = time.Minute
	}
	h := fnv.New64a()
	h.Write([]byte(sourceID))
	offset := time.Duration(h.Sum64()%uint64(interval/time.Second)) * time.Second
	return now.UTC().Add(-offset).Truncate(interval).Add(offset)
}

// EnqueueDue enqueues a TypeSource task for every source, of every tenant,
// whose current schedule window has not started a run yet (a manual run in
// the window counts). The TaskID names the window, so any number of
// concurrent callers enqueue each window once; the window's unique key on
// reconcile_runs makes sure it also runs once. It also fails runs left
// running by a dead worker. Returns how many tasks it enqueued.
func (s *Service) EnqueueDue(ctx context.Context) (int, error) {
	now := s.now()
	n := 0
	err := tenants.ForEach(ctx, s.DB, func(tid string) error {
		if k, err := abandonStale(ctx, s.DB, tid, "", now.Add(-s.staleAfter()), now); err != nil {
			return err
		} else if k > 0 {
			s.log().WarnContext(ctx, "reconcile runs abandoned by a stopped worker marked failed", "tenant_id", tid, "count", k)
		}
		due, err := reconcilableSources(ctx, s.DB, tid)
		if err != nil {
			return err
		}
		for _, d := range due {
			interval := time.Duration(d.IntervalS) * time.Second
			window := WindowStart(now, interval, d.ID)
			if d.LastStart != nil && !d.LastStart.Before(window) {
				continue
			}
			t, opts := newSourceTask(sourcePayload{TenantID: tid, SourceID: d.ID, Window: window.Unix()},
				"reconcile:"+d.ID+":"+strconv.FormatInt(window.Unix(), 10), max(interval, time.Minute), s.runTimeout())
			_, err := s.Queue.EnqueueContext(ctx, t, opts...)
			switch {
			case err == nil:
				n++
			case errors.Is(err, asynq.ErrTaskIDConflict), errors.Is(err, asynq.ErrDuplicateTask):
			default:
				return fmt.Errorf("reconcile: enqueue %s: %w", d.ID, err)
			}
		}
		return nil
	})
	return n, err
}

// HandleTick is TypeTick's handler.
func (s *Service) HandleTick(ctx context.Context, _ *asynq.Task) error {
	_, err := s.EnqueueDue(ctx)
	return err
}

// HandleSource is TypeSource's handler.
func (s *Service) HandleSource(ctx context.Context, t *asynq.Task) error {
	var p sourcePayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || !ids.Valid(p.TenantID) || !ids.Valid(p.SourceID) ||
		(p.RunID == "") == (p.Window == 0) || (p.RunID != "" && !ids.Valid(p.RunID)) {
		return fmt.Errorf("%s: undecodable payload %q: %w", TypeSource, t.Payload(), asynq.SkipRetry)
	}
	var run Run
	if p.RunID != "" {
		r, err := getRun(ctx, s.DB, p.TenantID, p.RunID)
		if apperr.Is(err, apperr.NotFound) {
			return nil // purged with its tenant
		}
		if err != nil {
			return err
		}
		if r.State != StateRunning || r.SourceID != p.SourceID {
			return nil // already done (a redelivered task), or abandoned as stale
		}
		run = r
	} else {
		r, ok, err := s.claimWindow(ctx, p.TenantID, p.SourceID, time.Unix(p.Window, 0).UTC())
		if err != nil || !ok {
			return err
		}
		run = r
	}
	return s.execute(ctx, run)
}

// RunWindow claims and performs the scheduled run of a window, as the
// TypeSource task does; false when the window already had its run or
// another run of the source is going.
func (s *Service) RunWindow(ctx context.Context, tenantID, sourceID string, window time.Time) (Run, bool, error) {
	run, ok, err := s.claimWindow(ctx, tenantID, sourceID, window)
	if err != nil || !ok {
		return run, ok, err
	}
	if err := s.execute(ctx, run); err != nil {
		return run, true, err
	}
	run, err = getRun(ctx, s.DB, tenantID, run.ID)
	return run, true, err
}

// RunNow performs a claimed manual run synchronously (the task handler's
// work, for tests and operators' tools).
func (s *Service) RunNow(ctx context.Context, tenantID, runID string) (Run, error) {
	run, err := getRun(ctx, s.DB, tenantID, runID)
	if err != nil {
		return run, err
	}
	if run.State == StateRunning {
		if err := s.execute(ctx, run); err != nil {
			return run, err
		}
	}
	return getRun(ctx, s.DB, tenantID, runID)
}

// claimWindow claims the scheduled run of a window; false when the window
// already has its run or another run of the source is going (it covers the
// window). A run left behind by a dead worker is not resumed here: it
// would be indistinguishable from one still going, so it is failed as
// stale after StaleAfter and the next window runs.
func (s *Service) claimWindow(ctx context.Context, tenantID, sourceID string, window time.Time) (Run, bool, error) {
	now := s.now()
	run := Run{TenantID: tenantID, ID: ids.New(), SourceID: sourceID, State: StateRunning, Trigger: TriggerScheduled,
		WindowStart: &window, StartedAt: now, HeartbeatAt: now}
	claimed, err := s.claimRun(ctx, run)
	return run, claimed, err
}

// claimAttempts bounds claimRun's retries after deadlocks.
const claimAttempts = 8

// claimRun fails the source's stale run, if any, and claims run as the
// source's running run; false means another run holds the source (or the
// window has its run). A claim races the release of the previous run:
// when finishRun takes the source's running_key entry away while several
// claims wait on it with shared locks, MariaDB makes all but one of them
// deadlock victims (1213: a claim that goes away). A victim
// changed nothing, so it simply claims again, as does one whose stale-run
// check lost a lock race.
func (s *Service) claimRun(ctx context.Context, run Run) (bool, error) {
	var claimed bool
	err := db.Retry(ctx, claimAttempts, 4*time.Millisecond, func() error {
		now := run.StartedAt
		if _, err := abandonStale(ctx, s.DB, run.TenantID, run.SourceID, now.Add(-s.staleAfter()), now); err != nil {
			return err
		}
		var err error
		claimed, err = insertRun(ctx, s.DB, run)
		return err
	})
	return claimed, err
}

// HandlePurge is TypePurge's handler: finished runs older than Retention go.
func (s *Service) HandlePurge(ctx context.Context, _ *asynq.Task) error {
	before := s.now().Add(-s.retention())
	return tenants.ForEach(ctx, s.DB, func(tid string) error {
		for {
			n, err := purgeRuns(ctx, s.DB, tid, before)
			if err != nil {
				return err
			}
			if n < 1000 {
				return nil
			}
		}
	})
}
