package reconcile_test

import (
	"net/http"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
	"leadpipe/internal/reconcile"
)

func (e *env) problemFields(t *testing.T, method, path string, body any) map[string]string {
	t.Helper()
	res := e.Do(method, path, e.ten.Token, body)
	if res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("%s %s: %d %s, want 422", method, path, res.Status, res.Body)
	}
	var p struct {
		Errors map[string]string `json:"errors"`
	}
	res.JSON(t, &p)
	return p.Errors
}

// testSSRFGuard: a source pointed at the metadata address, at loopback
// (guard on) or at a name resolving to a private address is refused with a
// clear error, when saved and again when a run dials it.
func testSSRFGuard(t *testing.T, e *env) {
	// apptest allows private targets (the fakes listen on loopback);
	// metadata addresses stay refused even then.
	body := func(base string) map[string]any {
		return map[string]any{"slug": "tf", "name": "TF", "kind": "typeform",
			"reconcile": map[string]any{"base_url": base, "access_token": "t", "form_id": "F"}}
	}
	for _, u := range []string{"http://169.254.169.254/", "http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/"} {
		if msg := e.problemFields(t, "POST", "/api/v1/sources", body(u))["reconcile.base_url"]; !strings.Contains(msg, "cloud metadata address") {
			t.Errorf("%s: %q", u, msg)
		}
	}
	src := e.createSource(t, body("http://127.0.0.1:9"))
	patch := map[string]any{"reconcile": map[string]any{"base_url": "http://169.254.169.254"}}
	if msg := e.problemFields(t, "PATCH", "/api/v1/sources/"+src.ID, patch)["reconcile.base_url"]; !strings.Contains(msg, "169.254.169.254 is a cloud metadata address") {
		t.Errorf("patch: %q", msg)
	}
	// A URL stored before the guard existed is refused when dialled.
	if _, err := e.App.DB.Exec(`UPDATE sources SET reconcile_base_url = 'http://169.254.169.254' WHERE tenant_id = ? AND id = ?`, e.ten.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	r, _ := e.run(t, e.svc, src.ID)
	if r.State != reconcile.StateFailed || !strings.Contains(lastError(r), "169.254.169.254 is a cloud metadata address") {
		t.Errorf("run: %+v %q", r, lastError(r))
	}

	// LEADPIPE_ALLOW_PRIVATE_TARGETS=false, as in production.
	// A second app beside the package's: its own Redis database.
	ge := apptest.New(t, "rec_guard_on", apptest.Options{RedisDB: apptest.RedisSecond,
		Env: map[string]string{"LEADPIPE_ALLOW_PRIVATE_TARGETS": "false"}})
	g := &env{Env: ge, ten: ge.Tenant("acme"), svc: ge.App.Web.Reconcile}
	cases := []struct{ url, want string }{
		{"https://127.0.0.1:8443", "127.0.0.1 is a loopback address; private targets are not allowed"},
		{"http://127.0.0.1:8080", "http:// targets are not allowed"},
		{"https://localhost:8443", "localhost resolves to"},
		{"https://10.0.0.7", "10.0.0.7 is a private address; private targets are not allowed"},
		{"https://169.254.169.254", "cloud metadata address"},
	}
	for _, c := range cases {
		if msg := g.problemFields(t, "POST", "/api/v1/sources", body(c.url))["reconcile.base_url"]; !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want %q", c.url, msg, c.want)
		}
	}
	// At run time the guard checks the address actually dialled, so a name
	// that resolved to a public address when saved and to a private one now
	// (DNS rebinding) is refused too.
	gsrc := g.createSource(t, body("https://reconcile.example.com"))
	for _, c := range []struct{ url, want string }{
		{"https://localhost:8443", "localhost resolves to"},
		{"https://127.0.0.1:8443", "127.0.0.1 is a loopback address; private targets are not allowed"},
	} {
		if _, err := g.App.DB.Exec(`UPDATE sources SET reconcile_base_url = ? WHERE tenant_id = ? AND id = ?`, c.url, g.ten.ID, gsrc.ID); err != nil {
			t.Fatal(err)
		}
		r, _ := g.run(t, g.svc, gsrc.ID)
		if r.State != reconcile.StateFailed || !strings.Contains(lastError(r), c.want) || !strings.Contains(lastError(r), "not allowed") {
			t.Errorf("%s run: %+v %q", c.url, r, lastError(r))
		}
		t.Logf("%s: %s", c.url, lastError(r))
	}
}
