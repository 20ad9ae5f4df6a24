package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// The users API: create (with a password the admin sets, or invited;
// someone of another tenant may come without one and keeps theirs), list, change
// role and active, remove; a taken email 409; another tenant's user 404;
// the last active admin cannot be demoted, disabled or removed.
func TestUsersAPI(t *testing.T) {
	e := uiEnv(t, "apiUserBodys_api")
	acme, beta := e.Tenant("acme"), e.Tenant("beta")

	res := e.Do("POST", "/api/v1/users", acme.Token, map[string]any{"email": "Sam@Acme.test", "name": "Sam", "role": "staff", "password": "sam-password-1"})
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var sam apiUserBody
	res.JSON(t, &sam)
	if sam.Email != "sam@acme.test" || sam.Role != "staff" || !sam.Active || strings.Contains(string(res.Body), "password") {
		t.Fatalf("created: %s", res.Body)
	}
	for _, c := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"email": "sam@acme.test", "name": "Sam again", "role": "staff", "password": "sam-password-2"}, http.StatusConflict},
		{map[string]any{"email": "new@acme.test", "name": "New", "role": "staff"}, http.StatusCreated}, // invited: chooses their own password
		{map[string]any{"email": "x@acme.test", "name": "X", "role": "owner", "password": "x-password-12"}, http.StatusUnprocessableEntity},
		{map[string]any{"email": "not-an-email", "name": "X", "role": "staff", "password": "x-password-12"}, http.StatusUnprocessableEntity},
	} {
		if res := e.Do("POST", "/api/v1/users", acme.Token, c.body); res.Status != c.want {
			t.Errorf("%v: %d %s, want %d", c.body, res.Status, res.Body, c.want)
		}
	}

	// Sam joins beta without a password: he signs in there with his own.
	res = e.Do("POST", "/api/v1/users", beta.Token, map[string]any{"email": "sam@acme.test", "name": "Sam B", "role": "admin"})
	if res.Status != http.StatusCreated {
		t.Fatalf("sam joins beta: %d %s", res.Status, res.Body)
	}
	var samBeta apiUserBody
	res.JSON(t, &samBeta)
	if ls, err := e.App.Tenants.Authenticate(context.Background(), "sam@acme.test", "sam-password-1", "beta"); err != nil || len(ls) != 1 || ls[0].User.Role != "admin" {
		t.Fatalf("sam signs in to beta with his password: %v %v", ls, err)
	}

	// Another tenant's user is 404 for every verb.
	for _, m := range []string{"PATCH", "DELETE"} {
		if res := e.Do(m, "/api/v1/users/"+sam.ID, beta.Token, map[string]any{"role": "admin"}); res.Status != http.StatusNotFound {
			t.Errorf("%s another tenant's user: %d", m, res.Status)
		}
	}
	res = e.Do("GET", "/api/v1/users", beta.Token, nil)
	if strings.Contains(string(res.Body), sam.ID) || !strings.Contains(string(res.Body), samBeta.ID) {
		t.Fatalf("beta's list: %s", res.Body)
	}

	// Change role and active; disabling ends his sessions.
	res = e.Do("PATCH", "/api/v1/users/"+sam.ID, acme.Token, map[string]any{"role": "admin", "active": false})
	var changed apiUserBody
	res.JSON(t, &changed)
	if res.Status != http.StatusOK || changed.Role != "admin" || changed.Active {
		t.Fatalf("patch: %d %s", res.Status, res.Body)
	}
	if ls, _ := e.App.Tenants.Authenticate(context.Background(), "sam@acme.test", "sam-password-1", ""); len(ls) != 1 || ls[0].Tenant.Slug != "beta" {
		t.Fatalf("disabled in acme, sam still opens: %v", ls)
	}
	if res := e.Do("PATCH", "/api/v1/users/"+sam.ID, acme.Token, map[string]any{"role": "boss"}); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("bad role: %d", res.Status)
	}

	// The last active admin stays.
	if res := e.Do("PATCH", "/api/v1/users/"+acme.Admin.ID, acme.Token, map[string]any{"role": "staff"}); res.Status != http.StatusConflict {
		t.Fatalf("demote the last active admin: %d %s", res.Status, res.Body)
	}
	if res := e.Do("DELETE", "/api/v1/users/"+acme.Admin.ID, acme.Token, nil); res.Status != http.StatusConflict {
		t.Fatalf("remove the last active admin: %d %s", res.Status, res.Body)
	}

	// Removing sam from acme leaves his beta membership.
	if res := e.Do("DELETE", "/api/v1/users/"+sam.ID, acme.Token, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if res := e.Do("DELETE", "/api/v1/users/"+sam.ID, acme.Token, nil); res.Status != http.StatusNotFound {
		t.Fatalf("delete again: %d", res.Status)
	}
	if ls, _ := e.App.Tenants.Authenticate(context.Background(), "sam@acme.test", "sam-password-1", ""); len(ls) != 1 || ls[0].Tenant.Slug != "beta" {
		t.Fatalf("after removal from acme: %v", ls)
	}
	// He can be added to acme again.
	if res := e.Do("POST", "/api/v1/users", acme.Token, map[string]any{"email": "sam@acme.test", "name": "Sam", "role": "staff"}); res.Status != http.StatusCreated {
		t.Fatalf("re-add: %d %s", res.Status, res.Body)
	}
}

