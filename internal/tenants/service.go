package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/crypto/bcrypt"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
)

// Service is the tenants, users, tokens and sessions service.
type Service struct {
	DB *sqlx.DB
	// PasswordCost is the bcrypt cost; tests lower it.
	PasswordCost int
	clock        func() time.Time
	// linkKey derives invitation and reset links' secrets; linkMail
	// writes the message carrying a new link (WithLinks).
	linkKey  []byte
	linkMail LinkNotifier
}

// NewService returns a service with production settings reading the time
// from now (nil: the wall clock).
func NewService(d *sqlx.DB, now func() time.Time, opts ...Option) *Service {
	s := &Service{DB: d, PasswordCost: 11, clock: now}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) now() time.Time { return clock.Read(s.clock) }

// ProvisionInput is the operator's request for a new tenant.
type ProvisionInput struct {
	Slug          string `json:"slug"`
	Name          string `json:"name"`
	AdminEmail    string `json:"admin_email"`
	AdminPassword string `json:"admin_password"`
	AdminName     string `json:"admin_name"`
}

// Provisioned is the result: the one time the API token is visible.
type Provisioned struct {
	Tenant   Tenant
	Admin    User
	APIToken string
}

// Provision creates a tenant with its first admin user and API token in one
// transaction.
func (s *Service) Provision(ctx context.Context, in ProvisionInput) (Provisioned, error) {
	// The slug is not trimmed: "acme\n" (a copy-paste from a terminal) is
	// a 422 naming slug, never silently another tenant's name.
	in.Name = strings.TrimSpace(in.Name)
	in.AdminEmail = strings.ToLower(strings.TrimSpace(in.AdminEmail))
	f := map[string]string{}
	if !SlugPattern.MatchString(in.Slug) {
		f["slug"] = "must match ^[a-z0-9][a-z0-9-]{1,62}$"
		if strings.TrimSpace(in.Slug) != in.Slug {
			f["slug"] = "must not start or end with a space or newline; must match ^[a-z0-9][a-z0-9-]{1,62}$"
		}
	}
	if in.Name == "" || len(in.Name) > 200 {
		f["name"] = "is required (at most 200 characters)"
	}
	if !ValidEmail(in.AdminEmail) {
		f["admin_email"] = "must be an email address"
	}
	if msg := passwordProblem(in.AdminPassword); msg != "" {
		f["admin_password"] = msg
	}
	if len(f) > 0 {
		return Provisioned{}, apperr.InvalidFields(f)
	}
	hash, err := s.hashPassword(in.AdminPassword)
	if err != nil {
		return Provisioned{}, err
	}
	now := s.now()
	p := Provisioned{Tenant: Tenant{ID: ids.New(), Slug: in.Slug, Name: in.Name, CreatedAt: now}}
	adminName := in.AdminName
	if adminName == "" {
		adminName = strings.SplitN(in.AdminEmail, "@", 2)[0]
	}
	p.Admin = User{TenantID: p.Tenant.ID, ID: ids.New(), Email: in.AdminEmail, Name: adminName, Role: RoleAdmin, CreatedAt: now}
	tok, plain := newToken(p.Tenant.ID, TokenInput{Name: "provisioning", Scopes: []string{ScopeAdmin}}, nil, now)
	p.APIToken = plain
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		if err := insertTenant(ctx, tx, p.Tenant); err != nil {
			return err
		}
		if err := insertUser(ctx, tx, p.Admin, hash); err != nil {
			return err
		}
		if err := recordUserCreated(ctx, tx, p.Admin); err != nil {
			return err
		}
		if err := recordTokenCreated(ctx, tx, tok); err != nil {
			return err
		}
		return insertToken(ctx, tx, tok, hashToken(plain))
	})
	return p, err
}

// TenantBySlug finds a tenant; NotFound when there is none.
func (s *Service) TenantBySlug(ctx context.Context, slug string) (Tenant, error) {
	if !SlugPattern.MatchString(slug) {
		return Tenant{}, apperr.New(apperr.NotFound, "tenant not found")
	}
	return getTenantBySlug(ctx, s.DB, slug)
}

// Tenant finds a tenant by id.
func (s *Service) Tenant(ctx context.Context, id string) (Tenant, error) {
	return getTenant(ctx, s.DB, id)
}

