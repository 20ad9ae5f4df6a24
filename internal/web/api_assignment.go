package web

import (
	"net/http"

	"leadpipe/internal/leads"
)

// apiGetAssignment is GET /api/v1/assignment: the tenant's assignment
// rules, in the order they are tried, and the first-response time.
func (s *Server) apiGetAssignment(w http.ResponseWriter, r *http.Request) {
	a, err := s.Leads.Assignment(r.Context(), Tenant(r))
	s.writeResult(w, r, http.StatusOK, a, err)
}

// apiPutAssignment is PUT /api/v1/assignment {"rules":[…],"first_response_minutes"}:
// replaces the rules (docs/ARCHITECTURE.md, "Assignment and first response"); 422 names the offending fields.
func (s *Server) apiPutAssignment(w http.ResponseWriter, r *http.Request) {
	decodeAndWrite(s, w, r, func(in leads.Assignment) (leads.Assignment, error) {
		return s.Leads.PutAssignment(r.Context(), Tenant(r), in)
	})
}
