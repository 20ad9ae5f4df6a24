package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// endRequestSpan names a request's server span by its route and records
// its outcome (OpenTelemetry's HTTP conventions).
func endRequestSpan(span trace.Span, r *http.Request, status int) {
	pattern := ""
	if rc := chi.RouteContext(r.Context()); rc != nil {
		pattern = rc.RoutePattern()
	}
	if pattern != "" {
		span.SetName(r.Method + " " + pattern)
	}
	if status == 0 {
		status = http.StatusOK
	}
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", pattern),
		attribute.String("url.path", RedactPath(r.URL.Path)), attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}
