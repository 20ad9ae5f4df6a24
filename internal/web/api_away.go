package web

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// apiPutUserAway is PUT /api/v1/users/{id}/away {"until":"RFC 3339"|null}
// (docs/ARCHITECTURE.md): round robin skips the user until then; null or a past
// time: back. Answers the user.
func (s *Server) apiPutUserAway(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Until *time.Time `json:"until"`
	}
	if err := DecodeJSON(w, r, &in); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	u, err := s.Tenants.SetAway(r.Context(), Tenant(r), chi.URLParam(r, "id"), in.Until, time.Now())
	s.writeResult(w, r, http.StatusOK, toAPIUser(u), err)
}
