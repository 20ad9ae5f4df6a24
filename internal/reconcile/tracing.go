package reconcile

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// endRunSpan records a reconcile run's counts on its span
// (internal/tracing) and ends it.
func endRunSpan(span trace.Span, run Run, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.tenant_id", run.TenantID), attribute.String("leadpipe.source_id", run.SourceID),
			attribute.String("leadpipe.reconcile.run_id", run.ID), attribute.Int("leadpipe.reconcile.pages", run.Pages),
			attribute.Int("leadpipe.reconcile.records", run.Records), attribute.Int("leadpipe.reconcile.new", run.New),
			attribute.Int("leadpipe.reconcile.known", run.Known))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
