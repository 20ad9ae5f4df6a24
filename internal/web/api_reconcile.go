package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/reconcile"
)

// triggerReconcile is POST /api/v1/sources/{id}/reconcile → 202 {"run_id"};
// while a run of the source is going, its id again.
func (s *Server) triggerReconcile(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	runID, err := s.Reconcile.Trigger(r.Context(), Tenant(r), id)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	w.Header().Set("Location", "/api/v1/sources/"+id+"/reconcile-runs")
	WriteJSON(w, http.StatusAccepted, map[string]string{"run_id": runID})
}

// listReconcileRuns is GET /api/v1/sources/{id}/reconcile-runs?limit=&cursor=,
// newest first.
func (s *Server) listReconcileRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := positiveLimit(q, "must be a whole number from 1 to 100")
	serveList(s, w, r, err, func() ([]reconcile.RunView, string, error) {
		page, err := s.Reconcile.ListRuns(r.Context(), Tenant(r), chi.URLParam(r, "id"), limit, q.Get("cursor"))
		items := make([]reconcile.RunView, 0, len(page.Items))
		for _, run := range page.Items {
			items = append(items, run.View())
		}
		return items, page.NextCursor, err
	})
}
