package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/tenants"
	"leadpipe/internal/tracing"
)

type ctxKey int

const (
	ctxRequestID ctxKey = iota
	ctxPrincipal
	ctxLogAttrs
)

// RequestID returns the request's id ("" outside a request).
func RequestID(ctx context.Context) string {
	v, _ := ctx.Value(ctxRequestID).(string)
	return v
}

// PrincipalFrom returns who is acting (set by the auth middlewares).
func PrincipalFrom(ctx context.Context) (tenants.Principal, bool) {
	p, ok := ctx.Value(ctxPrincipal).(tenants.Principal)
	return p, ok
}

// WithPrincipal stores p in ctx (and in the request log line).
func WithPrincipal(ctx context.Context, p tenants.Principal) context.Context {
	if la, ok := ctx.Value(ctxLogAttrs).(*logAttrs); ok {
		la.tenantID, la.userID = p.TenantID, p.UserID
	}
	return context.WithValue(ctx, ctxPrincipal, p)
}

type logAttrs struct {
	tenantID, userID string
	duplicate        bool // a webhook answered duplicate (markDuplicate)
}

// markDuplicate tells the request log that the request was a webhook
// delivery answered duplicate: its line may be sampled (dupLines).
func markDuplicate(ctx context.Context) {
	if la, ok := ctx.Value(ctxLogAttrs).(*logAttrs); ok {
		la.duplicate = true
	}
}

// dupLinesPerSecond is how many lines of duplicate acknowledgements the
// request log writes per second at info level; the rest are counted into
// one line a second later. In a retry storm they are most of the
// requests, each line the same as the last but for its request id, and
// the line cost a duplicate about a fifth of its CPU (docs/BENCHMARKS.md).
// Every other request (a new delivery, any error, every non-2xx) keeps
// its line, and at debug level so does every duplicate.
const dupLinesPerSecond = 10

// dupLines samples the lines of duplicate acknowledgements.
type dupLines struct {
	log *slog.Logger

	mu         sync.Mutex
	second     int64 // unix second of the current window
	logged     int   // lines written in it
	suppressed int   // lines not written since the last summary
	pending    bool  // a summary is scheduled
}

// allow reports whether this duplicate's line is written; when not, it is
// counted, and the count is logged a second later.
func (d *dupLines) allow(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if sec := now.Unix(); sec != d.second {
		d.second, d.logged = sec, 0
	}
	if d.logged < dupLinesPerSecond {
		d.logged++
		return true
	}
	d.suppressed++
	if !d.pending {
		d.pending = true
		time.AfterFunc(time.Second, d.summary)
	}
	return false
}

