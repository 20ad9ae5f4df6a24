package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/apperr"
	"leadpipe/internal/batch"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// Processor maps stored deliveries (and reconciled records) to leads.
//
// Deliveries are processed in batches: each Asynq task's handler hands its
// deliveries to the processor (a TypeProcessBatch task holds what the
// dispatcher gathered, a TypeProcessDelivery task one) and waits for each
// one's own result, and what the handlers hand in at the same time goes
// through one transaction of up to MaxBatch deliveries (see processBatch).
// Asynq's per-task work (dequeue, lease, completion) is paid once per
// batch task, not once per delivery.
type Processor struct {
	DB      *sqlx.DB
	Sources *sources.Service
	Queue   Enqueuer
	Log     *slog.Logger
	Now     func() time.Time
	// Leads writes each batch's records to their leads, in the batch's
	// transaction (leads.Service.WriteSenders: upsert, assignment,
	// attribution, outbound events). An error rolls the batch back (its
	// deliveries are retried). nil: a leads.Service with no observers.
	Leads LeadWriter
	// Reserve is the pool (db.OpenOneTrip) whose one-round-trip
	// transactions reserve a batch's round-robin positions apart from the
	// batch's own (leads.PendingLeads.Insert). nil, or AssignInTx: the
	// batch takes them in its own transaction, the position row locked to
	// its commit (benchingest -assign-intx compares the two).
	Reserve    *sqlx.DB
	AssignInTx bool
	// Enricher is told of each committed webhook upsert (reconcile queues
	// Meta enrichment). nil: nobody.
	Enricher Enricher
	// Committed is told, after a batch's transaction committed, of each
	// record's result (the live inbox publishes the new leads); it must
	// not block. nil: nobody.
	Committed func(tenantID string, r Result)

	MaxBatch int // deliveries per transaction (default 128)
	Runners  int // batches in flight at most, when they are full (default 2; see loop)
	// Gather is how long a batch waits for more deliveries once it has
	// its first (default 20 ms; negative: never wait). A transaction of 100
	// leads costs the database far less per lead than ten of 10, and the
	// CPU it saves is the ingest's; a lead readable 20 ms later is well
	// inside the second docs/BENCHMARKS.md holds it to.
	Gather time.Duration

	Lifecycle // failure marking, archived tasks, the sweeper's cursors (failures.go, sweep.go)

	once    sync.Once
	batches *batch.Loop[*processReq]
}

// LeadWriter writes a batch of sender records to their leads in the
// caller's transaction: leads.Service.WriteSenders.
type LeadWriter interface {
	WriteSenders(ctx context.Context, x db.Ext, tenantID string, b leads.SenderBatch) ([]leads.UpsertOutcome, error)
}

// writerOr is w, or a leads.Service that tells nobody.
func writerOr(w LeadWriter) LeadWriter {
	if w == nil {
		return &leads.Service{}
	}
	return w
}

// Enricher is told of a committed webhook upsert.
type Enricher interface {
	AfterWebhookUpsert(ctx context.Context, tenantID string, src sources.Source, leadID string, lead kinds.Lead)
}

type processReq struct {
	tenantID, id string
	trace        trace.SpanContext // the task's span (invalid when tracing is off)
	done         chan processRes
}

type processRes struct {
	res Result
	err error
}

func (p *Processor) now() time.Time { return clock.Read(p.Now) }

// Result of applying one record.
type Result struct {
	LeadID  string
	New     bool
	Outcome string // leads.OutcomeCreated, …
	Lead    kinds.Lead
	OwnerID string // a new lead an assignment rule gave an owner
}

// Apply is THE path from a sender's record to a lead, shared by webhook
// deliveries and reconcile: map the raw bytes with the source's kind and
// write it with w (leads.Service.WriteSenders; nil: nobody is told)
// through the natural key, touching sender-owned fields only, in record
// order (the sender's event time where the record carries one, else now:
// a pulled record is received now). Reconcile and enrichment records are
// no webhook sightings: times_seen stays as it is.
func Apply(ctx context.Context, tx db.Ext, w LeadWriter, tenantID string, src sources.Source, raw json.RawMessage, now time.Time) (Result, error) {
	k, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		return Result{}, err
	}
	l, err := k.Map(raw)
	if err != nil {
		return Result{}, err
	}
	out, err := writerOr(w).WriteSenders(ctx, tx, tenantID, leads.SenderBatch{
		Records: []leads.BatchRecord{batchRecord(src.ID, l, 0, orderKey(l, now, ids.New()))}, Now: now})
	if err != nil {
		return Result{}, err
	}
	return result(out[0], l), nil
}

