package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
)

const adminToken = "test-admin-token-0123456789"

func TestProvisioning(t *testing.T) {
	e := uiEnv(t, "web_prov")
	body := map[string]string{"slug": "acme", "name": "Acme", "admin_email": "a@acme.test", "admin_password": "correct-horse-1"}

	res := e.Do("POST", "/api/admin/v1/tenants", adminToken, body)
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var out struct {
		ID, Slug string
		APIToken string `json:"api_token"`
	}
	res.JSON(t, &out)
	if out.ID == "" || out.Slug != "acme" || !strings.HasPrefix(out.APIToken, "lp_") {
		t.Fatalf("bad body %s", res.Body)
	}
	// The token works on the tenant API.
	if r := e.Do("GET", "/api/v1/sources", out.APIToken, nil); r.Status != 200 {
		t.Fatalf("token does not work: %d %s", r.Status, r.Body)
	}

	cases := []struct {
		name   string
		token  string
		body   any
		status int
	}{
		{"duplicate slug", adminToken, map[string]string{"slug": "acme", "name": "Acme 2", "admin_email": "b@acme.test", "admin_password": "correct-horse-1"}, 409},
		{"bad slug", adminToken, map[string]string{"slug": "Acme!", "name": "X", "admin_email": "c@acme.test", "admin_password": "correct-horse-1"}, 422},
		{"short slug", adminToken, map[string]string{"slug": "a", "name": "X", "admin_email": "c@acme.test", "admin_password": "correct-horse-1"}, 422},
		{"malformed json", adminToken, `{"slug":`, 400},
		{"missing token", "", body, 401},
		{"wrong token", "nope-nope-nope-nope", body, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.Do("POST", "/api/admin/v1/tenants", c.token, c.body)
			if r.Status != c.status {
				t.Fatalf("got %d want %d: %s", r.Status, c.status, r.Body)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("content type %q", ct)
			}
		})
	}
	// 422 names the offending field.
	r := e.Do("POST", "/api/admin/v1/tenants", adminToken, map[string]string{"slug": "Bad Slug", "name": "", "admin_email": "x", "admin_password": "short"})
	for _, f := range []string{"slug", "name", "admin_email", "admin_password"} {
		if !strings.Contains(string(r.Body), `"`+f+`"`) {
			t.Errorf("422 body does not name %s: %s", f, r.Body)
		}
	}
}

func TestTenantIsolationSources(t *testing.T) {
	e := uiEnv(t, "web_iso")
	a, b := e.Tenant("tenant-a"), e.Tenant("tenant-b")
	var aIDs []string
	for _, kind := range []string{"standard", "typeform", "meta"} {
		r := e.Do("POST", "/api/v1/sources", a.Token, map[string]any{"slug": "src-" + kind, "name": kind, "kind": kind})
		if r.Status != 201 {
			t.Fatalf("create %s: %d %s", kind, r.Status, r.Body)
		}
		var v sources.View
		r.JSON(t, &v)
		if v.Secret == "" || !strings.HasSuffix(v.WebhookURL, "/hooks/tenant-a/src-"+kind) {
			t.Fatalf("view %+v", v)
		}
		aIDs = append(aIDs, v.ID)
	}
	if r := e.Do("POST", "/api/v1/sources", b.Token, map[string]any{"slug": "src-standard", "name": "B's", "kind": "standard"}); r.Status != 201 {
		t.Fatalf("same slug in another tenant: %d %s", r.Status, r.Body)
	}
	for _, id := range aIDs {
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/v1/sources/" + id, nil},
			{"PATCH", "/api/v1/sources/" + id, map[string]any{"name": "stolen"}},
			{"POST", "/api/v1/sources/" + id + "/rotate-secret", map[string]any{}},
		} {
			if r := e.Do(req.method, req.path, b.Token, req.body); r.Status != 404 {
				t.Fatalf("tenant B %s %s: %d %s", req.method, req.path, r.Status, r.Body)
			}
		}
	}
	var list struct{ Items []sources.View }
	e.Do("GET", "/api/v1/sources", b.Token, nil).JSON(t, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "B's" {
		t.Fatalf("tenant B lists %+v", list.Items)
	}
	e.Do("GET", "/api/v1/sources", a.Token, nil).JSON(t, &list)
	if len(list.Items) != 3 {
		t.Fatalf("tenant A lists %d", len(list.Items))
	}
	// Secrets never appear in GET/list responses.
	r := e.Do("GET", "/api/v1/sources/"+aIDs[0], a.Token, nil)
	if strings.Contains(string(r.Body), `"secret"`) {
		t.Fatalf("secret leaked: %s", r.Body)
	}
	// Validation and conflicts.
	if r := e.Do("POST", "/api/v1/sources", a.Token, map[string]any{"slug": "src-standard", "name": "dup", "kind": "standard"}); r.Status != 409 {
		t.Fatalf("dup slug: %d", r.Status)
	}
	if r := e.Do("POST", "/api/v1/sources", a.Token, map[string]any{"slug": "x1", "name": "bad", "kind": "carrier-pigeon"}); r.Status != 422 {
		t.Fatalf("bad kind: %d", r.Status)
	}
	if r := e.Do("GET", "/api/v1/sources", "lp_"+a.ID+"_forged", nil); r.Status != 401 {
		t.Fatalf("forged token: %d", r.Status)
	}
}

