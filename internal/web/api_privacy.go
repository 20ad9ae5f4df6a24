package web

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/idempotency"
	"leadpipe/internal/privacy"
)

// GET /api/v1/leads/{id}/export (admin): everything held about a lead.
func (s *Server) apiExportLead(w http.ResponseWriter, r *http.Request) {
	out, err := s.Privacy.Export(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	WriteJSON(w, http.StatusOK, out)
}

func leadErased(e privacy.Erased) (idempotency.Response, error) {
	return jsonResponse(http.StatusOK, e, nil)
}

// POST /api/v1/leads/{id}/erase (admin, Idempotency-Key): erase a lead.
func (s *Server) apiEraseLead(ctx context.Context, r *http.Request, _ []byte, key *idempotency.Key) (idempotency.Response, error) {
	p, _ := PrincipalFrom(ctx)
	e, err := s.Privacy.Erase(ctx, p.TenantID, chi.URLParam(r, "id"), idempotency.Once[privacy.Erased]{Key: key, Respond: leadErased})
	return answerOnce(e, err, leadErased)
}
