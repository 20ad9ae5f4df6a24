package tenants

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// One-time links: an invitation lets a new user choose their password, a
// password reset lets a user choose a new one (docs/NOTIFICATIONS.md,
// "Invitations and password reset"). Kinds equal the notification kinds
// that carry them.
const (
	LinkInvitation    = "invitation"
	LinkPasswordReset = "password_reset"
)

// Lifetimes. An invitation waits 72 hours: long enough for a weekend (sent
// on Friday, opened on Monday morning), short enough that a forwarded or
// forgotten mail soon stops opening a workspace. A reset lasts an hour:
// the person asked for it a moment ago and is waiting for it.
const (
	InvitationTTL = 72 * time.Hour
	ResetTTL      = time.Hour
)

// IssuedLink is a link just made, for the message that carries it.
type IssuedLink struct {
	ID        string
	Kind      string
	UserID    string
	Inviter   string // who invited (invitations by a person), else ""
	ExpiresAt time.Time
}

// LinkNotifier writes the message that carries a new link, in the
// transaction that makes the link (the e-mail outbox; wired in
// internal/app).
type LinkNotifier interface {
	LinkIssued(ctx context.Context, x db.Ext, tenantID string, l IssuedLink) error
}

// Option tunes a Service.
type Option func(*Service)

// WithLinks lets the service make invitation and reset links: key derives
// each link's secret (from LEADPIPE_SECRET_KEY), n writes the message that
// carries it. Without it, users are created with a password only and
// resets answer as for an unknown address.
func WithLinks(key []byte, n LinkNotifier) Option {
	return func(s *Service) { s.linkKey, s.linkMail = append([]byte(nil), key...), n }
}

// ErrLinkGone is the one answer for a link that is unknown, used,
// withdrawn, expired or of a disabled user: the page says no more.
var ErrLinkGone = apperr.New(apperr.NotFound, "this link was used, has expired or was replaced by a newer one")

