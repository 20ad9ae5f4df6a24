// Package tenants holds tenants, users, API tokens and sessions, and the
// operator's provisioning. Every store method takes tenantID first.
package tenants

import (
	"regexp"
	"time"
)

// Roles.
const (
	RoleAdmin = "admin"
	RoleStaff = "staff"
)

// Tenant is one customer organisation.
type Tenant struct {
	ID        string    `db:"id" json:"id"`
	Slug      string    `db:"slug" json:"slug"`
	Name      string    `db:"name" json:"name"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

// User is a person who logs in to the web UI.
type User struct {
	TenantID   string     `db:"tenant_id" json:"-"`
	ID         string     `db:"id" json:"id"`
	Email      string     `db:"email" json:"email"`
	Name       string     `db:"name" json:"name"`
	Role       string     `db:"role" json:"role"`
	DisabledAt *time.Time `db:"disabled_at" json:"disabled_at"`
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	// TimeZone is the person's IANA zone ("" until known: UTC).
	TimeZone string `db:"time_zone" json:"time_zone"`
	// AwayUntil: round robin skips the user until then (docs/ARCHITECTURE.md);
	// nil or past: not away.
	AwayUntil *time.Time `db:"away_until" json:"away_until"`
}

// Away reports whether the user is away at now.
func (u User) Away(now time.Time) bool { return u.AwayUntil != nil && u.AwayUntil.After(now) }

// IsAdmin reports the admin role.
func (u User) IsAdmin() bool { return u.Role == RoleAdmin }

// Token is an API token (the secret itself is only ever shown once).
type Token struct {
	TenantID   string     `db:"tenant_id" json:"-"`
	ID         string     `db:"id" json:"id"`
	Name       string     `db:"name" json:"name"`
	Scopes     ScopeList  `db:"scopes" json:"scopes"`
	ExpiresAt  *time.Time `db:"expires_at" json:"expires_at"`
	CreatedBy  *string    `db:"created_by" json:"created_by"`
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at" json:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at" json:"revoked_at"`
}

// Principal is who is acting: a user (UI) or an API token.
type Principal struct {
	TenantID string
	UserID   string // empty for API tokens
	TokenID  string // empty for users
	Name     string // for the timeline: user name or "API token <name>"
	Role     string
	Scopes   []string // what the principal may do (Has); admin grants all
}

// SlugPattern is the tenant (and source) slug rule.
var SlugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)

var emailPattern = regexp.MustCompile(`^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$`)

// ValidEmail is a deliberately loose syntax check.
func ValidEmail(s string) bool { return len(s) <= 254 && emailPattern.MatchString(s) }
