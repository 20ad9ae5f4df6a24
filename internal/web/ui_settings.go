package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
	"leadpipe/views/settings"
)

func (s *Server) usersView(w http.ResponseWriter, r *http.Request, form settings.UserForm) (settings.UsersView, error) {
	sess := sessionFrom(r.Context())
	us, err := s.Tenants.Users(r.Context(), sess.Tenant.ID)
	if err != nil {
		return settings.UsersView{}, err
	}
	invited, err := s.Tenants.Invitations(r.Context(), sess.Tenant.ID)
	if err != nil {
		return settings.UsersView{}, err
	}
	v := settings.UsersView{Page: s.page(w, r, "Users", "users"), Form: form, Now: time.Now()}
	for _, u := range us {
		until, inv := invited[u.ID]
		v.Users = append(v.Users, settings.User{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role,
			Disabled: u.DisabledAt != nil, CreatedAt: u.CreatedAt, IsYou: u.ID == sess.User.ID,
			Invited: inv, InviteUntil: until, AwayUntil: u.AwayUntil})
	}
	v.Form.Key = keepFormKey(v.Form.Key)
	return v, nil
}

func (s *Server) uiCreateUser(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	// The page invites: the person chooses their own password from the
	// link in the e-mail (an admin sets one only through the API).
	by := sess.User.ID
	in := tenants.CreateUserInput{Name: r.PostFormValue("name"), Email: r.PostFormValue("email"),
		Role: r.PostFormValue("role"), InvitedBy: &by}
	form := settings.UserForm{Name: in.Name, Email: in.Email, Role: in.Role, Key: r.PostFormValue("key")}
	loc, err := s.uiOnce(r.Context(), sess.Tenant.ID, form.Key, "users", func(k *idempotency.Key) (string, error) {
		u, err := s.Tenants.CreateUserOnce(r.Context(), sess.Tenant.ID, in, idempotency.Once[tenants.User]{Key: k,
			Respond: func(u tenants.User) (idempotency.Response, error) {
				return idempotency.SeeOther("/settings/users#user-" + u.ID), nil
			}})
		return "/settings/users#user-" + u.ID, err
	})
	if err != nil {
		switch apperr.CodeOf(err) {
		case apperr.Invalid:
			form.Errors = fieldErrors(err)
			if form.Errors["password"] != "" {
				form.Problem = "Invitations need LEADPIPE_SECRET_KEY and the e-mail outbox; add the user through the API with a password instead."
			}
		case apperr.Conflict:
			form.Errors = map[string]string{"email": "Someone already signs in with this email."}
		default:
			s.uiError(w, r, err)
			return
		}
		v, verr := s.usersView(nil, r, form)
		if verr != nil {
			s.uiError(w, r, verr)
			return
		}
		s.render(w, r, http.StatusUnprocessableEntity, settings.Users(v))
		return
	}
	s.setFlash(w, r, s.invitedText(strings.TrimSpace(in.Name)))
	seeOther(w, r, loc)
}

// invitedText confirms an invitation, saying where the message went.
func (s *Server) invitedText(name string) string {
	msg := "Invited " + name + ": they get an e-mail with a link to choose their password (it works once, for 72 hours)."
	if s.Notify != nil && !s.Notify.Sending() {
		msg += " No SMTP server is set up: the message is in E-mail preview (Settings → E-mail)."
	}
	return msg
}

// uiReinvite is POST /settings/users/{id}/invite: a new invitation for
// someone who has not chosen a password yet (the older link stops working).
func (s *Server) uiReinvite(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		s.uiNotFound(w, r)
		return
	}
	by := sess.User.ID
	if _, err := s.Tenants.Invite(r.Context(), sess.Tenant.ID, id, &by); s.userChangeFailed(w, r, err) {
		return
	}
	u, err := s.Tenants.User(r.Context(), sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, s.invitedText(u.Name))
	seeOther(w, r, "/settings/users")
}

