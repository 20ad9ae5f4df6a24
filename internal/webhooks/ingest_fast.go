package webhooks

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/monitor"
)

// answerKnownDuplicate answers a duplicate whose original this process
// knows to be committed without the database (the fast path, dupfast.go):
// done reports that orig is the answer. When it is not done, orig is our row
// id of an original it knows but could not tally (the claim then counts
// it through the primary key), or "" for a delivery id it does not know.
func (in *Ingest) answerKnownDuplicate(ctx context.Context, tenantID, sourceID, deliveryID string, now time.Time) (orig string, done bool) {
	orig, done = in.Claimer.Answer(tenantID, sourceID, deliveryID, now)
	if !done {
		return orig, false
	}
	in.Stats.Add(tenantID, sourceID, monitor.Deliveries, 1, now)
	in.Stats.Add(tenantID, sourceID, monitor.Duplicates, 1, now)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.delivery.outcome", "duplicate"), attribute.String("leadpipe.delivery.original", orig),
			attribute.Bool("leadpipe.delivery.from_memory", true))
	}
	return orig, true
}
