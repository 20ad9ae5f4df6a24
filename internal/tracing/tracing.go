// Package tracing is Leadpipe's OpenTelemetry tracing: off unless an OTLP
// endpoint is configured through the standard OTEL_* variables (docs/OPERATING.md,
// "Tracing"). When it is off, Start returns its context unchanged and a
// span that does nothing, with no allocation, so the ingest path pays
// nothing for it; callers build attributes only when Enabled.
//
// Spans: webhook request → verify → claim (internal/webhooks ingest);
// batch task → lead upsert → outbox event (the worker); outbound attempt
// (internal/events), which sends its context as `traceparent`; reconcile
// runs. A delivery's context travels to the worker in the Asynq task
// payload as a W3C traceparent; a batch span links to each delivery's.
package tracing

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of Leadpipe's spans.
const Name = "leadpipe"

var (
	on     atomic.Bool
	tracer atomic.Pointer[trace.Tracer]
	none   trace.Span = noop.Span{} // boxed once: returning it allocates nothing
	tc                = propagation.TraceContext{}
)

// Enabled reports whether spans are recorded.
func Enabled() bool { return on.Load() }

// Configured reports whether the OTEL_* variables (read through getenv)
// turn tracing on: an OTLP endpoint is set, OTEL_SDK_DISABLED is not true
// and OTEL_TRACES_EXPORTER is not none.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" && !strings.EqualFold(e, "otlp") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup turns tracing on when Configured: spans go to the OTLP/HTTP
// endpoint, sampled by OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG
// (default parentbased_always_on), named by OTEL_SERVICE_NAME (default
// service) and OTEL_RESOURCE_ATTRIBUTES; the exporter reads its own
// OTEL_EXPORTER_OTLP_* settings. The returned function flushes and stops
// it (a no-op when off).
func Setup(ctx context.Context, getenv func(string) string, service string) (func(context.Context) error, error) {
	if !Configured(getenv) {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, err
	}
	if name := getenv("OTEL_SERVICE_NAME"); name != "" { // the variable wins over the default name
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(name)))
	}
	// The SDK reads OTEL_TRACES_SAMPLER(_ARG) itself when no sampler is given.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return func(ctx context.Context) error {
		Install(nil)
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}

// Install records spans with tp from now on (nil: off again). Tests use it
// with the SDK's in-memory exporter.
func Install(tp trace.TracerProvider) {
	if tp == nil {
		on.Store(false)
		return
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(tc)
	t := tp.Tracer(Name)
	tracer.Store(&t)
	on.Store(true)
}

// Start starts an internal span (a no-op span, ctx unchanged, when
// tracing is off). No variadic options: their slice would be allocated on
// the off path too.
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	if !on.Load() || unsampled(ctx) {
		return ctx, none
	}
	return (*tracer.Load()).Start(ctx, name)
}

// unsampled reports a context whose span was not sampled: its children
// would not be either (every sampler OTEL_TRACES_SAMPLER names decides by
// the parent or by the trace id, which they share), so they are not
// started. Sampling 1 % then costs the other 99 % one span each.
func unsampled(ctx context.Context) bool {
	sc := trace.SpanContextFromContext(ctx)
	return sc.IsValid() && !sc.IsSampled()
}

// StartKind starts a span of a kind (server, client, consumer, …).
func StartKind(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !on.Load() || unsampled(ctx) {
		return ctx, none
	}
	return (*tracer.Load()).Start(ctx, name, trace.WithSpanKind(kind))
}

// StartLinked starts a consumer span linked to the span contexts of what
// it handles (a batch of deliveries, each with its own trace).
func StartLinked(ctx context.Context, name string, links []trace.SpanContext) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, none
	}
	ls := make([]trace.Link, 0, len(links))
	for _, sc := range links {
		if sc.IsValid() {
			ls = append(ls, trace.Link{SpanContext: sc})
		}
	}
	return (*tracer.Load()).Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(ls...))
}

// Traceparent is the W3C traceparent of ctx's span ("" when there is none,
// it is not sampled, or tracing is off: nothing downstream would record).
func Traceparent(ctx context.Context) string {
	if !on.Load() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	return "00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-01"
}

// Remote is the span context a traceparent names (invalid when it names
// none or tracing is off).
func Remote(traceparent string) trace.SpanContext {
	if traceparent == "" || !on.Load() {
		return trace.SpanContext{}
	}
	ctx := tc.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// WithRemote is ctx with the span context of traceparent as its parent.
func WithRemote(ctx context.Context, traceparent string) context.Context {
	sc := Remote(traceparent)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Extract is ctx with the trace context of an incoming request's headers
// (a sender that traces its own calls), when tracing is on.
func Extract(ctx context.Context, h propagation.TextMapCarrier) context.Context {
	if !on.Load() {
		return ctx
	}
	return tc.Extract(ctx, h)
}

// Inject writes ctx's trace context (traceparent) into outgoing headers,
// when tracing is on.
func Inject(ctx context.Context, h propagation.TextMapCarrier) {
	if !on.Load() {
		return
	}
	tc.Inject(ctx, h)
}

// End marks span failed when err is set, and ends it.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