// result is what a record did, as Apply and the worker tell it.
func result(o leads.UpsertOutcome, l kinds.Lead) Result {
	return Result{LeadID: o.LeadID, New: o.Kind == leads.OutcomeCreated, Outcome: o.Kind, Lead: l, OwnerID: o.OwnerID}
}

// batchRecord is a mapped record of a source as the leads area writes it.
func batchRecord(sourceID string, l kinds.Lead, sightings int, key string) leads.BatchRecord {
	return leads.BatchRecord{SourceID: sourceID, Touch: touchRecord(l), SenderRecord: leads.SenderRecord{SourceRef: l.SourceRef,
		Email: l.Email, Name: l.Name, FirstName: l.FirstName, LastName: l.LastName, Phone: l.Phone, Company: l.Company,
		CreatedAt: l.CreatedAt, Tags: l.Tags, Payload: l.Payload,
		Sightings: sightings, OrderKey: key}}
}

// orderKey is a record's place in its lead's history: the sender's event
// time where the record has one, else when Leadpipe received it; the
// delivery id breaks ties in receipt order.
func orderKey(l kinds.Lead, received time.Time, tiebreak string) string {
	t := received
	if l.EventTime != nil {
		t = *l.EventTime
	}
	return leads.OrderKey(t, tiebreak)
}

// ErrAlreadyProcessed means another run processed the delivery first.
var errAlreadyProcessed = errors.New("delivery already processed")

// ProcessDelivery maps one stored delivery to its lead and marks it
// processed, in the transaction of the batch it joins. Running it twice
// changes nothing: the delivery rows are locked and a delivery no longer
// 'received' is skipped.
func (p *Processor) ProcessDelivery(ctx context.Context, tenantID, deliveryRowID string) (Result, error) {
	res := p.processMany(ctx, tenantID, []string{deliveryRowID})
	return res[0].res, res[0].err
}

// processMany hands a tenant's deliveries to the batch loop at once and
// waits for each one's own result.
func (p *Processor) processMany(ctx context.Context, tenantID string, ids []string) []processRes {
	p.once.Do(p.start)
	reqs := make([]*processReq, len(ids))
	out := make([]processRes, len(ids))
	sc := trace.SpanContextFromContext(ctx) // the task's span: the parent of their transaction

	sent := 0
send:
	for ; sent < len(ids); sent++ {
		reqs[sent] = &processReq{tenantID: tenantID, id: ids[sent], trace: sc, done: make(chan processRes, 1)}
		if p.batches.Add(ctx, reqs[sent]) != nil {
			break send
		}
	}
	for i := range reqs {
		if i >= sent {
			out[i] = processRes{err: ctx.Err()}
			continue
		}
		select {
		case out[i] = <-reqs[i].done:
		case <-ctx.Done():
			// The batch goes on; its outcome is in the database either way.
			out[i] = processRes{err: ctx.Err()}
		}
	}
	return out
}

func (p *Processor) start() {
	p.batches = batch.New(p.loopOptions(), nil, p.run)
}

// loopOptions shape the batches. A batch takes what is waiting and what
// comes within Gather of its first delivery, and goes on gathering while
// another batch is in flight (up to MaxBatch). Batches run one at a time
// unless they are full: a full batch means a backlog, and then up to
// Runners run at once. Under a steady load one batch at a time leaves the
// database's other core to ingest (docs/BENCHMARKS.md, "The worker's
// batches"); a backlog drains with all of them.
func (p *Processor) loopOptions() batch.Options {
	if p.MaxBatch <= 0 {
		p.MaxBatch = 128
	}
	if p.Gather == 0 {
		p.Gather = 20 * time.Millisecond
	}
	if p.Runners <= 0 {
		p.Runners = 2
	}
	return batch.Options{MaxItems: p.MaxBatch, Linger: max(p.Gather, 0), Workers: p.Runners, Beside: batch.Never}
}

