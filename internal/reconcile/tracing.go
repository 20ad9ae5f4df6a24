package reconcile

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/tracing"
)

// endRunSpan records a reconcile run's counts on its span
// (internal/tracing) and ends it.
func endRunSpan(span trace.Span, run Run, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.tenant_id", run.TenantID), attribute.String("leadpipe.source_id", run.SourceID),
			attribute.String("leadpipe.reconcile.run_id", run.ID), attribute.Int("leadpipe.reconcile.pages", run.Pages),
			attribute.Int("leadpipe.reconcile.records", run.Records), attribute.Int("leadpipe.reconcile.new", run.New),
			attribute.Int("leadpipe.reconcile.known", run.Known))
	}
	tracing.End(span, err)
}
