package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/apperr"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/tracing"
	"leadpipe/internal/webhooks/kinds"
)

// The webhooks area's Asynq tasks: their types, payloads and constructors,
// the payload decoders and the handlers (as reconcile and monitor keep
// theirs). The final-failure handler is in failures.go, the sweeper in
// sweep.go.

// TypeProcessDelivery is the task that maps a stored delivery to a lead.
const TypeProcessDelivery = "delivery:process"

// ProcessPayload names the delivery to process.
type ProcessPayload struct {
	TenantID   string `json:"tenant_id"`
	DeliveryID string `json:"delivery_id"` // our row id
	// Runs is the delivery's attempts when the task was queued. The
	// task's final failure marks the delivery failed only while attempts
	// still says so: once a reprocess has reset a failed delivery (its
	// failure counted an attempt), a late failure of the old task (the
	// error handler, the archive settle) leaves it alone.
	Runs int `json:"runs,omitempty"`
}

// NewProcessTask builds the task of a delivery whose attempts are runs;
// its TaskID is the delivery row id, so the ingest path and the sweeper
// never queue one delivery twice.
func NewProcessTask(tenantID, deliveryRowID string, runs int) (*asynq.Task, []asynq.Option) {
	b, _ := json.Marshal(ProcessPayload{TenantID: tenantID, DeliveryID: deliveryRowID, Runs: runs})
	return asynq.NewTask(TypeProcessDelivery, b), []asynq.Option{
		asynq.TaskID(deliveryRowID), asynq.Queue(jobs.QueueCritical), asynq.MaxRetry(12), asynq.Timeout(time.Minute),
	}
}

// TypeProcessBatch is the task that maps a batch of one tenant's stored
// deliveries to leads (the dispatcher's; the sweeper, a reprocess and the
// tasks of older versions queue TypeProcessDelivery).
const TypeProcessBatch = "delivery:process-batch"

// BatchPayload names one tenant's deliveries to process.
type BatchPayload struct {
	TenantID string   `json:"tenant_id"`
	IDs      []string `json:"ids"` // our row ids
	// Runs is each delivery's attempts when the task was queued (see
	// ProcessPayload.Runs); nil means 0 for all.
	Runs []int `json:"runs,omitempty"`
	// Traces is each delivery's W3C traceparent (the request that claimed
	// it; internal/tracing), nil when none was traced.
	Traces []string `json:"traces,omitempty"`
}

// each returns the batch as one ProcessPayload per delivery.
func (b BatchPayload) each() []ProcessPayload {
	out := make([]ProcessPayload, len(b.IDs))
	for i, id := range b.IDs {
		out[i] = ProcessPayload{TenantID: b.TenantID, DeliveryID: id}
		if i < len(b.Runs) {
			out[i].Runs = b.Runs[i]
		}
	}
	return out
}

// NewBatchTask builds the task of a batch of one tenant's deliveries
// (runs: see BatchPayload.Runs). It has no TaskID: a delivery in two
// tasks is processed once (the rows are locked, one no longer `received`
// is skipped).
func NewBatchTask(tenantID string, ids []string, runs []int) (*asynq.Task, []asynq.Option) {
	return newBatchTask(BatchPayload{TenantID: tenantID, IDs: ids, Runs: runs})
}

func newBatchTask(p BatchPayload) (*asynq.Task, []asynq.Option) {
	b, _ := json.Marshal(p)
	return asynq.NewTask(TypeProcessBatch, b), []asynq.Option{
		asynq.Queue(jobs.QueueCritical), asynq.MaxRetry(12), asynq.Timeout(time.Minute),
	}
}

// TypeSweep re-enqueues deliveries left unprocessed (Redis was down, a
// worker crashed between commit and enqueue) and settles archived tasks.
const TypeSweep = "delivery:sweep"