// uiUserAway is POST /settings/users/{id}/away: an admin sets a member
// away until a time typed in the admin's zone (round robin skips them),
// or back (back=1 or an empty field).
func (s *Server) uiUserAway(w http.ResponseWriter, r *http.Request) {
	sess, id, ok := s.userForm(w, r)
	if !ok {
		return
	}
	var until *time.Time
	if typed := strings.TrimSpace(r.PostFormValue("away_until")); r.PostFormValue("back") == "" && typed != "" {
		t, err := time.ParseInLocation("2006-01-02T15:04", typed, sess.User.Location())
		if err != nil {
			s.setFlashError(w, r, "Away until: pick a date and time.")
			seeOther(w, r, "/settings/users")
			return
		}
		until = &t
	}
	now := time.Now()
	u, err := s.Tenants.SetAway(r.Context(), sess.Tenant.ID, id, until, now)
	if apperr.Is(err, apperr.Invalid) {
		s.setFlashError(w, r, "Away until: pick a time within a year.")
		seeOther(w, r, "/settings/users")
		return
	}
	if s.userChangeFailed(w, r, err) {
		return
	}
	if u.Away(now) {
		s.setFlash(w, r, u.Name+" is away until "+u.AwayUntil.In(sess.User.Location()).Format("Mon 2 Jan 15:04")+": round robin gives them no new leads until then.")
	} else {
		s.setFlash(w, r, u.Name+" is back: round robin gives them new leads again.")
	}
	seeOther(w, r, "/settings/users#user-"+u.ID)
}

func (s *Server) uiUserRole(w http.ResponseWriter, r *http.Request) {
	// An admin demoting themselves could leave nobody to undo it.
	sess, id, ok := s.otherUserForm(w, r, "You cannot change your own role; ask another admin.")
	if !ok {
		return
	}
	role := r.PostFormValue("role")
	u, err := s.Tenants.UpdateUser(r.Context(), sess.Tenant.ID, id, tenants.UserPatch{Role: &role})
	if s.userChangeFailed(w, r, err) {
		return
	}
	s.setFlash(w, r, u.Name+" is now "+roleWord(r.PostFormValue("role"))+".")
	seeOther(w, r, "/settings/users")
}

// userForm reads the form of a POST /settings/users/{id}/… and the
// session; false when it has answered (a bad form, an id that is none).
func (s *Server) userForm(w http.ResponseWriter, r *http.Request) (*uiSession, string, bool) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return nil, "", false
	}
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		s.uiNotFound(w, r)
		return nil, "", false
	}
	return sessionFrom(r.Context()), id, true
}

// otherUserForm is userForm for a change an admin may not make to their
// own account: on their own id it answers with refusal.
func (s *Server) otherUserForm(w http.ResponseWriter, r *http.Request, refusal string) (*uiSession, string, bool) {
	sess, id, ok := s.userForm(w, r)
	if ok && id == sess.User.ID {
		s.setFlash(w, r, refusal)
		seeOther(w, r, "/settings/users")
		return nil, "", false
	}
	return sess, id, ok
}

func roleWord(r string) string {
	if r == tenants.RoleAdmin {
		return "an admin"
	}
	return "staff"
}

func (s *Server) uiUserDisabled(w http.ResponseWriter, r *http.Request) {
	sess, id, ok := s.otherUserForm(w, r, "You cannot disable yourself; ask another admin.")
	if !ok {
		return
	}
	disable := r.PostFormValue("disabled") == "true"
	active := !disable
	u, err := s.Tenants.UpdateUser(r.Context(), sess.Tenant.ID, id, tenants.UserPatch{Active: &active})
	if s.userChangeFailed(w, r, err) {
		return
	}
	if disable {
		s.setFlash(w, r, "Disabled "+u.Name+" and signed them out of this workspace.")
	} else {
		s.setFlash(w, r, "Enabled "+u.Name+"; they can sign in again.")
	}
	seeOther(w, r, "/settings/users")
}

// userChangeFailed answers a failed change from the users page: a refused
// one (the last admin) as a notice on the page, anything else as an error.
func (s *Server) userChangeFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case apperr.Is(err, apperr.Conflict):
		var e *apperr.Error
		errors.As(err, &e)
		s.setFlashError(w, r, e.Message)
		seeOther(w, r, "/settings/users")
	default:
		s.uiError(w, r, err)
	}
	return true
}

// uiRemoveUser removes a user from this tenant (not yourself).
func (s *Server) uiRemoveUser(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	if id == sess.User.ID {
		s.setFlash(w, r, "You cannot remove yourself; ask another admin.")
		seeOther(w, r, "/settings/users")
		return
	}
	u, err := s.Tenants.User(r.Context(), sess.Tenant.ID, id)
	if err == nil {
		err = s.Tenants.DeleteUser(r.Context(), sess.Tenant.ID, id)
	}
	if s.userChangeFailed(w, r, err) {
		return
	}
	s.setFlash(w, r, "Removed "+u.Name+" from this workspace.")
	seeOther(w, r, "/settings/users")
}

