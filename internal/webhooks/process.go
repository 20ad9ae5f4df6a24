package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// Processor maps stored deliveries (and reconciled records) to leads.
type Processor struct {
	DB      *sqlx.DB
	Sources *sources.Service
	Queue   Enqueuer
	Log     *slog.Logger
	Now     func() time.Time
	// AfterUpsert runs after a committed webhook upsert (e.g. queue Meta
	// enrichment). Optional.
	AfterUpsert func(ctx context.Context, tenantID string, src sources.Source, leadID string, lead kinds.Lead)

	Lifecycle // failure marking, archived tasks, the sweeper's cursors (failures.go, sweep.go)
}

func (p *Processor) now() time.Time { return p.Now().UTC().Truncate(time.Microsecond) }

// Result of applying one record.
type Result struct {
	LeadID string
	New    bool
	Lead   kinds.Lead
}

// Apply is THE path from a sender's record to a lead, shared by webhook
// deliveries and reconcile: map the raw bytes with the source's kind and
// upsert through the natural key, touching sender-owned fields only.
// Reconcile and enrichment records are no webhook sightings: times_seen
// stays as it is.
func Apply(ctx context.Context, tx db.Ext, tenantID string, src sources.Source, raw json.RawMessage, now time.Time) (Result, error) {
	return apply(ctx, tx, tenantID, src, raw, 0, now)
}

// apply maps and upserts one record that adds sightings to times_seen.
func apply(ctx context.Context, tx db.Ext, tenantID string, src sources.Source, raw json.RawMessage, sightings int, now time.Time) (Result, error) {
	k, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		return Result{}, err
	}
	l, err := k.Map(raw)
	if err != nil {
		return Result{}, err
	}
	id, created, err := leads.UpsertFromSender(ctx, tx, tenantID, src.ID, leads.SenderRecord{
		SourceRef: l.SourceRef, Email: l.Email, Name: l.Name, Phone: l.Phone, Company: l.Company,
		CreatedAt: l.CreatedAt, Tags: l.Tags, Payload: l.Payload, Sightings: sightings,
	}, now)
	return Result{LeadID: id, New: created, Lead: l}, err
}

// ErrAlreadyProcessed means another run processed the delivery first.
var errAlreadyProcessed = errors.New("delivery already processed")

// ProcessDelivery maps one stored delivery to its lead and marks it
// processed, in one transaction. Running it twice changes nothing: the
// delivery row is locked and a processed delivery is skipped.
func (p *Processor) ProcessDelivery(ctx context.Context, tenantID, deliveryRowID string) (Result, error) {
	var res Result
	var src sources.Source
	err := db.InTx(ctx, p.DB, func(tx *sqlx.Tx) error {
		var d Delivery
		err := tx.GetContext(ctx, &d, `SELECT `+deliveryCols+` FROM deliveries WHERE tenant_id = ? AND id = ? FOR UPDATE`,
			tenantID, deliveryRowID)
		if err != nil {
			return db.MapErr(err, "delivery not found", "")
		}
		if d.ProcessedAt != nil {
			return errAlreadyProcessed
		}
		if src, err = p.Sources.Get(ctx, tenantID, d.SourceID); err != nil {
			return err
		}
		now := p.now()
		// The delivery and the duplicates counted on it so far (the row is
		// locked: later ones wait, then the sightings sync adds them).
		if res, err = apply(ctx, tx, tenantID, src, d.Payload, 1+d.DupCount, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE deliveries SET state = 'processed', processed_at = ?, lead_id = ?, attempts = attempts + 1, last_error = NULL,
				dups_counted = ?
			WHERE tenant_id = ? AND id = ?`, now, res.LeadID, d.DupCount, tenantID, deliveryRowID)
		return err
	})
	if err != nil {
		return res, err
	}
	if p.AfterUpsert != nil {
		p.AfterUpsert(ctx, tenantID, src, res.LeadID, res.Lead)
	}
	return res, nil
}

// HandleProcess is the Asynq handler of TypeProcessDelivery.
func (p *Processor) HandleProcess(ctx context.Context, t *asynq.Task) error {
	pl, ok := decodeProcessPayload(t.Payload())
	if !ok {
		return fmt.Errorf("delivery:process: undecodable payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	_, err := p.ProcessDelivery(ctx, pl.TenantID, pl.DeliveryID)
	switch {
	case err == nil, errors.Is(err, errAlreadyProcessed):
		return nil
	case apperr.Is(err, apperr.NotFound):
		// The source is gone (a delivery that is gone itself changes nothing):
		// retrying cannot help.
		p.markFailed(ctx, pl.TenantID, pl.DeliveryID, err)
		return fmt.Errorf("delivery:process: %v: %w", err, asynq.SkipRetry)
	case errors.Is(err, kinds.ErrUnparseable), errors.Is(err, kinds.ErrNoNaturalKey), errors.Is(err, kinds.ErrUnknownKind),
		errors.Is(err, kinds.ErrInvalidConfig):
		// The stored bytes can never map: a dead letter, not a retry loop.
		p.markFailed(ctx, pl.TenantID, pl.DeliveryID, err)
		return fmt.Errorf("delivery:process: %v: %w", err, asynq.SkipRetry)
	}
	return err // transient (database): Asynq retries with backoff
}
