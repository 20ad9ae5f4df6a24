package tenants

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"
	"golang.org/x/crypto/bcrypt"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
)

// CreateUserInput creates a user in a tenant. Without a Password the
// user is invited: an e-mail with a link valid InvitationTTL lets them
// choose their own (an admin never has to type one); a person who already
// signs in to another tenant can meanwhile sign in here with the password
// they have. With a Password (the users API) the admin sets it.
type CreateUserInput struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Password string `json:"password"`
	Role     string `json:"role"`
	// InvitedBy is the admin who invites (named in the invitation).
	InvitedBy *string `json:"-"`
}

// CreateUser adds a user to a tenant.
func (s *Service) CreateUser(ctx context.Context, tenantID string, in CreateUserInput) (User, error) {
	return s.CreateUserOnce(ctx, tenantID, in, idempotency.Once[User]{})
}

// CreateUserOnce is CreateUser under a claimed idempotency key (a form's
// per-render key): the key completes in the transaction that inserts the
// user and writes the invitation, so a double submit makes one user and
// one invitation, and a crash between the two cannot leave a user whose
// form may be sent again.
func (s *Service) CreateUserOnce(ctx context.Context, tenantID string, in CreateUserInput, once idempotency.Once[User]) (User, error) {
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	in.Name = strings.TrimSpace(in.Name)
	f := map[string]string{}
	if !ValidEmail(in.Email) {
		f["email"] = "must be an email address"
	}
	if in.Name == "" || len(in.Name) > 200 {
		f["name"] = "is required (at most 200 characters)"
	}
	if in.Role != RoleAdmin && in.Role != RoleStaff {
		f["role"] = "must be admin or staff"
	}
	hash := ""
	invite := in.Password == ""
	if !invite {
		if msg := passwordProblem(in.Password); msg != "" {
			f["password"] = msg
		}
	} else if _, ok := f["email"]; !ok {
		rows, err := getLogin(ctx, s.DB, in.Email)
		if err != nil {
			return User{}, err
		}
		if len(rows) > 0 {
			hash = rows[0].PasswordHash
		}
		if s.linkKey == nil {
			f["password"] = "is required (invitations are not configured)"
		}
	}
	if len(f) > 0 {
		return User{}, apperr.InvalidFields(f)
	}
	if !invite {
		var err error
		if hash, err = s.hashPassword(in.Password); err != nil {
			return User{}, err
		}
	}
	u := User{TenantID: tenantID, ID: ids.New(), Email: in.Email, Name: in.Name, Role: in.Role, CreatedAt: s.now()}
	return idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (User, error) {
		// The audit row first: when the insert fails (a taken email), the
		// transaction takes the row with it.
		if err := recordUserCreated(ctx, tx, u); err != nil {
			return u, err
		}
		if err := insertUser(ctx, tx, u, hash); err != nil {
			return u, err
		}
		if invite {
			l, err := s.issueLink(ctx, tx, tenantID, u.ID, LinkInvitation, in.InvitedBy, s.inviterName(ctx, tx, tenantID, in.InvitedBy))
			if err != nil {
				return u, err
			}
			return u, audit.Record(ctx, tx, tenantID, audit.Entry{Action: "user.invited", TargetType: "user", TargetID: u.ID,
				Detail: map[string]any{"email": u.Email, "expires_at": l.ExpiresAt}})
		}
		return u, nil
	})
}

// recordUserCreated audits a new user (never the password).
func recordUserCreated(ctx context.Context, tx db.Ext, u User) error {
	return audit.Record(ctx, tx, u.TenantID, audit.Entry{Action: "user.created", TargetType: "user", TargetID: u.ID,
		Detail: map[string]any{"email": u.Email, "name": u.Name, "role": u.Role}})
}

// User returns one user of the tenant.
func (s *Service) User(ctx context.Context, tenantID, id string) (User, error) {
	if !ids.Valid(id) {
		return User{}, apperr.New(apperr.NotFound, "user not found")
	}
	return getUser(ctx, s.DB, tenantID, id)
}

// Users lists the tenant's users.
func (s *Service) Users(ctx context.Context, tenantID string) ([]User, error) {
	return listUsers(ctx, s.DB, tenantID)
}

// UserPatch changes a user; nil fields stay as they are.
type UserPatch struct {
	Name   *string `json:"name"`
	Role   *string `json:"role"`
	Active *bool   `json:"active"`
}