// run processes a batch; when the database refuses it for a reason one
// delivery may cause (a value it will not store), each delivery is retried
// alone, so a poison delivery fails only itself.
func (p *Processor) run(batch []*processReq) {
	tctx, span := startTransaction(batch)
	defer span.End()
	ctx, cancel := context.WithTimeout(tctx, time.Minute)
	defer cancel()
	results, err := p.processBatch(ctx, batch)
	if err != nil && len(batch) > 1 && !db.Retryable(err) && !apperr.IsUnavailable(err) && ctx.Err() == nil {
		for _, r := range batch {
			res, rerr := p.processBatch(ctx, []*processReq{r})
			if rerr != nil {
				r.done <- processRes{err: rerr}
				continue
			}
			r.done <- res[0]
		}
		return
	}
	for i, r := range batch {
		if err != nil {
			r.done <- processRes{err: err}
			continue
		}
		r.done <- results[i]
	}
}

// permanent reports a delivery whose stored bytes can never map.
func permanent(err error) bool {
	return errors.Is(err, kinds.ErrUnparseable) || errors.Is(err, kinds.ErrNoNaturalKey) || errors.Is(err, kinds.ErrUnknownKind)
}

// batchItem is one delivery of a batch as the transaction sees it.
type batchItem struct {
	req  *processReq
	d    *Delivery
	src  sources.Source
	lead kinds.Lead
	res  processRes
}

