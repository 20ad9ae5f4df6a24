package tenants

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"time"

	"leadpipe/internal/apperr"
)

// API scopes. admin implies every other scope; no other scope implies
// another (leads:write does not grant leads:read).
const (
	ScopeLeadsRead     = "leads:read"
	ScopeLeadsWrite    = "leads:write"
	ScopeSourcesManage = "sources:manage" // sources, endpoints, alert rules, reconcile
	ScopeAdmin         = "admin"          // users, tokens, retention, audit, erasure
)

// Scopes lists every scope in its canonical order.
var Scopes = []string{ScopeLeadsRead, ScopeLeadsWrite, ScopeSourcesManage, ScopeAdmin}

// ScopesOfRole are a signed-in user's scopes: staff work leads, admins
// everything.
func ScopesOfRole(role string) []string {
	if role == RoleAdmin {
		return []string{ScopeAdmin}
	}
	return []string{ScopeLeadsRead, ScopeLeadsWrite}
}

// HasScope reports whether scopes grant need (admin grants all).
func HasScope(scopes []string, need string) bool {
	return slices.Contains(scopes, need) || slices.Contains(scopes, ScopeAdmin)
}

// Has reports whether the principal may use a route that needs scope.
func (p Principal) Has(scope string) bool { return HasScope(p.Scopes, scope) }

// normalizeScopes validates scopes and returns them deduplicated in
// canonical order.
func normalizeScopes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, apperr.InvalidFields(map[string]string{"scopes": "name at least one of " + strings.Join(Scopes, ", ")})
	}
	var out []string
	for _, s := range Scopes {
		if slices.Contains(in, s) {
			out = append(out, s)
		}
	}
	for _, s := range in {
		if !slices.Contains(Scopes, s) {
			if len(s) > 40 {
				s = s[:40] + "…"
			}
			return nil, apperr.InvalidFields(map[string]string{"scopes": fmt.Sprintf("unknown scope %q; scopes are %s", s, strings.Join(Scopes, ", "))})
		}
	}
	return out, nil
}

// ScopeList is a token's scopes; in api_tokens.scopes they are one
// space-separated string in canonical order.
type ScopeList []string

// Value stores the list as its column string.
func (l ScopeList) Value() (driver.Value, error) { return strings.Join(l, " "), nil }

// Scan reads the column string.
func (l *ScopeList) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		*l = strings.Fields(string(v))
	case string:
		*l = strings.Fields(v)
	default:
		return fmt.Errorf("tenants: scopes column of type %T", src)
	}
	return nil
}

// TokenInput describes a new API token.
type TokenInput struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}
