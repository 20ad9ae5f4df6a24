package tenants

import (
	"context"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
)

// This file holds the SQL on the tenants area's tables: tenants, users,
// user_logins, api_tokens and sessions (the invitation and reset links'
// user_links is in links.go, away_until in away.go).

const tenantCols = `id, slug, name, created_at`
const userCols = `tenant_id, id, email, name, role, disabled_at, created_at, time_zone, away_until`
const tokenCols = `tenant_id, id, name, scopes, expires_at, created_by, created_at, last_used_at, revoked_at`

func insertTenant(ctx context.Context, x db.Ext, t Tenant) error {
	_, err := x.ExecContext(ctx, `INSERT INTO tenants (id, slug, name, created_at) VALUES (?, ?, ?, ?)`,
		t.ID, t.Slug, t.Name, t.CreatedAt)
	return db.MapErr(err, "tenant not found", "a tenant with this slug already exists")
}

func getTenantBySlug(ctx context.Context, x db.Ext, slug string) (Tenant, error) {
	var t Tenant
	err := x.GetContext(ctx, &t, `SELECT `+tenantCols+` FROM tenants WHERE slug = ?`, slug)
	return t, db.MapErr(err, "tenant not found", "")
}

func getTenant(ctx context.Context, x db.Ext, id string) (Tenant, error) {
	var t Tenant
	err := x.GetContext(ctx, &t, `SELECT `+tenantCols+` FROM tenants WHERE id = ?`, id)
	return t, db.MapErr(err, "tenant not found", "")
}

func listTenants(ctx context.Context, x db.Ext) ([]Tenant, error) {
	var ts []Tenant
	err := x.SelectContext(ctx, &ts, `SELECT `+tenantCols+` FROM tenants ORDER BY slug`)
	return ts, err
}

// tenantPage is how many tenant ids ForEach reads at a time.
const tenantPage = 500