// Tenants lists every tenant (operator).
func (s *Service) Tenants(ctx context.Context) ([]Tenant, error) { return listTenants(ctx, s.DB) }

// ForEach calls fn with every tenant's id (see the package function).
func (s *Service) ForEach(ctx context.Context, fn func(tenantID string) error) error {
	return ForEach(ctx, s.DB, fn)
}

func passwordProblem(p string) string {
	if len(p) < 10 {
		return "must be at least 10 characters"
	}
	if len(p) > 72 {
		return "must be at most 72 bytes"
	}
	return ""
}

func (s *Service) hashPassword(p string) (string, error) {
	cost := s.PasswordCost
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword([]byte(p), cost)
	return string(h), err
}

// dummyHash keeps the timing of a login for an unknown email close to a
// real one.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("leadpipe-dummy-password"), bcrypt.MinCost)

// Token format: lp_<tenant id>_<43 chars of base64url randomness>. The
// tenant id in the clear lets lookups stay within one tenant's keys.
func newToken(tenantID string, in TokenInput, createdBy *string, now time.Time) (Token, string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	plain := "lp_" + tenantID + "_" + base64.RawURLEncoding.EncodeToString(b[:])
	return Token{TenantID: tenantID, ID: ids.New(), Name: in.Name, Scopes: in.Scopes, ExpiresAt: in.ExpiresAt,
		CreatedBy: createdBy, CreatedAt: now}, plain
}

func hashToken(plain string) []byte {
	h := sha256.Sum256([]byte(plain))
	return h[:]
}

// CreateToken issues a full-power (admin) API token; the plaintext is
// returned only here (operator commands, the demo).
func (s *Service) CreateToken(ctx context.Context, tenantID, name string, createdBy *string) (Token, string, error) {
	return s.IssueToken(ctx, tenantID, TokenInput{Name: name, Scopes: []string{ScopeAdmin}}, createdBy)
}

// IssueToken issues a token with the given scopes and expiry (the tokens
// API).
func (s *Service) IssueToken(ctx context.Context, tenantID string, in TokenInput, createdBy *string) (Token, string, error) {
	return s.CreateTokenOnce(ctx, tenantID, in, createdBy, idempotency.Once[Token]{})
}

// CreateTokenOnce issues a token with the given scopes and expiry, under a
// claimed idempotency key when once has one: the key completes in the
// transaction that inserts the token.
func (s *Service) CreateTokenOnce(ctx context.Context, tenantID string, in TokenInput, createdBy *string, once idempotency.Once[Token]) (Token, string, error) {
	in.Name = strings.TrimSpace(in.Name)
	f := map[string]string{}
	if in.Name == "" || len(in.Name) > 200 {
		f["name"] = "is required (at most 200 characters)"
	}
	scopes, err := normalizeScopes(in.Scopes)
	if err != nil {
		f["scopes"] = fieldOf(err, "scopes")
	}
	in.Scopes = scopes
	now := s.now()
	if in.ExpiresAt != nil {
		at := in.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !at.After(now) {
			f["expires_at"] = "must be in the future"
		}
		in.ExpiresAt = &at
	}
	if len(f) > 0 {
		return Token{}, "", apperr.InvalidFields(f)
	}
	t, plain := newToken(tenantID, in, createdBy, now)
	t, err = idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Token, error) {
		if err := recordTokenCreated(ctx, tx, t); err != nil {
			return t, err
		}
		return t, insertToken(ctx, tx, t, hashToken(plain))
	})
	if err != nil {
		return Token{}, "", err
	}
	return t, plain, nil
}

// fieldOf is the message an InvalidFields error holds for field.
func fieldOf(err error, field string) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Fields[field]
	}
	return "is invalid"
}

// recordTokenCreated audits a new token (never its secret).
func recordTokenCreated(ctx context.Context, tx db.Ext, t Token) error {
	return audit.Record(ctx, tx, t.TenantID, audit.Entry{Action: "token.created", TargetType: "token", TargetID: t.ID,
		Detail: map[string]any{"name": t.Name, "scopes": t.Scopes, "expires_at": t.ExpiresAt}})
}

// Tokens lists a tenant's tokens (never their secrets).
func (s *Service) Tokens(ctx context.Context, tenantID string) ([]Token, error) {
	return listTokens(ctx, s.DB, tenantID)
}