func (d *dupLines) summary() {
	d.mu.Lock()
	n := d.suppressed
	d.suppressed, d.pending = 0, false
	d.mu.Unlock()
	if n > 0 {
		d.log.Info("http duplicates not logged", "count", n,
			"why", fmt.Sprintf("at most %d lines of webhook deliveries answered duplicate per second at info (all at debug)", dupLinesPerSecond))
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps streaming responses working through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RequestLog assigns a request id, recovers panics, and logs one line per
// request with request_id, tenant_id and user_id.
//
// Webhook deliveries answered duplicate (2xx) are sampled at info level:
// dupLinesPerSecond lines a second, the rest counted in one line.
func RequestLog(log *slog.Logger) func(http.Handler) http.Handler {
	dups := &dupLines{log: log}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			id := r.Header.Get("X-Request-Id")
			if id == "" || len(id) > 64 {
				id = newRequestID()
			}
			la := &logAttrs{}
			ctx := context.WithValue(context.WithValue(r.Context(), ctxRequestID, id), ctxLogAttrs, la)
			// The request's server span (tracing on only: internal/tracing),
			// so the line below carries its trace_id.
			var span trace.Span
			if tracing.Enabled() {
				ctx, span = tracing.StartKind(tracing.Extract(ctx, propagation.HeaderCarrier(r.Header)), r.Method, trace.SpanKindServer)
				defer span.End()
			}
			r = r.WithContext(ctx)
			w.Header().Set("X-Request-Id", id)
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					log.ErrorContext(ctx, "panic", "panic", p, "request_id", id, "path", RedactPath(r.URL.Path))
					if sw.status == 0 {
						WriteProblem(sw, r, http.StatusInternalServerError, "internal error", nil)
					}
				}
				if span != nil {
					endRequestSpan(span, r, sw.status)
				}
				lvl := slog.LevelInfo
				if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" || strings.HasPrefix(r.URL.Path, "/assets/") {
					lvl = slog.LevelDebug
				}
				if !log.Enabled(ctx, lvl) {
					return // building the line costs allocations on the ingest hot path
				}
				if la.duplicate && sw.status < 300 && !log.Enabled(ctx, slog.LevelDebug) && !dups.allow(start) {
					return
				}
				route := chi.RouteContext(ctx)
				pattern := ""
				if route != nil {
					pattern = route.RoutePattern()
				}
				log.Log(ctx, lvl, "http", "request_id", id, "method", r.Method, "path", RedactPath(r.URL.Path), "route", pattern,
					"status", sw.status, "bytes", sw.bytes, "dur_ms", float64(time.Since(start).Microseconds())/1000,
					"tenant_id", la.tenantID, "user_id", la.userID)
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

// bearer extracts a bearer token.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// RequireToken authenticates tenant API calls with an API token.
func (s *Server) RequireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if tok == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="leadpipe"`)
			WriteProblem(w, r, http.StatusUnauthorized, "missing API token: send Authorization: Bearer <token>", nil)
			return
		}
		p, err := s.Tenants.AuthenticateToken(r.Context(), tok)
		if err != nil {
			if apperr.Is(err, apperr.Unauthorized) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="leadpipe", error="invalid_token"`)
			}
			WriteError(w, r, s.Log, err)
			return
		}
		ctx := audit.With(WithPrincipal(r.Context(), p), audit.Context{
			Actor: audit.Actor{Kind: audit.ActorToken, ID: p.TokenID, Name: p.Name}, IP: s.clientIP(r)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// RequireOperator guards everything only the platform operator uses: the
// admin API and operator pages opened in a browser (the Asynq dashboard).
// The credential is LEADPIPE_ADMIN_TOKEN, as a bearer token or as the
// password of HTTP basic auth (any user name: what a browser can send).
// Without the token configured these routes are off (404). Answers are
// never cached.
func (s *Server) RequireOperator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Cfg.AdminToken == "" {
			WriteProblem(w, r, http.StatusNotFound, "operator routes are disabled (set LEADPIPE_ADMIN_TOKEN)", nil)
			return
		}
		tok := bearer(r)
		if tok == "" {
			_, tok, _ = r.BasicAuth()
		}
		if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.Cfg.AdminToken)) != 1 {
			// Basic first: browsers prompt for it; API clients use the bearer.
			w.Header().Add("WWW-Authenticate", `Basic realm="leadpipe operator", charset="UTF-8"`)
			w.Header().Add("WWW-Authenticate", `Bearer realm="leadpipe-admin"`)
			WriteProblem(w, r, http.StatusUnauthorized,
				"operator credentials required: send LEADPIPE_ADMIN_TOKEN as Authorization: Bearer <token> (or as the basic-auth password)", nil)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		ctx := audit.With(r.Context(), audit.Context{Actor: audit.Actor{Kind: audit.ActorOperator, Name: "operator"}, IP: s.clientIP(r)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Tenant returns the acting principal's tenant id; "" outside the auth
// middlewares (routes behind RequireToken or RequireSession always have
// one).
func Tenant(r *http.Request) string {
	p, _ := PrincipalFrom(r.Context())
	return p.TenantID
}

// scopeGuard is the handler scope puts in front of a route: it lets the
// principal through only with the route's scope. It is a type of its own
// so RouteScope can tell which scope a route declares.
type scopeGuard struct {
	scope string
	next  http.Handler
}

func (g *scopeGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := PrincipalFrom(r.Context())
	if !ok || !p.Has(g.scope) {
		WriteProblem(w, r, http.StatusForbidden, "this token lacks the scope "+g.scope+", which this route needs", nil)
		return
	}
	g.next.ServeHTTP(w, r)
}

// scope declares the scope a route needs (after RequireToken). routes.go
// is the one place it is used.
func scope(need string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return &scopeGuard{scope: need, next: next} }
}

// RouteScope returns the scope a route's middlewares (as chi.Walk lists
// them) declare, "" when none does.
func RouteScope(mws ...func(http.Handler) http.Handler) string {
	for _, mw := range mws {
		if g, ok := mw(http.NotFoundHandler()).(*scopeGuard); ok {
			return g.scope
		}
	}
	return ""
}