// decodeProcessPayload reads a processing task's payload.
func decodeProcessPayload(b []byte) (ProcessPayload, bool) {
	var pl ProcessPayload
	if err := json.Unmarshal(b, &pl); err != nil || !ids.Valid(pl.TenantID) || !ids.Valid(pl.DeliveryID) {
		return pl, false
	}
	return pl, true
}

// decodeBatchPayload reads a batch task's payload.
func decodeBatchPayload(b []byte) (BatchPayload, bool) {
	var pl BatchPayload
	if err := json.Unmarshal(b, &pl); err != nil || !ids.Valid(pl.TenantID) || len(pl.IDs) == 0 {
		return pl, false
	}
	for _, id := range pl.IDs {
		if !ids.Valid(id) {
			return pl, false
		}
	}
	return pl, true
}

// taskDeliveries returns the deliveries a processing task (either type)
// names.
func taskDeliveries(typ string, payload []byte) ([]ProcessPayload, bool) {
	switch typ {
	case TypeProcessDelivery:
		if pl, ok := decodeProcessPayload(payload); ok {
			return []ProcessPayload{pl}, true
		}
	case TypeProcessBatch:
		if b, ok := decodeBatchPayload(payload); ok {
			return b.each(), true
		}
	}
	return nil, false
}

// HandleProcess is the Asynq handler of TypeProcessDelivery.
func (p *Processor) HandleProcess(ctx context.Context, t *asynq.Task) error {
	pl, ok := decodeProcessPayload(t.Payload())
	if !ok {
		return fmt.Errorf("delivery:process: undecodable payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	ctx, span := tracing.StartKind(ctx, "delivery.process-one", trace.SpanKindConsumer)
	defer span.End()
	_, err := p.ProcessDelivery(ctx, pl.TenantID, pl.DeliveryID)
	return p.settle(ctx, pl, err)
}

// HandleBatch is the Asynq handler of TypeProcessBatch: the batch's
// deliveries go to the batch loop together, each with its own result. A
// delivery that can never be processed is marked failed and fails only
// itself; a transient error (the database) fails the task, and Asynq's
// retry runs the batch again, where the deliveries processed already are
// skipped.
func (p *Processor) HandleBatch(ctx context.Context, t *asynq.Task) error {
	b, ok := decodeBatchPayload(t.Payload())
	if !ok {
		return fmt.Errorf("delivery:process-batch: undecodable payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	pls := b.each()
	ctx, span := startBatchTask(ctx, b)
	defer span.End()
	results := p.processMany(ctx, b.TenantID, b.IDs)
	var retry error
	n := 0
	for i, res := range results {
		if err := p.settle(ctx, pls[i], res.err); err != nil && !errors.Is(err, asynq.SkipRetry) {
			retry, n = err, n+1
		}
	}
	if retry != nil {
		return fmt.Errorf("delivery:process-batch: %d of %d deliveries: %w", n, len(pls), retry)
	}
	return nil
}

// settle turns one delivery's processing error into the task's answer:
// nil when it is done (or another run did it), SkipRetry after marking it
// failed when retrying cannot help, the error itself when it is transient
// (the database: Asynq retries with backoff).
func (p *Processor) settle(ctx context.Context, pl ProcessPayload, err error) error {
	switch {
	case err == nil, errors.Is(err, errAlreadyProcessed):
		return nil
	case apperr.Is(err, apperr.NotFound):
		// The source is gone (a delivery that is gone itself changes nothing):
		// retrying cannot help.
		p.failTask(ctx, pl, err)
		return fmt.Errorf("delivery:process: %v: %w", err, asynq.SkipRetry)
	case errors.Is(err, kinds.ErrUnparseable), errors.Is(err, kinds.ErrNoNaturalKey), errors.Is(err, kinds.ErrUnknownKind),
		errors.Is(err, kinds.ErrInvalidConfig):
		// The stored bytes can never map: a dead letter, not a retry loop.
		p.failTask(ctx, pl, err)
		return fmt.Errorf("delivery:process: %v: %w", err, asynq.SkipRetry)
	}
	return err
}
