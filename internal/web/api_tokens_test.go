package web_test

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apptest"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
	"leadpipe/internal/web"
)

// apiRouteScope is one /api/v1 route and the scope routes.go declares.
type apiRouteScope struct{ method, pattern, scope string }

// walkAPIScopes lists every /api/v1 route of the real router with its
// declared scope ("" when none is declared).
func walkAPIScopes(t *testing.T, e *apptest.Env) []apiRouteScope {
	t.Helper()
	routes, ok := e.App.Web.Routes().(chi.Routes)
	if !ok {
		t.Fatal("Routes() is not a chi router")
	}
	var out []apiRouteScope
	err := chi.Walk(routes, func(method, route string, _ http.Handler, mws ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/api/v1/") {
			out = append(out, apiRouteScope{method, route, web.RouteScope(mws...)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pattern+out[i].method < out[j].pattern+out[j].method })
	if len(out) < 30 {
		t.Fatalf("only %d /api/v1 routes walked: is the app wired?", len(out))
	}
	return out
}

// A route added to /api/v1 without scope(…) in routes.go fails here.
func TestEveryAPIRouteDeclaresAScope(t *testing.T) {
	e := uiEnv(t, "web_scopes")
	for _, r := range walkAPIScopes(t, e) {
		if r.scope == "" {
			t.Errorf("%s %s declares no scope: add it to routes.go with r.With(scope(…))", r.method, r.pattern)
		} else if !slices.Contains(tenants.Scopes, r.scope) {
			t.Errorf("%s %s declares the unknown scope %q", r.method, r.pattern, r.scope)
		}
	}
}

// createToken makes a token through the API with the admin token.
func createToken(t *testing.T, e *apptest.Env, admin string, body map[string]any) (int, map[string]any) {
	t.Helper()
	res := e.Do("POST", "/api/v1/tokens", admin, body)
	var out map[string]any
	if len(res.Body) > 0 {
		res.JSON(t, &out)
	}
	return res.Status, out
}

// TestScopeMatrix: every /api/v1 route with a token of every single scope
// answers 403 (naming the missing scope) exactly when the scope does not
// grant the route's declared one; admin passes everywhere. Routes are
// walked from the router, so a new route is covered without editing this.
func TestScopeMatrix(t *testing.T) {
	e := uiEnv(t, "web_scope_matrix")
	ten := e.Tenant("acme")
	tokens := map[string]string{}
	for _, sc := range tenants.Scopes {
		st, out := createToken(t, e, ten.Token, map[string]any{"name": "only " + sc, "scopes": []string{sc}})
		if st != http.StatusCreated {
			t.Fatalf("create %s token: %d %v", sc, st, out)
		}
		tokens[sc] = out["token"].(string)
	}
	routes := walkAPIScopes(t, e)
	for _, rt := range routes {
		path := pathParam.ReplaceAllStringFunc(rt.pattern, func(string) string { return ids.New() })
		for _, sc := range tenants.Scopes {
			res := e.Do(rt.method, path, tokens[sc], map[string]any{}, "Idempotency-Key", ids.New())
			want := tenants.HasScope([]string{sc}, rt.scope)
			switch {
			case want && res.Status == http.StatusForbidden:
				t.Errorf("%s %s with %s: 403, but it needs %s", rt.method, rt.pattern, sc, rt.scope)
			case !want && res.Status != http.StatusForbidden:
				t.Errorf("%s %s with %s: %d, want 403 (it needs %s)", rt.method, rt.pattern, sc, res.Status, rt.scope)
			case !want && (!strings.Contains(string(res.Body), rt.scope) || res.Header.Get("Content-Type") != "application/problem+json"):
				t.Errorf("%s %s with %s: the 403 does not name %s: %s", rt.method, rt.pattern, sc, rt.scope, res.Body)
			case res.Status == http.StatusUnauthorized || res.Status >= 500:
				t.Errorf("%s %s with %s: %d %s", rt.method, rt.pattern, sc, res.Status, res.Body)
			case want && rt.method == http.MethodGet && path == rt.pattern && (res.Status < 200 || res.Status > 299):
				// A read of no particular object needs nothing but the
				// scope: the answer is the 2xx the scope allows.
				t.Errorf("%s %s with %s: %d, want 2xx: %s", rt.method, rt.pattern, sc, res.Status, res.Body)
			}
		}
	}
	t.Logf("%d routes × %d scopes", len(routes), len(tenants.Scopes))
}

// The tokens API: shown once, listed without the secret, scoped, expired
// → 401, revoked → 401, another tenant's token → 404, bad input → 422.
func TestTokensAPI(t *testing.T) {
	e := uiEnv(t, "web_tokens_api")
	acme, other := e.Tenant("acme"), e.Tenant("other")

	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	st, out := createToken(t, e, acme.Token, map[string]any{"name": " reports ", "scopes": []string{"leads:read", "leads:read"}, "expires_at": exp.Format(time.RFC3339)})
	if st != http.StatusCreated {
		t.Fatalf("create: %d %v", st, out)
	}
	for _, k := range []string{"id", "name", "token", "scopes", "expires_at", "created_at"} {
		if _, ok := out[k]; !ok {
			t.Fatalf("create answer lacks %s: %v", k, out)
		}
	}
	if out["name"] != "reports" || len(out["scopes"].([]any)) != 1 || out["expires_at"] != exp.Format(time.RFC3339) {
		t.Fatalf("create answer: %v", out)
	}
	plain, id := out["token"].(string), out["id"].(string)
	if res := e.Do("GET", "/api/v1/leads", plain, nil); res.Status != http.StatusOK {
		t.Fatalf("leads:read token reads leads: %d %s", res.Status, res.Body)
	}
	if res := e.Do("GET", "/api/v1/tokens", plain, nil); res.Status != http.StatusForbidden || !strings.Contains(string(res.Body), "admin") {
		t.Fatalf("leads:read token lists tokens: %d %s", res.Status, res.Body)
	}

	res := e.Do("GET", "/api/v1/tokens", acme.Token, nil)
	if res.Status != http.StatusOK || strings.Contains(string(res.Body), plain) || strings.Contains(string(res.Body), acme.Token) {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	var list struct {
		Items []struct {
			ID        string   `json:"id"`
			Scopes    []string `json:"scopes"`
			ExpiresAt *string  `json:"expires_at"`
		} `json:"items"`
	}
	res.JSON(t, &list)
	scopes := map[string]string{}
	for _, it := range list.Items {
		scopes[it.ID] = strings.Join(it.Scopes, " ")
	}
	if len(list.Items) != 2 || scopes[id] != "leads:read" {
		t.Fatalf("list: %s", res.Body)
	}
	for _, it := range list.Items {
		if it.ID != id && scopes[it.ID] != "admin" {
			t.Fatalf("the provisioning token is not admin: %s", res.Body)
		}
	}

	// Bad input names the field.
	for _, body := range []map[string]any{
		{"name": "x", "scopes": []string{}},
		{"name": "x", "scopes": []string{"leads:delete"}},
		{"name": "", "scopes": []string{"admin"}},
		{"name": "x", "scopes": []string{"admin"}, "expires_at": "tomorrow"},
		{"name": "x", "scopes": []string{"admin"}, "expires_at": "2020-01-01T00:00:00Z"},
	} {
		if st, out := createToken(t, e, acme.Token, body); st != http.StatusUnprocessableEntity {
			t.Errorf("%v: %d %v", body, st, out)
		}
	}

	// Another tenant cannot revoke it (404) nor use its token on acme.
	if res := e.Do("DELETE", "/api/v1/tokens/"+id, other.Token, nil); res.Status != http.StatusNotFound {
		t.Fatalf("other tenant revokes: %d", res.Status)
	}
	if res := e.Do("DELETE", "/api/v1/tokens/"+id, acme.Token, nil); res.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.Status, res.Body)
	}
	if res := e.Do("DELETE", "/api/v1/tokens/"+id, acme.Token, nil); res.Status != http.StatusNoContent {
		t.Fatalf("revoke again: %d %s", res.Status, res.Body)
	}
	if res := e.Do("GET", "/api/v1/leads", plain, nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d", res.Status)
	}

	// Expiry: a token past its expires_at is refused with 401.
	st, out = createToken(t, e, acme.Token, map[string]any{"name": "short", "scopes": []string{"admin"}, "expires_at": time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)})
	if st != http.StatusCreated {
		t.Fatalf("create short: %d %v", st, out)
	}
	short := out["token"].(string)
	if res := e.Do("GET", "/api/v1/leads", short, nil); res.Status != http.StatusOK {
		t.Fatalf("short token before expiry: %d", res.Status)
	}
	time.Sleep(1600 * time.Millisecond)
	if res := e.Do("GET", "/api/v1/leads", short, nil); res.Status != http.StatusUnauthorized || !strings.Contains(string(res.Body), "expired") {
		t.Fatalf("expired token: %d %s", res.Status, res.Body)
	}
}
