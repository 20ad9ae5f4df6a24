package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"time"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when migrations are done and MySQL and Redis
// answer; otherwise 503 naming what is not ready.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if down := s.Ready(ctx); len(down) > 0 {
		w.Header().Set("Retry-After", "5")
		WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "down": down})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "ready"})
}

// requireMetricsToken guards /metrics when LEADPIPE_METRICS_TOKEN is set.
func (s *Server) requireMetricsToken(next http.Handler) http.Handler {
	if s.Cfg == nil || s.Cfg.MetricsToken == "" {
		return next
	}
	want := []byte(s.Cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if tok == "" || subtle.ConstantTimeCompare([]byte(tok), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="leadpipe-metrics"`)
			WriteProblem(w, r, http.StatusUnauthorized, "missing or wrong metrics token (LEADPIPE_METRICS_TOKEN)", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// OpsRoutes is cmd/worker's own listener (LEADPIPE_WORKER_ADDR): /metrics
// (behind LEADPIPE_METRICS_TOKEN when set), /healthz and /readyz, so a
// worker running apart from the servers can be scraped and probed.
func (s *Server) OpsRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.Metrics != nil {
		mux.Handle("GET /metrics", s.requireMetricsToken(s.Metrics))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, r, http.StatusNotFound, "no such route (this is the worker: /metrics, /healthz, /readyz)", nil)
	})
	return mux
}