// processBatch is one transaction: per tenant (processTenant) lock its
// deliveries, map them, write the records with Leads and mark the
// deliveries processed or failed; commit; then count the failures and
// tell the Enricher and Committed. A delivery that cannot map is marked
// failed in the same transaction and fails only itself.
func (p *Processor) processBatch(ctx context.Context, batch []*processReq) ([]processRes, error) {
	var items, after, failed []*batchItem
	var now time.Time
	err := db.InTx(ctx, p.DB, func(tx *sqlx.Tx) error {
		items, after, failed = items[:0], after[:0], failed[:0]
		now = p.now()
		byTenant := map[string][]*batchItem{}
		for _, r := range batch {
			it := &batchItem{req: r}
			items = append(items, it)
			byTenant[r.tenantID] = append(byTenant[r.tenantID], it)
		}
		for _, tenantID := range slices.Sorted(maps.Keys(byTenant)) {
			f, a, err := p.processTenant(ctx, tx, tenantID, byTenant[tenantID], now)
			if err != nil {
				return err
			}
			failed, after = append(failed, f...), append(after, a...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Each failed delivery was locked and still 'received' in the
	// transaction, so failUnmappable changed it: counted here once, like the
	// task handler's marking (which now finds it failed and counts nothing).
	for _, it := range failed {
		p.countFailure(ctx, it.req.tenantID, it.d.SourceID, it.req.id, it.res.err.Error(), now)
	}
	if p.Enricher != nil {
		for _, it := range after {
			p.Enricher.AfterWebhookUpsert(ctx, it.req.tenantID, it.src, it.res.res.LeadID, it.lead)
		}
	}
	if p.Committed != nil {
		for _, it := range after {
			p.Committed(it.req.tenantID, it.res.res)
		}
	}
	out := make([]processRes, len(items))
	for i, it := range items {
		out[i] = it.res
	}
	return out, nil
}

// processTenant is a tenant's part of a batch's transaction: lock its
// deliveries (one query), map them (mapDeliveries), write the records
// (Leads.WriteSenders) and, while their new leads' round-robin positions
// are reserved apart (leads.SenderBatch.Meanwhile, so that concurrent
// batches of the tenant do not wait on the rule's position row to their
// commits: docs/BENCHMARKS.md, "Assignment rules in the drain"), mark the
// deliveries processed (one statement) or failed. It returns the
// deliveries marked failed and those whose lead the committed batch has
// (not erased).
func (p *Processor) processTenant(ctx context.Context, tx db.Ext, tenantID string, its []*batchItem, now time.Time) (failed, after []*batchItem, err error) {
	ids := make([]string, len(its))
	for i, it := range its {
		ids[i] = it.req.id
	}
	ds, err := lockDeliveries(ctx, tx, tenantID, ids)
	if err != nil {
		return nil, nil, err
	}
	recs, mapped, failed, err := p.mapDeliveries(ctx, tenantID, its, ds)
	if err != nil {
		return nil, nil, err
	}
	mark := func(outcomes []leads.UpsertOutcome) error {
		var dropped []string
		rows := make([]Delivery, len(mapped))
		for i, it := range mapped {
			it.res.res = result(outcomes[i], it.lead)
			rows[i] = Delivery{ID: it.d.ID, Outcome: &outcomes[i].Kind, DupsCounted: it.d.DupCount}
			if id := outcomes[i].LeadID; id != "" { // a record of an erased lead reached none
				rows[i].LeadID = &id
			}
			if it.res.res.Outcome == leads.OutcomeErased {
				// A record of an erased lead is acknowledged (the sender
				// stops) and dropped: processed, no lead, no payload.
				dropped = append(dropped, it.d.ID)
			}
		}
		if err := markProcessed(ctx, tx, tenantID, rows, now); err != nil {
			return err
		}
		if err := dropPayloads(ctx, tx, tenantID, dropped); err != nil {
			return err
		}
		for _, it := range failed {
			if err := failUnmappable(ctx, tx, tenantID, it.req.id, it.res.err, now); err != nil {
				return err
			}
		}
		return nil
	}
	outcomes, err := writerOr(p.Leads).WriteSenders(ctx, tx, tenantID,
		leads.SenderBatch{Records: recs, Now: now, Reserve: p.reserve(), Meanwhile: mark})
	if err != nil {
		return nil, nil, err
	}
	for i, it := range mapped {
		it.res.res.OwnerID = outcomes[i].OwnerID
		if it.res.res.Outcome != leads.OutcomeErased {
			after = append(after, it)
		}
	}
	return failed, after, nil
}

// mapDeliveries maps a tenant's locked deliveries to records, building
// each source's mapper once. A delivery gone, no longer 'received' or
// twice in the batch gets its error and no record; one that can never map
// (unknown kind, unparseable, no natural key) is among failed.
func (p *Processor) mapDeliveries(ctx context.Context, tenantID string, its []*batchItem, ds map[string]*Delivery) (
	recs []leads.BatchRecord, mapped, failed []*batchItem, err error) {
	mappers := map[string]kinds.Kind{}
	srcs := map[string]sources.Source{}
	inBatch := make(map[string]bool, len(its))
	for _, it := range its {
		d, ok := ds[it.req.id]
		switch {
		case inBatch[it.req.id]:
			// The same delivery twice in one batch (a batch task and
			// the sweeper's task of it, run at once): one run counts.
			it.res.err = errAlreadyProcessed
			continue
		case !ok:
			it.res.err = apperr.New(apperr.NotFound, "delivery not found")
			continue
		case d.State != "received":
			it.res.err = errAlreadyProcessed
			continue
		}
		inBatch[it.req.id] = true
		it.d = d
		src, ok := srcs[d.SourceID]
		if !ok {
			if src, err = p.Sources.Get(ctx, tenantID, d.SourceID); err != nil && !apperr.Is(err, apperr.NotFound) {
				return nil, nil, nil, err
			}
			srcs[d.SourceID] = src
			if err == nil {
				if mappers[d.SourceID], err = kinds.New(src.Kind, src.Config); err != nil {
					mappers[d.SourceID] = nil
				}
			}
		}
		it.src = src
		k := mappers[d.SourceID]
		if src.ID == "" {
			it.res.err = apperr.New(apperr.NotFound, "source not found")
			continue
		}
		if k == nil {
			it.res.err = fmt.Errorf("source %s: %w", src.ID, kinds.ErrUnknownKind)
			failed = append(failed, it)
			continue
		}
		l, err := k.Map(d.Payload)
		if err != nil {
			it.res.err = err
			if permanent(err) {
				failed = append(failed, it)
			}
			continue
		}
		it.lead = l
		// The delivery and the duplicates counted on it so far (the
		// row is locked: later ones wait, then Sightings adds them).
		recs = append(recs, batchRecord(d.SourceID, l, 1+d.DupCount, orderKey(l, d.ReceivedAt, d.ID)))
		mapped = append(mapped, it)
	}
	return recs, mapped, failed, nil
}

// lockDeliveries reads and locks a tenant's deliveries by row id.
func lockDeliveries(ctx context.Context, tx db.Ext, tenantID string, ids []string) (map[string]*Delivery, error) {
	var ds []Delivery
	if err := db.SelectIn(ctx, tx, &ds, `SELECT `+deliveryCols+` FROM deliveries WHERE tenant_id = ? AND id IN (?) ORDER BY id FOR UPDATE`, tenantID, ids); err != nil {
		return nil, err
	}
	out := make(map[string]*Delivery, len(ds))
	for i := range ds {
		out[ds[i].ID] = &ds[i]
	}
	return out, nil
}

// A delivery row is stored with 64 spare bytes (migration 0471) and gives
// them up as it grows, so InnoDB can rewrite it in its own space instead
// of reorganising its page: 48 (with their length byte) when it is
// processed or fails, which writes processed_at, lead_id, outcome and a
// state one byte longer (45 bytes, an error message aside); 17 when its
// first duplicate sets dup_first_at and dup_last_at (16). Either may come
// first; whatever is left when the other comes goes.
const (
	spareForFinish = `spare = IF(LENGTH(spare) > 48, LEFT(spare, LENGTH(spare) - 48), NULL)`
	// spareForFirstDuplicate must come before the assignment of
	// dup_first_at in the claim's ON DUPLICATE KEY UPDATE (MariaDB
	// assigns left to right, each seeing the ones before).
	spareForFirstDuplicate = `spare = IF(dup_first_at IS NULL, IF(LENGTH(spare) > 17, LEFT(spare, LENGTH(spare) - 17), NULL), spare)`
)

// reserve is the pool the batches' round-robin reservations go apart on
// (nil: in the batch's own transaction).
func (p *Processor) reserve() *sqlx.DB {
	if p.AssignInTx {
		return nil
	}
	return p.Reserve
}

// markProcessed marks deliveries processed in one statement: each row's
// lead (nil: none), outcome and the duplicates times_seen now holds
// (DupsCounted).
func markProcessed(ctx context.Context, x db.Ext, tenantID string, rows []Delivery, now time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	var lead, outcome, dups strings.Builder
	var la, oa, da, ids []any
	for _, r := range rows {
		lead.WriteString(" WHEN ? THEN ?")
		la = append(la, r.ID, r.LeadID)
		outcome.WriteString(" WHEN ? THEN ?")
		oa = append(oa, r.ID, r.Outcome)
		dups.WriteString(" WHEN ? THEN ?")
		da = append(da, r.ID, r.DupsCounted)
		ids = append(ids, r.ID)
	}
	args := []any{now}
	args = append(args, la...)
	args = append(args, oa...)
	args = append(args, da...)
	args = append(args, tenantID)
	args = append(args, ids...)
	_, err := x.ExecContext(ctx, `UPDATE deliveries SET state = 'processed', processed_at = ?, attempts = attempts + 1, last_error = NULL, `+spareForFinish+`,
			lead_id = CASE id`+lead.String()+` END,
			outcome = CASE id`+outcome.String()+` END,
			dups_counted = CASE id`+dups.String()+` END
		WHERE tenant_id = ? AND id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	return err
}

// dropPayloads empties the payloads of deliveries whose record belongs to
// an erased lead (docs/ARCHITECTURE.md, "Personal data"); the rows stay, so duplicates of them
// are still answered as duplicates.
func dropPayloads(ctx context.Context, x db.Ext, tenantID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{tenantID}
	for _, id := range ids {
		args = append(args, id)
	}
	_, err := x.ExecContext(ctx, `UPDATE deliveries SET payload = '' WHERE tenant_id = ? AND id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	return err
}

// failUnmappable records, in the batch's transaction, that a delivery can
// never be processed (state 'failed', the cause in last_error), so the
// sweeper stops re-queuing it. Only a delivery still 'received' changes.
func failUnmappable(ctx context.Context, x db.Ext, tenantID, id string, cause error, now time.Time) error {
	_, err := setFailed(ctx, x, tenantID, id, nil, 0, cause.Error(), now)
	return err
}
