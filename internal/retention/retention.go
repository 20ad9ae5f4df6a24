// Package retention owns the per-tenant retention settings
// (docs/ARCHITECTURE.md, "Personal data") and the scheduled purge that applies them: processed deliveries
// older than delivery_payload_days lose their raw payload (the row stays,
// so counts and duplicate detection do), dead letters older than
// dead_letter_days and outbound events older than event_days (with their
// deliveries and attempts) are deleted.
//
// The purge walks each table by primary key in small batches, each its
// own short transaction run by the table's owner (webhooks, events), and
// keeps a cursor per tenant and table (retention_cursors), so a stopped
// run resumes where it stopped and nothing ingest writes now is locked.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
)

// Settings is a tenant's retention, in days.
type Settings struct {
	DeliveryPayloadDays int `json:"delivery_payload_days"`
	DeadLetterDays      int `json:"dead_letter_days"`
	EventDays           int `json:"event_days"`
}

// Defaults apply to a tenant that never changed its retention.
var Defaults = Settings{DeliveryPayloadDays: 90, DeadLetterDays: 30, EventDays: 30}

// MaxDays bounds every setting (ten years).
const MaxDays = 3650

// Input is a change: a field left out keeps its current value.
type Input struct {
	DeliveryPayloadDays *int `json:"delivery_payload_days"`
	DeadLetterDays      *int `json:"dead_letter_days"`
	EventDays           *int `json:"event_days"`
}

// Service reads and changes retention settings and runs the purge.
type Service struct {
	DB *sqlx.DB
	// eachTenant visits every tenant (tenants.Service.ForEach).
	eachTenant func(ctx context.Context, fn func(tenantID string) error) error
	Log        *slog.Logger
	clock      func() time.Time
	Purgers    Purgers
	// Batch is how many rows one purge statement walks at most.
	Batch int
	// Pause and PauseFactor set the rest between two batches of the purge:
	// at least Pause, and PauseFactor times as long as the batch took, so
	// the purge takes a bounded share of the database however loaded it
	// is, and ingest keeps its rate (docs/BENCHMARKS.md, "Retention purge").
	Pause       time.Duration
	PauseFactor float64
	// MaxRun ends one scheduled run (the next resumes from the cursors)
	// before Asynq's task timeout and well before the next window.
	MaxRun time.Duration
}

// Defaults of the purge's pace.
const (
	DefaultBatch = 500
	DefaultPause = 20 * time.Millisecond
	// DefaultPauseFactor: a batch, then three times its duration of rest.
	DefaultPauseFactor = 3
	DefaultMaxRun      = 20 * time.Minute
)

// NewService returns the service on d.
func NewService(d *sqlx.DB, eachTenant func(ctx context.Context, fn func(tenantID string) error) error, purgers Purgers, log *slog.Logger, now func() time.Time) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{DB: d, eachTenant: eachTenant, Purgers: purgers, Log: log, clock: now,
		Batch: DefaultBatch, Pause: DefaultPause, PauseFactor: DefaultPauseFactor, MaxRun: DefaultMaxRun}
}

func (s *Service) now() time.Time {
	if s.clock == nil {
		return time.Now().UTC()
	}
	return s.clock().UTC()
}

// Get returns the tenant's settings (the defaults when never changed).
func (s *Service) Get(ctx context.Context, tenantID string) (Settings, error) {
	return getSettings(ctx, s.DB, tenantID)
}

// Set changes the tenant's settings and records retention.changed with
// the old and new values in the same transaction.
func (s *Service) Set(ctx context.Context, tenantID string, in Input) (Settings, error) {
	var out Settings
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		old, err := getSettingsForUpdate(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		next := old
		fields := map[string]string{}
		apply := func(name string, v *int, dst *int) {
			if v == nil {
				return
			}
			if *v < 1 || *v > MaxDays {
				fields[name] = "must be a whole number of days from 1 to 3650"
				return
			}
			*dst = *v
		}
		apply("delivery_payload_days", in.DeliveryPayloadDays, &next.DeliveryPayloadDays)
		apply("dead_letter_days", in.DeadLetterDays, &next.DeadLetterDays)
		apply("event_days", in.EventDays, &next.EventDays)
		if len(fields) > 0 {
			return apperr.InvalidFields(fields)
		}
		out = next
		if next == old {
			return nil // nothing changed: no write, no audit row
		}
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "retention.changed", TargetType: "retention", TargetID: tenantID,
			Detail: map[string]any{"old": old, "new": next}}); err != nil {
			return err
		}
		return putSettings(ctx, tx, tenantID, next, s.now())
	})
	return out, err
}
