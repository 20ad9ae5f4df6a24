// Package reconcile pulls leads from the senders' own APIs on a schedule (and
// on demand) and upserts every record through the same path as webhooks, so
// a lost webhook is repaired and a delivered one costs nothing. It also
// enriches Meta and LinkedIn webhook leads, which name a lead without its
// person, from the sender's API (Graph; LinkedIn's lead form responses).
//
// Flow: a periodic reconcile:tick enqueues one reconcile:source task per due
// source and schedule window (TaskID names the window); "Reconcile now"
// claims a run row and enqueues reconcile:source for that run. A run pages
// through the source's puller under a deadline, upserts each page in one
// transaction, and on success moves the source's cursor.
package reconcile

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/monitor"
	"leadpipe/internal/outbound"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
)

// Run states and triggers.
const (
	StateRunning   = "running"
	StateSucceeded = "succeeded"
	StateFailed    = "failed"

	TriggerScheduled = "scheduled"
	TriggerManual    = "manual"
)

// Run is one reconcile run of a source.
type Run struct {
	TenantID    string     `db:"tenant_id"`
	ID          string     `db:"id"`
	SourceID    string     `db:"source_id"`
	State       string     `db:"state"`
	Trigger     string     `db:"trigger_kind"`
	WindowStart *time.Time `db:"window_start"` // scheduled runs: the schedule window
	Since       *time.Time `db:"since"`        // records changed since this time were asked for
	StartedAt   time.Time  `db:"started_at"`
	HeartbeatAt time.Time  `db:"heartbeat_at"`
	FinishedAt  *time.Time `db:"finished_at"`
	Pages       int        `db:"pages"`
	Records     int        `db:"records"`
	New         int        `db:"new_count"`     // records no webhook had brought (webhook loss)
	Known       int        `db:"known_count"`   // records already known
	Changed     int        `db:"changed_count"` // known records whose sender fields changed
	Errors      int        `db:"errors"`
	LastError   *string    `db:"last_error"`
	// PageCursor is the sender's token of the next page of the window,
	// saved after every page ("" once the window is done); Newest the
	// newest record time seen in the window so far.
	PageCursor string     `db:"page_cursor"`
	Newest     *time.Time `db:"newest"`
	Backfill   int        `db:"backfill_count"` // records of the source's first run (not webhook loss)
}

// Enqueuer is the part of the Asynq client reconcile uses.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Service runs and records reconciles. Fields with a zero value take the
// documented defaults.
type Service struct {
	DB      *sqlx.DB
	Sources *sources.Service
	Queue   Enqueuer
	Client  *outbound.Client // the one outbound client (SSRF guard, retries)
	Stats   monitor.Sink
	Log     *slog.Logger
	Leads   webhooks.LeadWriter // writes the records (leads.Service); nil: nobody is told
	Now     func() time.Time
	// Committed is told, after a page's transaction committed, of each
	// lead the page created (the live inbox, as for the webhook worker's
	// batches); nil: nobody.
	Committed func(tenantID string, r webhooks.Result)

	// RunTimeout is the deadline of one run, every page and retry included
	// (default 10 min).
	RunTimeout time.Duration
	// InitialLookback is how far back the first run of a source looks
	// (default 7 days; at least the source's look-back).
	InitialLookback time.Duration
	// StaleAfter: a running run without progress for this long is marked
	// failed and no longer blocks new runs (a worker died; default
	// RunTimeout + 5 min).
	StaleAfter time.Duration
	// MaxPages bounds one run, against an API that pages forever (default 10,000).
	MaxPages int
	// PageSize asks the sender for this many records per page (default: the puller's, 100).
	PageSize int
	// EnrichTimeout bounds one lead fetch (Graph, LinkedIn) with its retries (default 30 s).
	EnrichTimeout time.Duration
	// Retention keeps finished runs this long (default 90 days).
	Retention time.Duration
	// SettleDelay: a record younger than this (by the sender's time) is
	// not judged yet — its webhook may still be in flight — so it is left
	// for a later run (default 5 min).
	SettleDelay time.Duration
}

func (s *Service) settleDelay() time.Duration { return positiveOr(s.SettleDelay, 5*time.Minute) }

func (s *Service) now() time.Time { return clock.Read(s.Now) }

func (s *Service) runTimeout() time.Duration { return positiveOr(s.RunTimeout, 10*time.Minute) }

func (s *Service) staleAfter() time.Duration {
	return positiveOr(s.StaleAfter, s.runTimeout()+5*time.Minute)
}

func (s *Service) initialLookback() time.Duration {
	return positiveOr(s.InitialLookback, 7*24*time.Hour)
}

func (s *Service) maxPages() int { return positiveOr(s.MaxPages, 10000) }

func (s *Service) enrichTimeout() time.Duration { return positiveOr(s.EnrichTimeout, 30*time.Second) }

func (s *Service) retention() time.Duration { return positiveOr(s.Retention, 90*24*time.Hour) }

// positiveOr is v when it is set (above zero), else def.
func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Service) stats() monitor.Sink {
	if s.Stats == nil {
		return monitor.Discard{}
	}
	return s.Stats
}

// Apply writes one sender record to its lead inside x: exactly the
// webhook path (webhooks.Apply: same mapping, same write by Leads).
func (s *Service) Apply(ctx context.Context, x db.Ext, tenantID string, src sources.Source, raw json.RawMessage, now time.Time) (webhooks.Result, error) {
	return webhooks.Apply(ctx, x, s.Leads, tenantID, src, raw, now)
}
