package leads

import (
	"context"
	"maps"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/db"
	"leadpipe/internal/tracing"
)

// SenderBatch is one batch of sender records for WriteSenders.
type SenderBatch struct {
	Records []BatchRecord
	Now     time.Time
	// Reserve is the pool (db.OpenOneTrip) whose one-round-trip
	// transactions take the new leads' round-robin positions apart from
	// the caller's (PendingLeads.Reserve); nil: in the caller's
	// transaction, the position row locked to its commit.
	Reserve *sqlx.DB
	// Meanwhile, when set, runs in the caller's transaction after the
	// records' upsert, while the new leads' positions are being reserved
	// and before the new leads are inserted: the worker marks its
	// deliveries there (the shorter the stretch from reservation to
	// commit, the less concurrent batches wait). The outcomes of new
	// leads have no OwnerID yet.
	Meanwhile func(outcomes []UpsertOutcome) error
}

// WriteSenders is the sender write, the one way records of senders
// (webhook deliveries, reconcile and enrichment, CSV imports) reach their
// leads, in the caller's transaction: the upsert through the natural key
// with its tombstones and merge pointers (UpsertFromSenderBatchDeferred),
// the new leads' assignment and first-response clock
// (PendingLeads.Insert), the records' attribution and consent
// (RecordTouches), then the timeline, notifications and outbound events
// (SenderChanged). The outcomes are in the records' order.
func (s *Service) WriteSenders(ctx context.Context, x db.Ext, tenantID string, b SenderBatch) ([]UpsertOutcome, error) {
	if len(b.Records) == 0 {
		if b.Meanwhile != nil {
			return nil, b.Meanwhile(nil)
		}
		return nil, nil
	}
	_, span := tracing.Start(ctx, "leads.upsert")
	out, pending, err := UpsertFromSenderBatchDeferred(ctx, x, tenantID, b.Records, b.Now)
	traceUpsert(span, tenantID, out, err)
	if err != nil {
		return nil, err
	}
	pending.Reserve(ctx, b.Reserve)
	if b.Meanwhile != nil {
		if err := b.Meanwhile(out); err != nil {
			return nil, err
		}
	}
	if err := pending.Insert(ctx, x, b.Reserve); err != nil {
		return nil, err
	}
	if err := RecordTouches(ctx, x, tenantID, touchesOf(b.Records, out)); err != nil {
		return nil, err
	}
	ectx, espan := tracing.Start(ctx, "outbox.emit")
	err = s.SenderChanged(ectx, x, tenantID, out)
	tracing.End(espan, err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// touchesOf are the records' attribution and consent on the leads they
// reached (a record of an erased lead reached none). A record's own touch
// (Last) is dated by the record ("at": the time of its order key, the
// sender's event time or when Leadpipe received it, unless the record
// dates it itself) and names its source, so the last touch follows record
// order for every kind.
func touchesOf(recs []BatchRecord, out []UpsertOutcome) []TouchRecord {
	var ts []TouchRecord
	for i, r := range recs {
		if r.Touch == nil || out[i].LeadID == "" {
			continue
		}
		t := *r.Touch
		t.LeadID = out[i].LeadID
		if len(t.Last) > 0 && (t.Last["at"] == "" || t.Last["source_id"] == "") {
			last := maps.Clone(t.Last)
			if last["at"] == "" {
				if at, ok := orderKeyTime(r.OrderKey); ok {
					last["at"] = at.Format(time.RFC3339Nano)
				}
			}
			if last["source_id"] == "" && r.SourceID != "" {
				last["source_id"] = r.SourceID
			}
			t.Last = last
		}
		ts = append(ts, t)
	}
	return ts
}

// orderKeyTime is the time an order key starts with (OrderKey).
func orderKeyTime(key string) (time.Time, bool) {
	if len(key) < 16 {
		return time.Time{}, false
	}
	us, err := strconv.ParseInt(key[:16], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}

// traceUpsert records what the batch upsert did to the leads, and ends its
// span.
func traceUpsert(span trace.Span, tenantID string, outcomes []UpsertOutcome, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.tenant_id", tenantID), attribute.Int("leadpipe.leads", len(outcomes)))
		for _, o := range outcomes {
			span.AddEvent(o.Kind, trace.WithAttributes(attribute.String("leadpipe.lead.id", o.LeadID)))
		}
	}
	tracing.End(span, err)
}
