package events

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/tracing"
)

// startAttempt starts an outbound attempt's client span in the trace of
// the change that emitted the event (its stored traceparent); the request
// then carries the attempt's own context as `traceparent`.
func startAttempt(ctx context.Context, ev EventRow, ep Endpoint, a *Attempt) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	if ev.Traceparent != nil {
		ctx = tracing.WithRemote(ctx, *ev.Traceparent)
	}
	ctx, span := tracing.StartKind(ctx, "event.attempt", trace.SpanKindClient)
	span.SetAttributes(attribute.String("leadpipe.tenant_id", a.TenantID), attribute.String("leadpipe.event.id", ev.ID),
		attribute.String("leadpipe.event.type", ev.Type), attribute.String("leadpipe.endpoint.id", ep.ID),
		attribute.Int("leadpipe.attempt", a.Attempt), attribute.String("http.request.method", "POST"))
	return ctx, span
}

// endAttempt records the attempt's outcome and ends its span.
func endAttempt(span trace.Span, a *Attempt) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.attempt.outcome", a.Outcome))
		if a.Status != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", *a.Status))
		}
		if a.Error != nil {
			span.SetStatus(codes.Error, *a.Error)
		}
	}
	span.End()
}
