package web

import (
	"context"
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
