package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/sources"
)

const runCols = `tenant_id, id, source_id, state, trigger_kind, window_start, since, started_at, heartbeat_at,
	finished_at, pages, records, new_count, known_count, changed_count, errors, last_error,
	IFNULL(page_cursor, '') AS page_cursor, newest, backfill_count`

// insertRun claims a running run for r.SourceID (and r.WindowStart when
// set). false means the claim lost: another run of the source is running,
// or the window already has its run. Every value is a fixed-width id or a
// time, so INSERT IGNORE cannot silently truncate anything.
func insertRun(ctx context.Context, x db.Ext, r Run) (bool, error) {
	res, err := x.ExecContext(ctx, `INSERT IGNORE INTO reconcile_runs
			(tenant_id, id, source_id, state, trigger_kind, window_start, running_key, started_at, heartbeat_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.TenantID, r.ID, r.SourceID, StateRunning, r.Trigger, r.WindowStart, r.SourceID, r.StartedAt, r.StartedAt)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func getRun(ctx context.Context, x db.Ext, tenantID, id string) (Run, error) {
	var r Run
	err := x.GetContext(ctx, &r, `SELECT `+runCols+` FROM reconcile_runs WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return r, db.MapErr(err, "reconcile run not found", "")
}

// runningRun returns the source's running run, if any.
func runningRun(ctx context.Context, x db.Ext, tenantID, sourceID string) (Run, bool, error) {
	var r Run
	err := x.GetContext(ctx, &r, `SELECT `+runCols+` FROM reconcile_runs WHERE tenant_id = ? AND running_key = ?`, tenantID, sourceID)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}

// abandonStale fails running runs that made no progress since before (their
// worker died, or Redis lost the task), so they stop blocking new runs.
// sourceID "" means every source of the tenant.
//
// The stale runs are found with a plain read and failed by primary key:
// the lock order of finishRun (the row, then its running_key entry). An
// UPDATE through the running_key index locks the index entry first and
// deadlocks (1213) with a run that finishes at that moment
// (TestReconcileConcurrentRunsOfOneSource).
func abandonStale(ctx context.Context, x db.Ext, tenantID, sourceID string, before, now time.Time) (int64, error) {
	q := `SELECT id FROM reconcile_runs WHERE tenant_id = ? AND running_key IS NOT NULL AND heartbeat_at < ?`
	args := []any{tenantID, before}
	if sourceID != "" {
		q = `SELECT id FROM reconcile_runs WHERE tenant_id = ? AND running_key = ? AND heartbeat_at < ?`
		args = []any{tenantID, sourceID, before}
	}
	var ids []string
	if err := x.SelectContext(ctx, &ids, q, args...); err != nil || len(ids) == 0 {
		return 0, err
	}
	// The WHERE repeats the staleness test: a run whose heartbeat moved
	// since the read is alive and stays running.
	res, err := db.ExecIn(ctx, x, `UPDATE reconcile_runs SET state = ?, running_key = NULL, finished_at = ?, errors = errors + 1, last_error = ?
		WHERE tenant_id = ? AND id IN (?) AND running_key IS NOT NULL AND heartbeat_at < ?`,
		StateFailed, now, "abandoned: no progress since "+before.Format(time.RFC3339)+" (the worker stopped or the task was lost)",
		tenantID, ids, before)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// saveProgress stores a running run's counters, heartbeat and place in
// its window (page_cursor, newest), so a run cut off is resumed there.
func saveProgress(ctx context.Context, x db.Ext, r *Run) error {
	_, err := x.ExecContext(ctx, `UPDATE reconcile_runs SET since = ?, heartbeat_at = ?, pages = ?, records = ?,
			new_count = ?, known_count = ?, changed_count = ?, errors = ?, last_error = ?,
			page_cursor = ?, newest = ?, backfill_count = ?
		WHERE tenant_id = ? AND id = ?`,
		r.Since, r.HeartbeatAt, r.Pages, r.Records, r.New, r.Known, r.Changed, r.Errors, r.LastError,
		nullIfEmpty(r.PageCursor), r.Newest, r.Backfill, r.TenantID, r.ID)
	return err
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// resumePoint is where the source's last run stopped inside its window.
type resumePoint struct {
	Since      *time.Time `db:"since"`
	PageCursor *string    `db:"page_cursor"`
	Newest     *time.Time `db:"newest"`
	State      string     `db:"state"`
}

// lastRunPlace returns the place of the source's latest finished run when
// it failed part-way through a window (nil otherwise).
func lastRunPlace(ctx context.Context, x db.Ext, tenantID, sourceID, exceptID string) (*resumePoint, error) {
	var p resumePoint
	err := x.GetContext(ctx, &p, `SELECT since, page_cursor, newest, state FROM reconcile_runs
		WHERE tenant_id = ? AND source_id = ? AND id <> ? AND running_key IS NULL
		ORDER BY started_at DESC LIMIT 1`, tenantID, sourceID, exceptID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if p.State != StateFailed || p.PageCursor == nil || *p.PageCursor == "" || p.Since == nil {
		return nil, nil
	}
	return &p, nil
}

// hasSucceeded reports whether the source ever completed a run (before
// that, a run is the source's back-fill).
func hasSucceeded(ctx context.Context, x db.Ext, tenantID, sourceID string) (bool, error) {
	var n int
	err := x.GetContext(ctx, &n, `SELECT COUNT(*) FROM reconcile_runs WHERE tenant_id = ? AND source_id = ? AND state = ? LIMIT 1`,
		tenantID, sourceID, StateSucceeded)
	return n > 0, err
}

// finishRun records the outcome and releases the source for the next run.
func finishRun(ctx context.Context, x db.Ext, r *Run) error {
	_, err := x.ExecContext(ctx, `UPDATE reconcile_runs SET state = ?, running_key = NULL, since = ?, heartbeat_at = ?,
			finished_at = ?, pages = ?, records = ?, new_count = ?, known_count = ?, changed_count = ?, errors = ?, last_error = ?,
			page_cursor = ?, newest = ?, backfill_count = ?
		WHERE tenant_id = ? AND id = ?`,
		r.State, r.Since, r.HeartbeatAt, r.FinishedAt, r.Pages, r.Records, r.New, r.Known, r.Changed, r.Errors, r.LastError,
		nullIfEmpty(r.PageCursor), r.Newest, r.Backfill, r.TenantID, r.ID)
	return err
}

// listRuns returns a source's runs newest first, before the id before ("" = from the newest).
func listRuns(ctx context.Context, x db.Ext, tenantID, sourceID, before string, limit int) ([]Run, error) {
	q := `SELECT ` + runCols + ` FROM reconcile_runs WHERE tenant_id = ? AND source_id = ?`
	args := []any{tenantID, sourceID}
	if before != "" {
		q += ` AND id < ?`
		args = append(args, before)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	runs := []Run{}
	err := x.SelectContext(ctx, &runs, q, args...)
	return runs, err
}

// dueSource is a source with pull settings and the start of its latest run.
type dueSource struct {
	ID        string
	IntervalS int
	LastStart *time.Time
}

// reconcilableSources lists the tenant's sources with pull settings (the
// sources area answers) and the start of each one's latest run (from the
// (tenant_id, source_id, started_at) index).
func reconcilableSources(ctx context.Context, x db.Ext, tenantID string) ([]dueSource, error) {
	pulled, err := sources.Pulled(ctx, x, tenantID)
	if err != nil || len(pulled) == 0 {
		return nil, err
	}
	var runs []struct {
		SourceID  string    `db:"source_id"`
		LastStart time.Time `db:"last_start"`
	}
	if err := x.SelectContext(ctx, &runs, `SELECT source_id, MAX(started_at) AS last_start FROM reconcile_runs
		WHERE tenant_id = ? GROUP BY source_id`, tenantID); err != nil {
		return nil, err
	}
	last := make(map[string]*time.Time, len(runs))
	for i := range runs {
		last[runs[i].SourceID] = &runs[i].LastStart
	}
	out := make([]dueSource, 0, len(pulled))
	for _, p := range pulled {
		out = append(out, dueSource{ID: p.ID, IntervalS: p.IntervalS, LastStart: last[p.ID]})
	}
	return out, nil
}

// purgeRuns deletes finished runs older than before, a batch at a time.
func purgeRuns(ctx context.Context, x db.Ext, tenantID string, before time.Time) (int64, error) {
	res, err := x.ExecContext(ctx, `DELETE FROM reconcile_runs WHERE tenant_id = ? AND running_key IS NULL AND finished_at < ?
		LIMIT 1000`, tenantID, before)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
