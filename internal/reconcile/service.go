package reconcile

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apperr"
	"leadpipe/internal/ids"
	"leadpipe/internal/keyset"
	"leadpipe/internal/sources"
)

// RunView is a run as the API shows it.
type RunView struct {
	ID         string     `json:"id"`
	State      string     `json:"state"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Pages      int        `json:"pages"`
	Records    int        `json:"records"`
	New        int        `json:"new"`
	Known      int        `json:"known"`
	Backfill   int        `json:"backfill"` // the first run's records: back-fill, not webhook loss
	Errors     int        `json:"errors"`
	LastError  *string    `json:"last_error"`
}

// View returns the API shape of r.
func (r Run) View() RunView {
	return RunView{ID: r.ID, State: r.State, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Pages: r.Pages,
		Records: r.Records, New: r.New, Known: r.Known, Backfill: r.Backfill, Errors: r.Errors, LastError: r.LastError}
}

// checkReconcilable answers 422 with a message that says what to set.
func checkReconcilable(src sources.Source) error {
	if !sources.ReconcileKinds[src.Kind] {
		return &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("a %s source cannot be reconciled: its sender has no list API Leadpipe can pull (typeform, meta, linkedin and generic sources can)", src.Kind),
			Fields:  map[string]string{"reconcile": "not available for " + src.Kind + " sources"}}
	}
	if !src.ReconcileEnabled() {
		return &apperr.Error{Code: apperr.Invalid,
			Message: "this source has no reconcile settings: set reconcile.base_url (with the access token and the form id or list path) on the source first",
			Fields:  map[string]string{"reconcile.base_url": "is not set"}}
	}
	return nil
}

// Trigger starts a manual run of a source ("Reconcile now"), or returns the
// run already going: a double click, or two admins at once, get the same
// run id. Another tenant's source is NotFound; one without pull settings is
// Invalid (422).
func (s *Service) Trigger(ctx context.Context, tenantID, sourceID string) (string, error) {
	src, err := s.Sources.Get(ctx, tenantID, sourceID)
	if err != nil {
		return "", err
	}
	if err := checkReconcilable(src); err != nil {
		return "", err
	}
	for range 5 {
		run := Run{TenantID: tenantID, ID: ids.New(), SourceID: src.ID, Trigger: TriggerManual, StartedAt: s.now()}
		claimed, err := s.claimRun(ctx, run)
		if err != nil {
			return "", err
		}
		if claimed {
			return run.ID, s.enqueueRun(ctx, run)
		}
		cur, ok, err := runningRun(ctx, s.DB, tenantID, src.ID)
		if err != nil {
			return "", err
		}
		if ok {
			return cur.ID, nil
		}
		// The running run finished between our claim and the look-up: claim again.
	}
	return "", apperr.New(apperr.Unavailable, "the source is busy; try again")
}

// enqueueRun queues a claimed manual run. If Redis refuses, the run is
// failed at once: a running row without a task would block the source.
func (s *Service) enqueueRun(ctx context.Context, run Run) error {
	t, opts := newSourceTask(sourcePayload{TenantID: run.TenantID, SourceID: run.SourceID, RunID: run.ID},
		"reconcile:"+run.ID, 0, s.runTimeout())
	_, err := s.Queue.EnqueueContext(ctx, t, opts...)
	if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	s.log().WarnContext(ctx, "enqueue reconcile run failed", "tenant_id", run.TenantID, "run_id", run.ID, "err", err)
	if ferr := s.finish(ctx, &run, StateFailed, "could not queue the run: the task queue is unavailable", ""); ferr != nil {
		return ferr
	}
	return apperr.Wrap(apperr.Unavailable, err, "the task queue is unavailable; try again")
}

// Page sizes of the runs list.
const (
	defaultRunsLimit = 20
	maxRunsLimit     = 100
)

// RunPage is one page of runs, newest first.
type RunPage struct {
	Items      []Run
	NextCursor string // "" on the last page
}

// ListRuns returns a source's runs, newest first. limit 0 means 20 (at most
// 100); cursor is the NextCursor of the previous page. Another tenant's
// source is NotFound.
func (s *Service) ListRuns(ctx context.Context, tenantID, sourceID string, limit int, cursor string) (RunPage, error) {
	src, err := s.Sources.Get(ctx, tenantID, sourceID)
	if err != nil {
		return RunPage{}, err
	}
	bad := map[string]string{}
	switch {
	case limit == 0:
		limit = defaultRunsLimit
	case limit < 0:
		bad["limit"] = fmt.Sprintf("must be between 1 and %d", maxRunsLimit)
	case limit > maxRunsLimit:
		limit = maxRunsLimit
	}
	var before string
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !ids.Valid(string(b)) {
			bad["cursor"] = "is not a cursor this API returned"
		}
		before = string(b)
	}
	if len(bad) > 0 {
		return RunPage{}, apperr.InvalidFields(bad)
	}
	runs, err := listRuns(ctx, s.DB, tenantID, src.ID, before, limit+1)
	if err != nil {
		return RunPage{}, err
	}
	page := RunPage{}
	var last string
	if page.Items, last = keyset.Cut(runs, limit, func(r Run) string { return r.ID }); last != "" {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(last))
	}
	return page, nil
}

// GetRun returns one run of the tenant's source.
func (s *Service) GetRun(ctx context.Context, tenantID, sourceID, runID string) (Run, error) {
	if !ids.Valid(runID) {
		return Run{}, apperr.New(apperr.NotFound, "reconcile run not found")
	}
	r, err := getRun(ctx, s.DB, tenantID, runID)
	if err != nil {
		return Run{}, err
	}
	if r.SourceID != sourceID {
		return Run{}, apperr.New(apperr.NotFound, "reconcile run not found")
	}
	return r, nil
}