func (s *Server) tokensView(w http.ResponseWriter, r *http.Request) (settings.TokensView, error) {
	sess := sessionFrom(r.Context())
	ts, err := s.Tenants.Tokens(r.Context(), sess.Tenant.ID)
	if err != nil {
		return settings.TokensView{}, err
	}
	us, err := s.Tenants.Users(r.Context(), sess.Tenant.ID)
	if err != nil {
		return settings.TokensView{}, err
	}
	names := make(map[string]string, len(us))
	for _, u := range us {
		names[u.ID] = u.Name
	}
	v := settings.TokensView{Page: s.page(w, r, "API tokens", "tokens"), FormKey: newFormKey(), Now: time.Now()}
	for _, t := range ts {
		row := settings.Token{ID: t.ID, Name: t.Name, Scopes: t.Scopes, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
			LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
		if t.CreatedBy != nil {
			row.CreatedBy = names[*t.CreatedBy]
		}
		v.Tokens = append(v.Tokens, row)
	}
	return v, nil
}

// uiCreateToken answers with the page itself (no redirect): the new token
// is shown this once and never stored in plain text, not even in a cookie.
func (s *Server) uiCreateToken(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	in := tenants.TokenInput{Name: strings.TrimSpace(r.PostFormValue("name")), Scopes: r.PostForm["scopes"]}
	expiry := r.PostFormValue("expires")
	if days, err := strconv.Atoi(expiry); err == nil && days > 0 && days <= 3650 {
		at := time.Now().UTC().AddDate(0, 0, days)
		in.ExpiresAt = &at
	} else {
		expiry = ""
	}
	var secret string
	_, err := s.uiOnce(r.Context(), sess.Tenant.ID, r.PostFormValue("key"), "tokens", func(k *idempotency.Key) (string, error) {
		by := sess.User.ID
		_, plain, err := s.Tenants.CreateTokenOnce(r.Context(), sess.Tenant.ID, in, &by, idempotency.Once[tenants.Token]{Key: k,
			Respond: func(tenants.Token) (idempotency.Response, error) {
				return idempotency.SeeOther("/settings/tokens"), nil
			}})
		secret = plain
		return "/settings/tokens", err
	})
	status := http.StatusOK
	var fe map[string]string
	switch {
	case apperr.Is(err, apperr.Invalid):
		status, fe = http.StatusUnprocessableEntity, fieldErrors(err)
	case err != nil:
		s.uiError(w, r, err)
		return
	}
	v, verr := s.tokensView(nil, r)
	if verr != nil {
		s.uiError(w, r, verr)
		return
	}
	if fe != nil {
		v.FormName, v.FormScopes, v.FormExpiry = in.Name, in.Scopes, expiry
		v.FormError, v.ScopesError = fe["name"], fe["scopes"]
		if fe["name"] != "" {
			v.FormError = "Give the token a name (at most 200 characters)."
		}
		if fe["scopes"] != "" {
			v.ScopesError = "Pick at least one scope."
		}
	}
	if secret != "" {
		v.NewName, v.NewSecret = in.Name, secret
	} else if err == nil {
		// A repeated submit of the same form: the token exists and its
		// secret was shown on the first answer only.
		v.Page.Flash = "This token was already created; its secret was shown once, on the first submit."
	}
	s.render(w, r, status, settings.Tokens(v))
}

func (s *Server) uiRevokeToken(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		s.uiNotFound(w, r)
		return
	}
	if err := s.Tenants.RevokeToken(r.Context(), sess.Tenant.ID, id); err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Token revoked. Requests using it now get 401.")
	seeOther(w, r, "/settings/tokens")
}

// fieldErrors turns a service's field problems into sentences for forms.
func fieldErrors(err error) map[string]string {
	out := map[string]string{}
	var e *apperr.Error
	if errors.As(err, &e) {
		for k, v := range e.Fields {
			out[k] = sentence(k, v)
		}
	}
	return out
}

// sentence makes "must be an email address" read "Must be an email address.".
func sentence(field, msg string) string {
	if msg == "" {
		return ""
	}
	msg = strings.ToUpper(msg[:1]) + msg[1:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}
