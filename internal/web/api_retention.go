package web

import (
	"net/http"

	"leadpipe/internal/retention"
)

// apiGetRetention is GET /api/v1/settings/retention.
func (s *Server) apiGetRetention(w http.ResponseWriter, r *http.Request) {
	st, err := s.Retention.Get(r.Context(), Tenant(r))
	s.writeResult(w, r, http.StatusOK, st, err)
}

// apiPutRetention is PUT /api/v1/settings/retention
// {"delivery_payload_days","dead_letter_days","event_days"}; a field left
// out keeps its value.
func (s *Server) apiPutRetention(w http.ResponseWriter, r *http.Request) {
	decodeAndWrite(s, w, r, func(in retention.Input) (retention.Settings, error) {
		return s.Retention.Set(r.Context(), Tenant(r), in)
	})
}
