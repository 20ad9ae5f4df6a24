package web

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/tenants"
)

// APIUser is a user as the users API shows it.
type APIUser struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	Active     bool       `json:"active"`
	DisabledAt *time.Time `json:"disabled_at"`
	CreatedAt  time.Time  `json:"created_at"`
	// AwayUntil: round robin skips the user until then (null: not away).
	AwayUntil *time.Time `json:"away_until"`
	// Invited: the user has not chosen a password yet;
	// InvitationExpiresAt is when their live invitation link ends (null:
	// none is live; POST /api/v1/users/{id}/invitation sends a new one).
	Invited             bool       `json:"invited"`
	InvitationExpiresAt *time.Time `json:"invitation_expires_at"`
}

func toAPIUser(u tenants.User) APIUser {
	return APIUser{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Active: u.DisabledAt == nil,
		DisabledAt: u.DisabledAt, CreatedAt: u.CreatedAt, AwayUntil: u.AwayUntil}
}

// apiListUsers is GET /api/v1/users.
func (s *Server) apiListUsers(w http.ResponseWriter, r *http.Request) {
	us, err := s.Tenants.Users(r.Context(), Tenant(r))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	items, err := s.apiUsers(r.Context(), Tenant(r), us...)
	s.writeResult(w, r, http.StatusOK, listBody(items), err)
}

// apiUsers are us as the API shows them, each with its open invitation.
func (s *Server) apiUsers(ctx context.Context, tenantID string, us ...tenants.User) ([]APIUser, error) {
	invited, err := s.Tenants.Invitations(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	items := make([]APIUser, 0, len(us))
	for _, u := range us {
		v := toAPIUser(u)
		v.InvitationExpiresAt, v.Invited = invited[u.ID]
		items = append(items, v)
	}
	return items, nil
}

// apiCreateUser is POST /api/v1/users {"email","name","role","password"?}:
// without a password the person is invited (an e-mail with a link valid
// 72 h to choose one); with one, the admin has set it.
func (s *Server) apiCreateUser(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeBody[tenants.CreateUserInput](s, w, r)
	if !ok {
		return
	}
	u, err := s.Tenants.CreateUser(r.Context(), Tenant(r), in)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	items, err := s.apiUsers(r.Context(), Tenant(r), u)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	s.writeCreated(w, r, "/api/v1/users/"+u.ID, false, items[0], nil)
}

// apiInviteUser is POST /api/v1/users/{id}/invitation: a new invitation
// for a user who has not chosen a password yet (older links stop
// working); 409 for one who has.
func (s *Server) apiInviteUser(w http.ResponseWriter, r *http.Request) {
	l, err := s.Tenants.Invite(r.Context(), Tenant(r), chi.URLParam(r, "id"), nil)
	s.writeResult(w, r, http.StatusCreated, map[string]any{"user_id": l.UserID, "expires_at": l.ExpiresAt}, err)
}

// apiPatchUser is PATCH /api/v1/users/{id} {"name"?,"role"?,"active"?}.
func (s *Server) apiPatchUser(w http.ResponseWriter, r *http.Request) {
	decodeAndWrite(s, w, r, func(p tenants.UserPatch) (APIUser, error) {
		u, err := s.Tenants.UpdateUser(r.Context(), Tenant(r), chi.URLParam(r, "id"), p)
		return toAPIUser(u), err
	})
}

// apiDeleteUser is DELETE /api/v1/users/{id}: the user leaves this tenant.
func (s *Server) apiDeleteUser(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	s.writeNoContent(w, r, s.Tenants.DeleteUser(r.Context(), Tenant(r), id))
}
