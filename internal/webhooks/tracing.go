package webhooks

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/sources"
	"leadpipe/internal/tracing"
)

// Spans of the ingest path and the worker (internal/tracing). Each helper
// does nothing unless its span records, so the path pays nothing when
// tracing is off.

// traceRequest names the tenant and source on the request's span.
func traceRequest(ctx context.Context, tenantID string, src sources.Source) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.tenant_id", tenantID), attribute.String("leadpipe.source_id", src.ID),
			attribute.String("leadpipe.source.kind", src.Kind))
	}
}

// traceClaim records one claim's outcome on the claim span.
func traceClaim(span trace.Span, d Delivery, isNew bool, orig string, err error) {
	if !span.IsRecording() {
		return
	}
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case isNew:
		span.AddEvent("accepted", trace.WithAttributes(attribute.String("leadpipe.delivery.id", d.ID),
			attribute.String("leadpipe.delivery.sender_id", d.DeliveryID)))
	default:
		span.AddEvent("duplicate", trace.WithAttributes(attribute.String("leadpipe.delivery.original", orig),
			attribute.String("leadpipe.delivery.sender_id", d.DeliveryID)))
	}
}

// startBatchTask starts the span of a batch task: linked to each
// delivery's request span (a batch holds many traces), and its child when
// they are all of one trace, so a lone delivery reads as one trace from
// the request to the outbound attempt.
func startBatchTask(ctx context.Context, b BatchPayload) (context.Context, trace.Span) {
	if !tracing.Enabled() || len(b.Traces) == 0 {
		return tracing.StartKind(ctx, "delivery.process-batch", trace.SpanKindConsumer)
	}
	links := make([]trace.SpanContext, 0, len(b.Traces))
	for _, tp := range b.Traces {
		links = append(links, tracing.Remote(tp))
	}
	if parent, ok := oneTrace(links); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, span := tracing.StartLinked(ctx, "delivery.process-batch", links)
	span.SetAttributes(attribute.String("leadpipe.tenant_id", b.TenantID), attribute.Int("leadpipe.batch.size", len(b.IDs)))
	return ctx, span
}

// oneTrace returns the first valid span context when every valid one is of
// the same trace.
func oneTrace(scs []trace.SpanContext) (trace.SpanContext, bool) {
	var first trace.SpanContext
	for _, sc := range scs {
		switch {
		case !sc.IsValid():
		case !first.IsValid():
			first = sc
		case sc.TraceID() != first.TraceID():
			return trace.SpanContext{}, false
		}
	}
	return first, first.IsValid()
}

// startTransaction starts the span of one processing transaction, which
// may hold the deliveries of several tasks: a child of their span when
// they are all of one trace, else linked to each.
func startTransaction(batch []*processReq) (context.Context, trace.Span) {
	ctx := context.Background()
	if !tracing.Enabled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	scs := make([]trace.SpanContext, len(batch))
	for i, r := range batch {
		scs[i] = r.trace
	}
	if parent, ok := oneTrace(scs); ok {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	}
	ctx, span := tracing.StartLinked(ctx, "delivery.process", scs)
	span.SetAttributes(attribute.Int("leadpipe.batch.size", len(batch)))
	return ctx, span
}
