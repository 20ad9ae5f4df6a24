package web

import (
	"net/http"
	"strconv"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
)

// auditFilter reads ?action=&actor=&cursor=&limit= (limit 1–200, default 50).
func auditFilter(r *http.Request) (audit.Filter, error) {
	q := r.URL.Query()
	f := audit.Filter{Action: q.Get("action"), ActorID: q.Get("actor"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > audit.MaxLimit {
			return f, apperr.InvalidFields(map[string]string{"limit": "must be a whole number from 1 to 200"})
		}
		f.Limit = n
	}
	return f, nil
}

// apiListAudit is GET /api/v1/audit: the tenant's audit log, newest first.
func (s *Server) apiListAudit(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilter(r)
	serveList(s, w, r, err, func() ([]audit.Entry, string, error) {
		p, err := s.Audit.List(r.Context(), Tenant(r), f)
		if err == nil {
			w.Header().Set("Cache-Control", "no-store")
		}
		return p.Items, p.NextCursor, err
	})
}
