package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
)

type auditRow struct {
	Action     string  `db:"action"`
	ActorKind  string  `db:"actor_kind"`
	ActorID    string  `db:"actor_id"`
	ActorName  string  `db:"actor_name"`
	TargetType string  `db:"target_type"`
	TargetID   string  `db:"target_id"`
	IP         string  `db:"ip"`
	Detail     *string `db:"detail"`
}

func auditRows(t *testing.T, e *apptest.Env, tenantID string) []auditRow {
	t.Helper()
	var rows []auditRow
	if err := e.App.DB.SelectContext(context.Background(), &rows, `SELECT action, actor_kind, actor_id, actor_name, target_type, target_id, ip, detail
		FROM audit_log WHERE tenant_id = ? ORDER BY id`, tenantID); err != nil {
		t.Fatal(err)
	}
	return rows
}

// Login, logout, tokens and users leave audit rows with the actor and the
// client address; an action that fails after its audit insert (a taken
// email, removing the last admin) leaves none; no row holds a password or
// a token.
func TestAuditRowsForAccessActions(t *testing.T) {
	e := uiEnv(t, "web_audit_access")
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	secrets := []string{acme.AdminPassword, acme.Token, beta.Token, "sam-password-1", "wrong-password-1"}

	b := newBrowser(t, e)
	b.post("/login", url.Values{"email": {acme.Admin.Email}, "password": {"wrong-password-1"}})
	b.login(acme.Admin.Email, acme.AdminPassword)
	b.post("/logout", url.Values{})

	st, out := createToken(t, e, acme.Token, map[string]any{"name": "reports", "scopes": []string{"leads:read"}})
	if st != http.StatusCreated {
		t.Fatalf("token: %d", st)
	}
	secrets = append(secrets, out["token"].(string))
	tokenID := out["id"].(string)
	if res := e.Do("DELETE", "/api/v1/tokens/"+tokenID, acme.Token, nil); res.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d", res.Status)
	}
	res := e.Do("POST", "/api/v1/users", acme.Token, map[string]any{"email": "sam@acme.test", "name": "Sam", "role": "staff", "password": "sam-password-1"})
	var sam apiUserBody
	res.JSON(t, &sam)
	// Fails after its audit insert: the email is taken.
	if res := e.Do("POST", "/api/v1/users", acme.Token, map[string]any{"email": "sam@acme.test", "name": "Sam 2", "role": "staff", "password": "sam-password-1"}); res.Status != http.StatusConflict {
		t.Fatalf("duplicate: %d", res.Status)
	}
	// Fails after its audit insert: the last active admin.
	if res := e.Do("DELETE", "/api/v1/users/"+acme.Admin.ID, acme.Token, nil); res.Status != http.StatusConflict {
		t.Fatalf("remove the last admin: %d", res.Status)
	}
	e.Do("PATCH", "/api/v1/users/"+sam.ID, acme.Token, map[string]any{"role": "admin"})
	// The users page changes through the same service, as the signed-in admin.
	b.login(acme.Admin.Email, acme.AdminPassword)
	if p := b.post("/settings/users/"+sam.ID+"/disabled", url.Values{"disabled": {"true"}}); p.status != http.StatusSeeOther {
		t.Fatalf("disable from the page: %d", p.status)
	}
	if p := b.post("/settings/users/"+sam.ID+"/remove", url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("remove from the page: %d", p.status)
	}
	if p := b.get("/settings/users"); strings.Contains(p.body, "sam@acme.test") {
		t.Fatal("removed user still listed")
	}

	rows := auditRows(t, e, acme.ID)
	// Provisioning (here through the service, so by the system) comes first.
	if len(rows) < 2 || rows[0].Action != "user.created" || rows[0].TargetID != acme.Admin.ID || rows[1].Action != "token.created" {
		t.Fatalf("provisioning rows: %+v", rows)
	}
	rows = rows[2:]
	var got []string
	for _, r := range rows {
		got = append(got, r.Action+" "+r.ActorKind)
		for _, s := range secrets {
			if strings.Contains(r.ActorName, s) || strings.Contains(r.TargetID, s) || (r.Detail != nil && strings.Contains(*r.Detail, s)) {
				t.Errorf("audit row %s holds a secret", r.Action)
			}
		}
		if r.IP != "127.0.0.1" {
			t.Errorf("%s: ip %q", r.Action, r.IP)
		}
	}
	want := []string{
		"user.login_failed user", "user.logged_in user", "user.logged_out user",
		"token.created token", "token.revoked token",
		"user.created token", "user.changed token", "user.logged_in user", "user.changed user", "user.removed user",
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("audit rows:\n got  %v\n want %v", got, want)
	}
	if rows[1].ActorID != acme.Admin.ID || rows[3].ActorID == "" || rows[3].TargetID != tokenID || rows[5].TargetID != sam.ID {
		t.Fatalf("actors and targets: %+v", rows)
	}
	if rows[8].ActorID != acme.Admin.ID || rows[8].Detail == nil || !strings.Contains(*rows[8].Detail, `"active": false`) && !strings.Contains(*rows[8].Detail, `"active":false`) {
		t.Fatalf("the page's change: %+v", rows[8])
	}
	if n := len(auditRows(t, e, beta.ID)); n != 2 {
		t.Fatalf("beta has %d audit rows, want its 2 of provisioning", n)
	}

	// Provisioning through the operator API is the operator's, from its address.
	res = e.Do("POST", "/api/admin/v1/tenants", "test-admin-token-0123456789", map[string]any{"slug": "gamma", "name": "Gamma",
		"admin_email": "a@gamma.test", "admin_password": "gamma-password-1"})
	var g struct {
		ID       string `json:"id"`
		APIToken string `json:"api_token"`
	}
	res.JSON(t, &g)
	rows = auditRows(t, e, g.ID)
	if len(rows) != 2 || rows[0].ActorKind != "operator" || rows[1].ActorKind != "operator" || rows[0].IP != "127.0.0.1" {
		t.Fatalf("operator provisioning rows: %+v", rows)
	}
	for _, r := range rows {
		if r.Detail != nil && (strings.Contains(*r.Detail, "gamma-password-1") || strings.Contains(*r.Detail, g.APIToken)) {
			t.Fatal("a provisioning row holds a secret")
		}
	}
}
