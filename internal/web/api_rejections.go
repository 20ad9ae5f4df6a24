package web

import (
	"net/http"

	"leadpipe/internal/rejections"
)

// listRejections is GET /api/v1/sources/{id}/rejections?limit=: the
// source's newest rejected requests (at most 100, of the last 7 days).
func (s *Server) listRejections(w http.ResponseWriter, r *http.Request) {
	limit, err := rejections.ParseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	src, ok := s.routeSource(w, r)
	if !ok {
		return
	}
	items, err := s.Rejections.List(r.Context(), Tenant(r), src.ID, limit)
	s.writeResult(w, r, http.StatusOK, listBody(items), err)
}