// UpdateUser applies p (the users API and the users page). Disabling a
// user ends their sessions; the tenant always keeps an active admin.
func (s *Service) UpdateUser(ctx context.Context, tenantID, id string, p UserPatch) (User, error) {
	f := map[string]string{}
	if p.Role != nil && *p.Role != RoleAdmin && *p.Role != RoleStaff {
		f["role"] = "must be admin or staff"
	}
	if p.Name != nil {
		n := strings.TrimSpace(*p.Name)
		p.Name = &n
		if n == "" || len(n) > 200 {
			f["name"] = "is required (at most 200 characters)"
		}
	}
	if len(f) > 0 {
		return User{}, apperr.InvalidFields(f)
	}
	var out User
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		u, err := getUser(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		changed := map[string]any{}
		if p.Name != nil && *p.Name != u.Name {
			if err := updateUserName(ctx, tx, tenantID, id, *p.Name); err != nil {
				return err
			}
			changed["name"], u.Name = *p.Name, *p.Name
		}
		if p.Role != nil && *p.Role != u.Role {
			if err := updateUserRole(ctx, tx, tenantID, id, *p.Role); err != nil {
				return err
			}
			changed["role"], u.Role = *p.Role, *p.Role
		}
		if p.Active != nil && *p.Active != (u.DisabledAt == nil) {
			var at = u.DisabledAt
			if *p.Active {
				at = nil
			} else {
				n := s.now()
				at = &n
				if err := deleteUserSessions(ctx, tx, tenantID, id); err != nil {
					return err
				}
			}
			if err := updateUserDisabledAt(ctx, tx, tenantID, id, at); err != nil {
				return err
			}
			changed["active"], u.DisabledAt = *p.Active, at
		}
		out = u
		if len(changed) == 0 {
			return nil
		}
		if err := s.keepAnAdmin(ctx, tx, tenantID, u); err != nil {
			return err
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "user.changed", TargetType: "user", TargetID: id, Detail: changed})
	})
	return out, err
}

// keepAnAdmin refuses a change that leaves the tenant without an active
// admin (u is the user as it will be; nil when removed).
func (s *Service) keepAnAdmin(ctx context.Context, tx db.Ext, tenantID string, u User) error {
	if u.Role == RoleAdmin && u.DisabledAt == nil {
		return nil
	}
	n, err := countActiveAdmins(ctx, tx, tenantID, u.ID)
	if err != nil {
		return err
	}
	if n == 0 {
		return apperr.New(apperr.Conflict, "this is the tenant's last active admin: make someone else an admin first")
	}
	return nil
}

// DeleteUser removes a user from the tenant (their sessions end; their
// memberships of other tenants stay).
func (s *Service) DeleteUser(ctx context.Context, tenantID, id string) error {
	return db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		u, err := getUser(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "user.removed", TargetType: "user", TargetID: id,
			Detail: map[string]any{"email": u.Email, "name": u.Name}}); err != nil {
			return err
		}
		if err := deleteUser(ctx, tx, tenantID, id, u.Email); err != nil {
			return err
		}
		gone := u
		gone.Role = ""
		return s.keepAnAdmin(ctx, tx, tenantID, gone)
	})
}

// ErrBadLogin is the one message for every failed login.
var ErrBadLogin = apperr.New(apperr.Unauthorized, "email or password is incorrect")

// Login is a tenant an email and password opened.
type Login struct {
	User   User
	Tenant Tenant
}

// Authenticate checks an email and password against every tenant the
// email belongs to (each membership has its own password) and returns the
// enabled memberships it opens, in tenant name order; tenant (a slug, may
// be empty) narrows to one. A failure is recorded in the audit log of
// every tenant the email belongs to.
func (s *Service) Authenticate(ctx context.Context, email, password, tenant string) ([]Login, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	rows, err := getLogin(ctx, s.DB, email)
	if err != nil {
		return nil, err
	}
	var out []Login
	for _, r := range rows {
		if tenant != "" && r.TenantSlug != tenant {
			continue
		}
		if bcrypt.CompareHashAndPassword([]byte(r.PasswordHash), []byte(password)) == nil && r.DisabledAt == nil {
			out = append(out, Login{User: r.User, Tenant: Tenant{ID: r.TenantID, Slug: r.TenantSlug, Name: r.TenantName}})
		}
	}
	if len(rows) == 0 {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
	}
	for _, r := range rows {
		if r.PasswordHash == "" {
			// Invited, no password yet: as slow as a wrong one.
			_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		}
	}
	if len(out) == 0 {
		for _, r := range rows {
			if err := audit.Record(ctx, s.DB, r.TenantID, audit.Entry{Action: "user.login_failed", TargetType: "user", TargetID: r.ID,
				Actor: audit.Actor{Kind: audit.ActorUser, Name: email}, IP: audit.From(ctx).IP}); err != nil {
				return nil, err
			}
		}
		return nil, ErrBadLogin
	}
	return out, nil
}

// Member returns an enabled membership (the login's tenant chooser, after
// the password was checked).
func (s *Service) Member(ctx context.Context, tenantID, userID string) (Login, error) {
	u, err := getUser(ctx, s.DB, tenantID, userID)
	if err != nil || u.DisabledAt != nil {
		return Login{}, ErrBadLogin
	}
	t, err := getTenant(ctx, s.DB, tenantID)
	if err != nil {
		return Login{}, err
	}
	return Login{User: u, Tenant: t}, nil
}
