package tracing_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/tracing"
	"leadpipe/internal/webhooks/kinds"
)

// One signed webhook, traced with the SDK's in-memory exporter: its
// request span (verify, claim), the worker's batch span linked to the
// claim, the lead upsert and the outbox write under it, and the outbound
// attempt are one trace, and the endpoint receives that trace's context
// as `traceparent`, naming the attempt's span.
func TestOneTraceFromWebhookToOutboundAttempt(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracing.Install(tp)
	t.Cleanup(func() { tracing.Install(nil); _ = tp.Shutdown(context.Background()) })

	var mu sync.Mutex
	var got []string // traceparent headers received
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer recv.Close()

	e := apptest.New(t, "tracing_e2e", apptest.Options{RedisDB: apptest.RedisTracing, Worker: true})
	ten := e.Tenant("traced")
	if res := e.Do("POST", "/api/v1/endpoints", ten.Token, map[string]any{"url": recv.URL, "events": []string{"lead.created"}}); res.Status != 201 {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	src, secret := e.Source(ten.ID, sources.CreateInput{Slug: "landing", Name: "Landing", Kind: kinds.Standard})
	now := time.Now()
	body := kinds.SampleBody(kinds.Standard, "msg_traced", "contact_traced", kinds.Lead{Email: "t@example.com", Name: "Tracy"}, now)
	h, b, err := kinds.Sign(kinds.Standard, nil, secret, "msg_traced", body, now)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", e.URL+"/hooks/traced/"+src.Slug, bytes.NewReader(b))
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("webhook: %v %v", res, err)
	}
	res.Body.Close()
	apptest.Eventually(t, 20*time.Second, "the outbound attempt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	apptest.Eventually(t, 5*time.Second, "the attempt's span ended", func() bool { return find(exp.GetSpans(), "event.attempt") != nil })

	spans := exp.GetSpans()
	request := find(spans, "POST /hooks/{tenant}/{source}")
	claim, verify := find(spans, "webhook.claim"), find(spans, "webhook.verify")
	batch, upsert := find(spans, "delivery.process-batch"), find(spans, "leads.upsert")
	emit, attempt := find(spans, "outbox.emit"), find(spans, "event.attempt")
	for name, s := range map[string]*tracetest.SpanStub{"request": request, "verify": verify, "claim": claim, "batch task": batch,
		"lead upsert": upsert, "outbox event": emit, "outbound attempt": attempt} {
		if s == nil {
			t.Fatalf("no %s span among %v", name, names(spans))
		}
	}
	traceID := request.SpanContext.TraceID()
	for _, s := range []*tracetest.SpanStub{verify, claim, batch, upsert, emit, attempt} {
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("span %s is in trace %s, the request in %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
	}
	if claim.Parent.SpanID() != request.SpanContext.SpanID() || verify.Parent.SpanID() != request.SpanContext.SpanID() {
		t.Error("verify and claim are not children of the request span")
	}
	linked := false
	for _, l := range batch.Links {
		linked = linked || l.SpanContext.SpanID() == claim.SpanContext.SpanID()
	}
	if !linked {
		t.Errorf("the batch span does not link to the delivery's claim span: %+v", batch.Links)
	}
	if attempt.SpanKind != trace.SpanKindClient {
		t.Errorf("attempt span kind %v", attempt.SpanKind)
	}
	mu.Lock()
	tp0 := got[0]
	mu.Unlock()
	sent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp0}))
	if !sent.IsValid() || sent.TraceID() != traceID || sent.SpanID() != attempt.SpanContext.SpanID() {
		t.Fatalf("the endpoint got traceparent %q, want trace %s span %s (the attempt)", tp0, traceID, attempt.SpanContext.SpanID())
	}
}

// With tracing off Start hands back its context and a span that records
// nothing, without allocating, and there is no traceparent to send; only an
// OTLP endpoint (not disabled) turns it on.
func TestTracingOffIsANoOp(t *testing.T) {
	tracing.Install(nil)
	ctx := context.Background()
	if c, span := tracing.Start(ctx, "x"); c != ctx || span.IsRecording() {
		t.Fatal("Start with tracing off recorded or changed the context")
	}
	if tracing.Traceparent(ctx) != "" {
		t.Fatal("a traceparent with tracing off")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		_, span := tracing.Start(ctx, "x")
		span.End()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per span with tracing off", allocs)
	}
	for _, env := range []map[string]string{{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}} {
		if tracing.Configured(func(k string) string { return env[k] }) {
			t.Fatalf("tracing on with %v", env)
		}
	}
	if !tracing.Configured(func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}[k] }) {
		t.Fatal("an OTLP endpoint did not turn tracing on")
	}
}

func find(spans tracetest.SpanStubs, name string) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

func names(spans tracetest.SpanStubs) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}

// At 1 % sampling the other 99 % of requests start their root span and
// nothing more: no child span, no traceparent to carry, no trace_id on
// their log lines; a sampled trace's traceparent is the W3C one.
func TestUnsampledTracesStopAtTheirRoot(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.NeverSample()))
	tracing.Install(tp)
	t.Cleanup(func() { tracing.Install(nil) })
	ctx, root := tracing.StartKind(context.Background(), "root", trace.SpanKindServer)
	defer root.End()
	if c, child := tracing.Start(ctx, "child"); c != ctx || child.SpanContext().IsValid() {
		t.Fatal("a child of an unsampled span was started")
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		t.Fatalf("traceparent %q for an unsampled trace", tp)
	}
	if allocs := testing.AllocsPerRun(1000, func() { _, s := tracing.Start(ctx, "child"); s.End() }); allocs != 0 {
		t.Fatalf("%v allocations per child of an unsampled span", allocs)
	}

	sampled := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracing.Install(sampled)
	ctx, span := tracing.Start(context.Background(), "kept")
	defer span.End()
	want := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, want)
	if got := tracing.Traceparent(ctx); got == "" || got != want["traceparent"] {
		t.Fatalf("traceparent %q, the propagator writes %q", got, want["traceparent"])
	}
}

// What a span costs the path: off, a child of an unsampled span, sampled.
//
//	go test -run '^$' -bench BenchmarkSpan -benchmem ./internal/tracing/
func BenchmarkSpan(b *testing.B) {
	run := func(b *testing.B, ctx context.Context) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, s := tracing.Start(ctx, "span")
			s.End()
		}
	}
	b.Run("off", func(b *testing.B) {
		tracing.Install(nil)
		run(b, context.Background())
	})
	b.Run("unsampled-child", func(b *testing.B) {
		tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))
		defer tracing.Install(nil)
		ctx, root := tracing.Start(context.Background(), "root")
		defer root.End()
		run(b, ctx)
	})
	b.Run("unsampled-root", func(b *testing.B) {
		tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))
		defer tracing.Install(nil)
		run(b, context.Background())
	})
	b.Run("sampled", func(b *testing.B) {
		tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())))
		defer tracing.Install(nil)
		run(b, context.Background())
	})
}
