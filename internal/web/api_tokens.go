package web

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/tenants"
)

// createdToken is the answer to POST /api/v1/tokens: the one time the
// token itself is shown.
type createdToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Token     string     `json:"token"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
	CreatedAt time.Time  `json:"created_at"`
}

// apiCreateToken is POST /api/v1/tokens {"name","scopes","expires_at"?}.
// No Idempotency-Key: a stored answer would keep the token in plain text.
func (s *Server) apiCreateToken(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name      string   `json:"name"`
		Scopes    []string `json:"scopes"`
		ExpiresAt *string  `json:"expires_at"`
	}
	if err := DecodeJSON(w, r, &body); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	in := tenants.TokenInput{Name: body.Name, Scopes: body.Scopes}
	if body.ExpiresAt != nil {
		at, ok := parseTimeParam(*body.ExpiresAt)
		if !ok {
			WriteError(w, r, s.Log, apperr.InvalidFields(map[string]string{"expires_at": "must be an RFC 3339 time, e.g. 2027-01-31T00:00:00Z"}))
			return
		}
		in.ExpiresAt = &at
	}
	t, plain, err := s.Tenants.IssueToken(r.Context(), Tenant(r), in, nil)
	s.writeCreated(w, r, "/api/v1/tokens", true, createdToken{ID: t.ID, Name: t.Name, Token: plain, Scopes: t.Scopes,
		ExpiresAt: t.ExpiresAt, CreatedAt: t.CreatedAt}, err)
}

// apiListTokens is GET /api/v1/tokens (never the tokens themselves).
func (s *Server) apiListTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.Tenants.Tokens(r.Context(), Tenant(r))
	s.writeResult(w, r, http.StatusOK, listBody(nonNil(ts)), err)
}

// apiRevokeToken is DELETE /api/v1/tokens/{id}: revoked at once (401 on
// its next use); revoking again is a no-op.
func (s *Server) apiRevokeToken(w http.ResponseWriter, r *http.Request) {
	s.writeNoContent(w, r, s.Tenants.RevokeToken(r.Context(), Tenant(r), chi.URLParam(r, "id")))
}