// linkSecret derives a link's secret: the hash of it is stored, and the
// outbox asks for the link again at send time (LinkToken) instead of
// keeping it.
func (s *Service) linkSecret(tenantID, id, kind string) string {
	m := hmac.New(sha256.New, s.linkKey)
	m.Write([]byte("user-link\x00" + tenantID + "\x00" + id + "\x00" + kind))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// linkToken is what the URL carries: <tenant id>.<link id>.<secret>; the
// tenant id in the clear keeps the lookup within one tenant's links.
func (s *Service) linkToken(tenantID, id, kind string) string {
	return tenantID + "." + id + "." + s.linkSecret(tenantID, id, kind)
}

type linkRow struct {
	TenantID    string     `db:"tenant_id"`
	ID          string     `db:"id"`
	UserID      string     `db:"user_id"`
	Kind        string     `db:"kind"`
	Hash        []byte     `db:"token_hash"`
	ExpiresAt   time.Time  `db:"expires_at"`
	UsedAt      *time.Time `db:"used_at"`
	WithdrawnAt *time.Time `db:"withdrawn_at"`
}

func (l linkRow) live(now time.Time) bool {
	return l.UsedAt == nil && l.WithdrawnAt == nil && now.Before(l.ExpiresAt)
}

// issueLink records a new link of kind for a user in tx and writes the
// message that carries it.
func (s *Service) issueLink(ctx context.Context, tx db.Ext, tenantID, userID, kind string, by *string, inviter string) (IssuedLink, error) {
	if s.linkKey == nil || s.linkMail == nil {
		return IssuedLink{}, apperr.New(apperr.Unavailable, "invitation and reset links are not configured")
	}
	now := s.now().UTC()
	ttl := ResetTTL
	if kind == LinkInvitation {
		ttl = InvitationTTL
	}
	l := IssuedLink{ID: ids.New(), Kind: kind, UserID: userID, Inviter: inviter, ExpiresAt: now.Add(ttl)}
	h := sha256.Sum256([]byte(s.linkSecret(tenantID, l.ID, kind)))
	if _, err := tx.ExecContext(ctx, `INSERT INTO user_links (tenant_id, id, user_id, kind, token_hash, created_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, tenantID, l.ID, userID, kind, h[:], by, now, l.ExpiresAt); err != nil {
		return IssuedLink{}, err
	}
	return l, s.linkMail.LinkIssued(ctx, tx, tenantID, l)
}

// withdrawLinks ends a user's live links (of kind; "" every kind) but
// except.
func withdrawLinks(ctx context.Context, x db.Ext, tenantID, userID, kind, except string, now time.Time) error {
	q := `UPDATE user_links SET withdrawn_at = ? WHERE tenant_id = ? AND user_id = ? AND used_at IS NULL AND withdrawn_at IS NULL AND id <> ?`
	args := []any{now, tenantID, userID, except}
	if kind != "" {
		q += ` AND kind = ?`
		args = append(args, kind)
	}
	_, err := x.ExecContext(ctx, q, args...)
	return err
}

func getLink(ctx context.Context, x db.Ext, tenantID, id string) (linkRow, error) {
	var l linkRow
	err := x.GetContext(ctx, &l, `SELECT tenant_id, id, user_id, kind, token_hash, expires_at, used_at, withdrawn_at
		FROM user_links WHERE tenant_id = ? AND id = ?`, tenantID, id)
	if err != nil {
		return l, db.MapErr(err, ErrLinkGone.Message, "")
	}
	return l, nil
}

// LinkToken is the token of a live link for its message (the outbox, at
// send time): ErrLinkGone once it was used, withdrawn or expired, or when
// LEADPIPE_SECRET_KEY changed since it was made.
func (s *Service) LinkToken(ctx context.Context, tenantID, kind, id string) (string, time.Time, error) {
	if s.linkKey == nil || !ids.Valid(id) {
		return "", time.Time{}, ErrLinkGone
	}
	l, err := getLink(ctx, s.DB, tenantID, id)
	if err != nil {
		return "", time.Time{}, err
	}
	h := sha256.Sum256([]byte(s.linkSecret(tenantID, id, kind)))
	if l.Kind != kind || !l.live(s.now()) || subtle.ConstantTimeCompare(h[:], l.Hash) != 1 {
		return "", time.Time{}, ErrLinkGone
	}
	return s.linkToken(tenantID, id, kind), l.ExpiresAt, nil
}

// LinkInfo is what the page behind a link shows.
type LinkInfo struct {
	Kind      string
	User      User
	Tenant    Tenant
	ExpiresAt time.Time
}

// parseLinkToken splits a token and checks its secret against the stored
// hash; it reads the row with x.
func (s *Service) parseLinkToken(ctx context.Context, x db.Ext, token, kind string) (linkRow, error) {
	parts := strings.Split(token, ".")
	if s.linkKey == nil || len(token) > 200 || len(parts) != 3 || !ids.Valid(parts[0]) || !ids.Valid(parts[1]) {
		return linkRow{}, ErrLinkGone
	}
	l, err := getLink(ctx, x, parts[0], parts[1])
	if err != nil {
		return linkRow{}, err
	}
	h := sha256.Sum256([]byte(parts[2]))
	if subtle.ConstantTimeCompare(h[:], l.Hash) != 1 || l.Kind != kind {
		return linkRow{}, ErrLinkGone
	}
	return l, nil
}

// OpenLink checks a link without using it (the GET of its page: mail
// scanners that fetch links must not spend them).
func (s *Service) OpenLink(ctx context.Context, token, kind string) (LinkInfo, error) {
	l, err := s.parseLinkToken(ctx, s.DB, token, kind)
	if err != nil {
		return LinkInfo{}, err
	}
	if !l.live(s.now()) {
		return LinkInfo{}, ErrLinkGone
	}
	u, err := getUser(ctx, s.DB, l.TenantID, l.UserID)
	if err != nil || u.DisabledAt != nil {
		return LinkInfo{}, ErrLinkGone
	}
	t, err := getTenant(ctx, s.DB, l.TenantID)
	if err != nil {
		return LinkInfo{}, err
	}
	return LinkInfo{Kind: kind, User: u, Tenant: t, ExpiresAt: l.ExpiresAt}, nil
}

// UseLink spends a live link of kind and sets the user's password to
// password, in one transaction: the link is marked used by one conditional
// UPDATE (of concurrent uses exactly one finds it unused), and every other
// live link of the user is withdrawn. A reset also ends the user's
// sessions in this tenant: whoever had the old password is signed out.
func (s *Service) UseLink(ctx context.Context, token, kind, password string) (User, error) {
	if msg := passwordProblem(password); msg != "" {
		return User{}, apperr.InvalidFields(map[string]string{"password": msg})
	}
	// The link is checked before the (slow) hash, and again, for good,
	// in the transaction.
	if _, err := s.parseLinkToken(ctx, s.DB, token, kind); err != nil {
		return User{}, err
	}
	hash, err := s.hashPassword(password)
	if err != nil {
		return User{}, err
	}
	var out User
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		l, err := s.parseLinkToken(ctx, tx, token, kind)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		res, err := tx.ExecContext(ctx, `UPDATE user_links SET used_at = ? WHERE tenant_id = ? AND id = ?
			AND used_at IS NULL AND withdrawn_at IS NULL AND expires_at > ?`, now, l.TenantID, l.ID, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return ErrLinkGone
		}
		u, err := getUser(ctx, tx, l.TenantID, l.UserID)
		if err != nil || u.DisabledAt != nil {
			return ErrLinkGone
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = ? WHERE tenant_id = ? AND id = ?`, hash, u.TenantID, u.ID); err != nil {
			return err
		}
		if err := withdrawLinks(ctx, tx, u.TenantID, u.ID, "", l.ID, now); err != nil {
			return err
		}
		action := "user.invitation_accepted"
		if kind == LinkPasswordReset {
			action = "user.password_reset"
			if err := deleteUserSessions(ctx, tx, u.TenantID, u.ID); err != nil {
				return err
			}
		}
		out = u
		return audit.Record(ctx, tx, u.TenantID, audit.Entry{Action: action, TargetType: "user", TargetID: u.ID,
			Actor: audit.Actor{Kind: audit.ActorUser, ID: u.ID, Name: u.Name}, IP: audit.From(ctx).IP})
	})
	return out, err
}