type apiUserBody struct {
	ID     string `json:"id"`
	Email  string `json:"email"`
	Role   string `json:"role"`
	Active bool   `json:"active"`
}

// One email in two tenants: the login asks which one (or takes tenant
// from the form); each session sees its own tenant only; a forged or
// foreign choice is refused.
func TestLoginChoosesTenant(t *testing.T) {
	e := uiEnv(t, "ui_login_tenants")
	ctx := context.Background()
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	for _, ten := range []apptest.Tenant{acme, beta} {
		if _, err := e.App.Tenants.CreateUser(ctx, ten.ID, tenants.CreateUserInput{Email: "pat@example.test", Name: "Pat " + ten.Slug, Password: "pat-password-1", Role: "staff"}); err != nil {
			t.Fatal(err)
		}
		src, _ := e.Source(ten.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
		seedLead(t, e, ten.ID, src.ID, "r1", "Lead of "+ten.Slug, ten.Slug+"@lead.test")
	}
	for _, ten := range []apptest.Tenant{acme, beta} {
		b := newBrowser(t, e)
		b.get("/login")
		p := b.post("/login", url.Values{"email": {"pat@example.test"}, "password": {"pat-password-1"}, "next": {"/leads/board"}})
		if p.status != http.StatusOK || p.testid("tenant-chooser").Length() != 1 || p.testid("choose-acme").Length() != 1 || p.testid("choose-beta").Length() != 1 {
			t.Fatalf("no chooser: %d", p.status)
		}
		ticket := p.input(`[data-testid="tenant-chooser"]`, "ticket")
		if strings.Contains(p.body, "pat-password-1") {
			t.Fatal("the chooser holds the password")
		}
		// Another tenant id (not one this ticket opened) is refused.
		if p := b.post("/login/tenant", url.Values{"ticket": {ticket}, "tenant": {"01HZZZZZZZZZZZZZZZZZZZZZZZ"}}); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("foreign tenant: %d", p.status)
		}
		if p := b.post("/login/tenant", url.Values{"ticket": {ticket + "0"}, "tenant": {ten.ID}}); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("forged ticket: %d", p.status)
		}
		p = b.post("/login/tenant", url.Values{"ticket": {ticket}, "tenant": {ten.ID}, "next": {"/leads/board"}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/leads/board" {
			t.Fatalf("choose %s: %d %q", ten.Slug, p.status, p.header.Get("Location"))
		}
		inbox := b.get("/leads?view=all")
		other := map[string]string{"acme": "beta", "beta": "acme"}[ten.Slug]
		if !strings.Contains(inbox.body, "Lead of "+ten.Slug) || strings.Contains(inbox.body, "Lead of "+other) || inbox.testid("tenant-name").Text() != strings.ToUpper(ten.Slug) {
			t.Fatalf("%s's session sees the wrong tenant: %d %q %v %v", ten.Slug, inbox.status, inbox.testid("tenant-name").Text(),
				strings.Contains(inbox.body, "Lead of "+ten.Slug), strings.Contains(inbox.body, "Lead of "+other))
		}
	}
	// The form's tenant field signs in directly.
	b := newBrowser(t, e)
	p := b.post("/login", url.Values{"email": {"pat@example.test"}, "password": {"pat-password-1"}, "tenant": {"beta"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/leads" {
		t.Fatalf("login with tenant: %d", p.status)
	}
	if b.get("/leads").testid("tenant-name").Text() != "BETA" {
		t.Fatal("tenant field ignored")
	}
}

// Twenty identical creates at once make one membership: one 201, the rest
// 409, one login row.
func TestUsersAPICreateConcurrent(t *testing.T) {
	e := uiEnv(t, "web_users_race")
	acme := e.Tenant("acme")
	const n = 20
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.Do("POST", "/api/v1/users", acme.Token, map[string]any{"email": "kim@acme.test", "name": "Kim", "role": "staff", "password": "kim-password-1"}).Status
		}()
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for st := range statuses {
		got[st]++
	}
	if got[http.StatusCreated] != 1 || got[http.StatusConflict] != n-1 {
		t.Fatalf("statuses %v, want one 201 and %d × 409", got, n-1)
	}
	var logins, created int
	if err := e.App.DB.GetContext(context.Background(), &logins, `SELECT COUNT(*) FROM user_logins WHERE email = 'kim@acme.test' AND tenant_id = ?`, acme.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.App.DB.GetContext(context.Background(), &created, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'user.created' AND detail LIKE '%kim@acme.test%'`, acme.ID); err != nil {
		t.Fatal(err)
	}
	if logins != 1 || created != 1 {
		t.Fatalf("%d login rows and %d user.created rows, want 1 and 1", logins, created)
	}
}
