package web

import (
	"net/http"
)

// uiEvents streams the signed-in user's tenant's lead events
// (docs/ARCHITECTURE.md, "Live inbox"): the tenant comes from the session,
// never from the request, so a user only ever hears of their own tenant.
// The stream ends within a minute of the session ending.
func (s *Server) uiEvents(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	if s.Live == nil || sess == nil {
		s.notFound(w, r)
		return
	}
	tenantID, userID := sess.Tenant.ID, sess.User.ID
	still := func(r *http.Request) bool {
		c, err := r.Cookie(SessionCookie)
		if err != nil {
			return false
		}
		u, err := s.Tenants.SessionUser(r.Context(), c.Value)
		return err == nil && u.ID == userID && u.TenantID == tenantID
	}
	s.Live.Serve(w, r, tenantID, still)
}