// RequestReset makes a reset link for every enabled membership of email
// (each tenant's password is its own, so each gets its own message naming
// the tenant). It answers nothing about whether the address is known: an
// unknown address returns nil as a known one does.
func (s *Service) RequestReset(ctx context.Context, email string) error {
	email = strings.ToLower(strings.TrimSpace(email))
	if !ValidEmail(email) || s.linkKey == nil {
		return nil
	}
	rows, err := getLogin(ctx, s.DB, email)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.DisabledAt != nil {
			continue
		}
		err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			if _, err := s.issueLink(ctx, tx, r.TenantID, r.ID, LinkPasswordReset, nil, ""); err != nil {
				return err
			}
			return audit.Record(ctx, tx, r.TenantID, audit.Entry{Action: "user.password_reset_requested", TargetType: "user", TargetID: r.ID,
				Actor: audit.Actor{Kind: audit.ActorUser, Name: email}, IP: audit.From(ctx).IP})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Invite sends a user who has not chosen a password yet a new invitation
// (the last one expired or was lost); older invitation links stop working.
// A user with a password of their own gets a Conflict: they can reset it.
func (s *Service) Invite(ctx context.Context, tenantID, userID string, by *string) (IssuedLink, error) {
	var out IssuedLink
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		u, err := getUser(ctx, tx, tenantID, userID)
		if err != nil {
			return err
		}
		h, err := getPasswordHash(ctx, tx, tenantID, userID)
		if err != nil {
			return err
		}
		if h != "" {
			return apperr.New(apperr.Conflict, "%s already has a password; they can use \"Forgot password?\" on the sign-in page", u.Name)
		}
		if u.DisabledAt != nil {
			return apperr.New(apperr.Conflict, "%s is disabled: enable them first", u.Name)
		}
		if err := withdrawLinks(ctx, tx, tenantID, userID, LinkInvitation, "", s.now().UTC()); err != nil {
			return err
		}
		if out, err = s.issueLink(ctx, tx, tenantID, userID, LinkInvitation, by, s.inviterName(ctx, tx, tenantID, by)); err != nil {
			return err
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "user.invited", TargetType: "user", TargetID: userID,
			Detail: map[string]any{"email": u.Email, "expires_at": out.ExpiresAt}})
	})
	return out, err
}

func (s *Service) inviterName(ctx context.Context, x db.Ext, tenantID string, by *string) string {
	if by == nil {
		return ""
	}
	u, err := getUser(ctx, x, tenantID, *by)
	if err != nil {
		return ""
	}
	return u.Name
}

// Invitations returns the tenant's users who have not chosen a password
// yet, each with the expiry of their live invitation (nil: none is live,
// the last one expired or was never sent).
func (s *Service) Invitations(ctx context.Context, tenantID string) (map[string]*time.Time, error) {
	var rs []struct {
		ID      string     `db:"id"`
		Expires *time.Time `db:"expires"`
	}
	err := s.DB.SelectContext(ctx, &rs, `SELECT u.id, (SELECT MAX(l.expires_at) FROM user_links l
			WHERE l.tenant_id = u.tenant_id AND l.user_id = u.id AND l.kind = 'invitation'
			AND l.used_at IS NULL AND l.withdrawn_at IS NULL AND l.expires_at > ?) AS expires
		FROM users u WHERE u.tenant_id = ? AND u.password_hash = ''`, s.now().UTC(), tenantID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*time.Time, len(rs))
	for _, r := range rs {
		out[r.ID] = r.Expires
	}
	return out, nil
}