func TestSecretRotationGrace(t *testing.T) {
	var clock apptest.Clock
	e := apptest.New(t, "web_rot", apptest.Options{RedisDB: apptest.RedisWeb, Now: clock.Now})
	a := e.Tenant("rot")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock.Set(now)
	ctx := context.Background()
	src, old := e.Source(a.ID, sources.CreateInput{Slug: "fb", Name: "FB", Kind: "meta", Secret: "old-secret"})
	grace := 3600
	r := e.Do("POST", "/api/v1/sources/"+src.ID+"/rotate-secret", a.Token, map[string]any{"grace_seconds": grace})
	if r.Status != 200 {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	var v sources.View
	r.JSON(t, &v)
	if v.Secret == "" || v.Secret == old {
		t.Fatalf("new secret %q", v.Secret)
	}
	live := func() []string {
		s, err := e.App.Sources.Secrets(ctx, a.ID, src.ID)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := live(); len(s) != 2 || s[0] != v.Secret || s[1] != old {
		t.Fatalf("during grace want [new old], got %v", s)
	}
	now = now.Add(time.Duration(grace-1) * time.Second)
	clock.Set(now)
	if s := live(); len(s) != 2 {
		t.Fatalf("just before grace end: %v", s)
	}
	now = now.Add(2 * time.Second)
	clock.Set(now)
	if s := live(); len(s) != 1 || s[0] != v.Secret {
		t.Fatalf("after grace want [new], got %v", s)
	}
	// Grace 0 revokes at once.
	_, newest, err := e.App.Sources.Rotate(ctx, a.ID, src.ID, sources.RotateInput{Secret: "given-secret", GraceSeconds: new(int)})
	if err != nil || newest != "given-secret" {
		t.Fatalf("rotate 0: %v %q", err, newest)
	}
	if s := live(); len(s) != 1 || s[0] != "given-secret" {
		t.Fatalf("grace 0: %v", s)
	}
	// Stored encrypted: the plaintext is not in the table.
	var n int
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM source_secrets WHERE INSTR(secret_enc, 'given-secret') > 0`); err != nil || n != 0 {
		t.Fatalf("plaintext secret stored (%d, %v)", n, err)
	}
}

func TestHealthAndReady(t *testing.T) {
	e := uiEnv(t, "web_health")
	if r := e.Do("GET", "/healthz", "", nil); r.Status != 200 {
		t.Fatalf("healthz %d", r.Status)
	}
	if r := e.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/nope", "", nil); r.Status != 404 || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("404 %d %s", r.Status, r.Header.Get("Content-Type"))
	}
}
