package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"
)

// TypePurge is the hourly purge task (queue low).
const TypePurge = "retention:purge"

// The purged tables, as named in retention_cursors.
const (
	TableDeliveries  = "deliveries"
	TableDeadLetters = "dead_letters"
	TableEvents      = "events"
)

// Report counts what a purge did.
type Report struct {
	PayloadsRemoved    int64 `json:"payloads_removed"`
	DeadLettersDeleted int64 `json:"dead_letters_deleted"`
	EventsDeleted      int64 `json:"events_deleted"`
	Batches            int   `json:"batches"`
}

func (r *Report) add(o Report) {
	r.PayloadsRemoved += o.PayloadsRemoved
	r.DeadLettersDeleted += o.DeadLettersDeleted
	r.EventsDeleted += o.EventsDeleted
	r.Batches += o.Batches
}

// Batch is what one batch of a table's purge did, as its owner reports it.
type Batch struct {
	Last    string // the highest primary key walked past ("" when none)
	Scanned int    // rows walked; fewer than the limit: nothing is left below the bound
	Changed int64  // rows blanked or deleted
	Busy    bool   // stopped before a row still in use: the next run resumes there
}

// BatchFunc purges at most limit rows of the tenant's primary key range
// (afterID, beforeID) that are older than before, in one short transaction.
type BatchFunc func(ctx context.Context, d *sqlx.DB, tenantID, afterID, beforeID string, before time.Time, limit int) (Batch, error)

// Purgers are the owners' batch functions of the purged tables
// (webhooks.PurgePayloads, webhooks.PurgeDeadLetters, events.PurgeEvents),
// given by the wiring: package webhooks sits above the web layer, which
// reads settings here.
type Purgers struct {
	Payloads, DeadLetters, Events BatchFunc
}

type purger struct {
	table string
	days  func(Settings) int
	fn    BatchFunc
	count func(*Report) *int64
}

func (p Purgers) list() []purger {
	return []purger{
		{TableDeliveries, func(s Settings) int { return s.DeliveryPayloadDays }, p.Payloads, func(r *Report) *int64 { return &r.PayloadsRemoved }},
		{TableDeadLetters, func(s Settings) int { return s.DeadLetterDays }, p.DeadLetters, func(r *Report) *int64 { return &r.DeadLettersDeleted }},
		{TableEvents, func(s Settings) int { return s.EventDays }, p.Events, func(r *Report) *int64 { return &r.EventsDeleted }},
	}
}

// HandlePurge is the retention:purge task: one run over every tenant,
// ended after MaxRun (the next run resumes from the cursors).
func (s *Service) HandlePurge(ctx context.Context, _ *asynq.Task) error {
	if s.MaxRun > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.MaxRun)
		defer cancel()
	}
	rep, err := s.Purge(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.Log.InfoContext(ctx, "retention purge paused; the next run resumes", "payloads_removed", rep.PayloadsRemoved,
			"dead_letters_deleted", rep.DeadLettersDeleted, "events_deleted", rep.EventsDeleted)
		return nil
	}
	if err == nil && rep.Batches > 0 {
		s.Log.InfoContext(ctx, "retention purge done", "payloads_removed", rep.PayloadsRemoved,
			"dead_letters_deleted", rep.DeadLettersDeleted, "events_deleted", rep.EventsDeleted)
	}
	return err
}

// Purge applies every tenant's retention. It stops when ctx ends (between
// batches or in one, which then rolls back): the cursors keep what was
// done. One tenant's failure does not stop the others; the first error is
// returned.
func (s *Service) Purge(ctx context.Context) (Report, error) {
	var total Report
	var first error
	err := s.eachTenant(ctx, func(tenantID string) error {
		rep, err := s.PurgeTenant(ctx, tenantID)
		total.add(rep)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			s.Log.WarnContext(ctx, "retention purge failed for a tenant", "tenant_id", tenantID, "err", err)
			if first == nil {
				first = err
			}
		}
		return nil
	})
	if err != nil {
		return total, err
	}
	return total, first
}

// PurgeTenant applies one tenant's retention, table by table.
func (s *Service) PurgeTenant(ctx context.Context, tenantID string) (Report, error) {
	var rep Report
	st, err := s.Get(ctx, tenantID)
	if err != nil {
		return rep, err
	}
	now := s.now()
	batch := s.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	for _, p := range s.Purgers.list() {
		if p.fn == nil {
			continue
		}
		before := now.Add(-time.Duration(p.days(st)) * 24 * time.Hour)
		bound := idFloor(before)
		cursor, err := getCursor(ctx, s.DB, tenantID, p.table)
		if err != nil {
			return rep, err
		}
		for {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			t0 := time.Now()
			b, err := p.fn(ctx, s.DB, tenantID, cursor, bound, before, batch)
			took := time.Since(t0)
			if err != nil {
				return rep, fmt.Errorf("retention: purge %s: %w", p.table, err)
			}
			rep.Batches++
			*p.count(&rep) += b.Changed
			if b.Last != "" && b.Last > cursor {
				cursor = b.Last
				// The batch committed: keep its progress even when ctx
				// ended meanwhile, so the next run resumes after it.
				if err := s.saveCursor(ctx, tenantID, p.table, cursor, now); err != nil {
					return rep, err
				}
			}
			if b.Busy || b.Scanned < batch {
				break
			}
			if rest := max(s.Pause, time.Duration(s.PauseFactor*float64(took))); rest > 0 {
				select {
				case <-ctx.Done():
					return rep, ctx.Err()
				case <-time.After(rest):
				}
			}
		}
	}
	return rep, nil
}

func (s *Service) saveCursor(ctx context.Context, tenantID, table, after string, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return putCursor(ctx, s.DB, tenantID, table, after, now)
}

// crockford is the ULID alphabet (internal/ids).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// idFloor is the smallest ULID of the millisecond of t: every id made
// before t sorts below it, so a purge walks (cursor, idFloor(cutoff)) of
// the primary key and never touches what is written now. A ULID's first
// ten characters hold its 48-bit time (the first carries 3 bits).
func idFloor(t time.Time) string {
	v := uint64(t.UnixMilli())
	var out [26]byte
	for i := 9; i >= 0; i-- {
		out[i] = crockford[v&31]
		v >>= 5
	}
	for i := 10; i < 26; i++ {
		out[i] = '0'
	}
	return string(out[:])
}