// ForEach calls fn with every tenant's id, in id order, reading the ids a
// page at a time (periodic work that visits every tenant: reconcile, the
// sweeper, purges, alert evaluation). It stops at the first error fn
// returns, or when ctx ends; to carry on past a tenant's failure, collect
// the error in fn and return nil.
func ForEach(ctx context.Context, x db.Ext, fn func(tenantID string) error) error {
	after := ""
	for {
		ids, err := tenantIDsAfter(ctx, x, after, tenantPage)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(id); err != nil {
				return err
			}
		}
		if len(ids) < tenantPage {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

func tenantIDsAfter(ctx context.Context, x db.Ext, after string, limit int) ([]string, error) {
	var ids []string
	err := x.SelectContext(ctx, &ids, `SELECT id FROM tenants WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	return ids, err
}

func insertUser(ctx context.Context, x db.Ext, u User, hash string) error {
	// The login row (email → this tenant's membership) first: login looks
	// an email up there across tenants.
	if _, err := x.ExecContext(ctx, `INSERT INTO user_logins (email, tenant_id, user_id) VALUES (?, ?, ?)`,
		u.Email, u.TenantID, u.ID); err != nil {
		return db.MapErr(err, "", "a user with this email already exists")
	}
	_, err := x.ExecContext(ctx, `INSERT INTO users (tenant_id, id, email, name, password_hash, role, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, u.TenantID, u.ID, u.Email, u.Name, hash, u.Role, u.CreatedAt)
	return db.MapErr(err, "", "a user with this email already exists")
}

func getUser(ctx context.Context, x db.Ext, tenantID, id string) (User, error) {
	var u User
	err := x.GetContext(ctx, &u, `SELECT `+userCols+` FROM users WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return u, db.MapErr(err, "user not found", "")
}

func listUsers(ctx context.Context, x db.Ext, tenantID string) ([]User, error) {
	var us []User
	err := x.SelectContext(ctx, &us, `SELECT `+userCols+` FROM users WHERE tenant_id = ? ORDER BY name, email`, tenantID)
	return us, err
}

type loginRow struct {
	User
	PasswordHash string `db:"password_hash"`
	TenantSlug   string `db:"tenant_slug"`
	TenantName   string `db:"tenant_name"`
}

// getLogin reads every membership of an email (one row per tenant).
func getLogin(ctx context.Context, x db.Ext, email string) ([]loginRow, error) {
	var rs []loginRow
	err := x.SelectContext(ctx, &rs, `SELECT u.tenant_id, u.id, u.email, u.name, u.role, u.disabled_at, u.created_at, u.time_zone, u.away_until, u.password_hash,
		t.slug AS tenant_slug, t.name AS tenant_name
		FROM user_logins l JOIN users u ON u.tenant_id = l.tenant_id AND u.id = l.user_id
		JOIN tenants t ON t.id = l.tenant_id
		WHERE l.email = ? ORDER BY t.name, t.slug`, email)
	return rs, err
}

// countActiveAdmins counts the tenant's enabled admins other than except.
func countActiveAdmins(ctx context.Context, x db.Ext, tenantID, except string) (int, error) {
	var n int
	err := x.GetContext(ctx, &n, `SELECT COUNT(*) FROM users WHERE tenant_id = ? AND role = 'admin' AND disabled_at IS NULL AND id <> ?`, tenantID, except)
	return n, err
}

func getPasswordHash(ctx context.Context, x db.Ext, tenantID, id string) (string, error) {
	var h string
	err := x.GetContext(ctx, &h, `SELECT password_hash FROM users WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return h, db.MapErr(err, "user not found", "")
}

func updateUserName(ctx context.Context, x db.Ext, tenantID, id, name string) error {
	_, err := x.ExecContext(ctx, `UPDATE users SET name = ? WHERE tenant_id = ? AND id = ?`, name, tenantID, id)
	return err
}

// deleteUser removes a membership: the user row, its login row, its
// sessions and its invitation and reset links.
func deleteUser(ctx context.Context, x db.Ext, tenantID, id, email string) error {
	if _, err := x.ExecContext(ctx, `DELETE FROM sessions WHERE tenant_id = ? AND user_id = ?`, tenantID, id); err != nil {
		return err
	}
	if _, err := x.ExecContext(ctx, `DELETE FROM user_links WHERE tenant_id = ? AND user_id = ?`, tenantID, id); err != nil {
		return err
	}
	if _, err := x.ExecContext(ctx, `DELETE FROM user_logins WHERE email = ? AND tenant_id = ?`, email, tenantID); err != nil {
		return err
	}
	_, err := x.ExecContext(ctx, `DELETE FROM users WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return err
}

func insertToken(ctx context.Context, x db.Ext, t Token, hash []byte) error {
	_, err := x.ExecContext(ctx, `INSERT INTO api_tokens (tenant_id, id, name, scopes, expires_at, token_hash, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, t.TenantID, t.ID, t.Name, t.Scopes, t.ExpiresAt, hash, t.CreatedBy, t.CreatedAt)
	return db.MapErr(err, "", "token exists")
}

func getTokenByHash(ctx context.Context, x db.Ext, tenantID string, hash []byte) (Token, error) {
	var t Token
	err := x.GetContext(ctx, &t, `SELECT `+tokenCols+` FROM api_tokens WHERE tenant_id = ? AND token_hash = ?`, tenantID, hash)
	return t, db.MapErr(err, "token not found", "")
}

func listTokens(ctx context.Context, x db.Ext, tenantID string) ([]Token, error) {
	var ts []Token
	err := x.SelectContext(ctx, &ts, `SELECT `+tokenCols+` FROM api_tokens WHERE tenant_id = ? ORDER BY created_at DESC`, tenantID)
	return ts, err
}

func revokeToken(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) (int64, error) {
	res, err := x.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE tenant_id = ? AND id = ?`, now, tenantID, id)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func updateUserRole(ctx context.Context, x db.Ext, tenantID, id, role string) error {
	_, err := x.ExecContext(ctx, `UPDATE users SET role = ? WHERE tenant_id = ? AND id = ?`, role, tenantID, id)
	return err
}

func updateUserDisabledAt(ctx context.Context, x db.Ext, tenantID, id string, at *time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE users SET disabled_at = ? WHERE tenant_id = ? AND id = ?`, at, tenantID, id)
	return err
}

func tokenExists(ctx context.Context, x db.Ext, tenantID, id string) error {
	var n int
	if err := x.GetContext(ctx, &n, `SELECT COUNT(*) FROM api_tokens WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		return err
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "token not found")
	}
	return nil
}

// touchToken records a token's last use.
func touchToken(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE tenant_id = ? AND id = ?`, now, tenantID, id)
	return err
}

func insertSession(ctx context.Context, x db.Ext, tenantID, id, userID string, hash []byte, now, expires time.Time) error {
	_, err := x.ExecContext(ctx, `INSERT INTO sessions (tenant_id, id, user_id, token_hash, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, tenantID, id, userID, hash, now, expires)
	return err
}

type sessionRow struct {
	UserID    string    `db:"user_id"`
	Hash      []byte    `db:"token_hash"`
	ExpiresAt time.Time `db:"expires_at"`
}

func getSession(ctx context.Context, x db.Ext, tenantID, id string) (sessionRow, error) {
	var row sessionRow
	err := x.GetContext(ctx, &row, `SELECT user_id, token_hash, expires_at FROM sessions WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return row, db.MapErr(err, "session not found", "")
}

func deleteUserSessions(ctx context.Context, x db.Ext, tenantID, userID string) error {
	_, err := x.ExecContext(ctx, `DELETE FROM sessions WHERE tenant_id = ? AND user_id = ?`, tenantID, userID)
	return err
}

func deleteSession(ctx context.Context, x db.Ext, tenantID, id string) error {
	_, err := x.ExecContext(ctx, `DELETE FROM sessions WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return err
}

// ---- A user's own time zone ----

func updateUserTimeZone(ctx context.Context, x db.Ext, tenantID, id, tz string) (int64, error) {
	res, err := x.ExecContext(ctx, `UPDATE users SET time_zone = ? WHERE tenant_id = ? AND id = ?`, tz, tenantID, id)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// UserState is what other areas need of a user: the name, and whether the
// user is disabled.
type UserState struct {
	Name     string
	Disabled bool
	// AwayUntil: away until then (nil: not away); see User.Away.
	AwayUntil *time.Time
}

// UserStates returns the given users of a tenant; ids of no such user are
// absent. It runs in the caller's transaction x (an edit or the creating
// transaction of a lead checks its owner there).
func UserStates(ctx context.Context, x db.Ext, tenantID string, userIDs []string) (map[string]UserState, error) {
	out := map[string]UserState{}
	if len(userIDs) == 0 {
		return out, nil
	}
	var us []struct {
		ID       string     `db:"id"`
		Name     string     `db:"name"`
		Disabled *time.Time `db:"disabled_at"`
		Away     *time.Time `db:"away_until"`
	}
	if err := db.SelectIn(ctx, x, &us, `SELECT id, name, disabled_at, away_until FROM users WHERE tenant_id = ? AND id IN (?)`, tenantID, userIDs); err != nil {
		return nil, err
	}
	for _, u := range us {
		out[u.ID] = UserState{Name: u.Name, Disabled: u.Disabled != nil, AwayUntil: u.Away}
	}
	return out, nil
}

// IDBySlug returns the id of the tenant with a slug (apperr.NotFound with
// notFound as its message when there is none).
func IDBySlug(ctx context.Context, x db.Ext, slug, notFound string) (string, error) {
	t, err := getTenantBySlug(ctx, x, slug)
	if apperr.Is(err, apperr.NotFound) {
		return "", apperr.New(apperr.NotFound, "%s", notFound)
	}
	return t.ID, err
}