// RevokeToken revokes a token at once.
func (s *Service) RevokeToken(ctx context.Context, tenantID, id string) error {
	return db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		if err := tokenExists(ctx, tx, tenantID, id); err != nil {
			return err
		}
		n, err := revokeToken(ctx, tx, tenantID, id, s.now())
		if err != nil || n == 0 {
			return err // n == 0: revoked before, nothing new to record
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "token.revoked", TargetType: "token", TargetID: id})
	})
}

// AuthenticateToken resolves a bearer token to its principal.
func (s *Service) AuthenticateToken(ctx context.Context, plain string) (Principal, error) {
	bad := apperr.New(apperr.Unauthorized, "missing or invalid API token")
	rest, ok := strings.CutPrefix(plain, "lp_")
	if !ok || len(rest) < 28 || rest[26] != '_' || !ids.Valid(rest[:26]) {
		return Principal{}, bad
	}
	tenantID := rest[:26]
	t, err := getTokenByHash(ctx, s.DB, tenantID, hashToken(plain))
	if err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return Principal{}, bad
		}
		return Principal{}, err
	}
	if t.RevokedAt != nil {
		return Principal{}, bad
	}
	now := s.now()
	if t.ExpiresAt != nil && !now.Before(*t.ExpiresAt) {
		return Principal{}, apperr.New(apperr.Unauthorized, "API token expired")
	}
	// Recording last use is best effort and at most once a minute per token.
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		_ = touchToken(ctx, s.DB, tenantID, t.ID, now)
	}
	return Principal{TenantID: tenantID, TokenID: t.ID, Name: "API token " + t.Name, Role: RoleAdmin, Scopes: t.Scopes}, nil
}

// Session lifetime.
const SessionTTL = 14 * 24 * time.Hour

// CreateSession starts a session and returns the cookie value.
func (s *Service) CreateSession(ctx context.Context, u User) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := ids.New()
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		if err := audit.Record(ctx, tx, u.TenantID, audit.Entry{Action: "user.logged_in", TargetType: "user", TargetID: u.ID,
			Actor: audit.Actor{Kind: audit.ActorUser, ID: u.ID, Name: u.Name}, IP: audit.From(ctx).IP}); err != nil {
			return err
		}
		return insertSession(ctx, tx, u.TenantID, id, u.ID, hashToken(secret), now, now.Add(SessionTTL))
	})
	if err != nil {
		return "", err
	}
	return u.TenantID + "." + id + "." + secret, nil
}

// SessionUser resolves a session cookie to its (enabled) user.
func (s *Service) SessionUser(ctx context.Context, cookie string) (User, error) {
	bad := apperr.New(apperr.Unauthorized, "not logged in")
	parts := strings.Split(cookie, ".")
	if len(parts) != 3 || !ids.Valid(parts[0]) || !ids.Valid(parts[1]) {
		return User{}, bad
	}
	row, err := getSession(ctx, s.DB, parts[0], parts[1])
	if err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return User{}, bad
		}
		return User{}, err
	}
	if subtle.ConstantTimeCompare(row.Hash, hashToken(parts[2])) != 1 || s.now().After(row.ExpiresAt) {
		return User{}, bad
	}
	u, err := getUser(ctx, s.DB, parts[0], row.UserID)
	if err != nil || u.DisabledAt != nil {
		return User{}, bad
	}
	return u, nil
}

// EndSession deletes the session behind a cookie (logout).
func (s *Service) EndSession(ctx context.Context, cookie string) error {
	parts := strings.Split(cookie, ".")
	if len(parts) != 3 || !ids.Valid(parts[0]) || !ids.Valid(parts[1]) {
		return nil
	}
	return db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		row, err := getSession(ctx, tx, parts[0], parts[1])
		if apperr.Is(err, apperr.NotFound) || (err == nil && subtle.ConstantTimeCompare(row.Hash, hashToken(parts[2])) != 1) {
			return nil // already ended, or not this browser's to end
		}
		if err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, parts[0], audit.Entry{Action: "user.logged_out", TargetType: "user", TargetID: row.UserID,
			Actor: audit.Actor{Kind: audit.ActorUser, ID: row.UserID}, IP: audit.From(ctx).IP}); err != nil {
			return err
		}
		return deleteSession(ctx, tx, parts[0], parts[1])
	})
}
