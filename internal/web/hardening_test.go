package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
)

func TestOperatorHardening(t *testing.T) {
	const token = "metrics-token-0123456789"
	e := apptest.New(t, "web_hard", apptest.Options{RedisDB: apptest.RedisWeb, Env: map[string]string{"LEADPIPE_METRICS_TOKEN": token}})

	// /metrics needs the token, on the server and on the worker's listener.
	ops := httptest.NewServer(e.App.Web.OpsRoutes())
	defer ops.Close()
	for _, base := range []string{e.URL, ops.URL} {
		for _, c := range []struct {
			auth string
			want int
		}{{"", 401}, {"Bearer wrong-token-0123456789", 401}, {"Bearer " + token, 200}} {
			req, _ := http.NewRequest("GET", base+"/metrics", nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != c.want {
				t.Fatalf("%s/metrics with %q: %d", base, c.auth, res.StatusCode)
			}
			if c.want == 200 && !strings.Contains(string(b), "leadpipe_") {
				t.Fatalf("%s/metrics body: %.200s", base, b)
			}
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(ops.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("worker %s: %d", p, res.StatusCode)
		}
	}

	// The Asynq dashboard refuses a cross-site unsafe request even with the
	// operator's credentials (browsers resend them cross-site).
	req, _ := http.NewRequest("POST", e.URL+"/admin/queues/api/queues/critical:pause", nil)
	req.Header.Set("Authorization", "Bearer test-admin-token-0123456789")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site dashboard post: %v %v", res, err)
	} else {
		res.Body.Close()
	}

	// A form body over the limit is 413, not 400.
	big := url.Values{"email": {"a@b.test"}, "password": {strings.Repeat("x", 300<<10)}}.Encode()
	res, err := http.Post(e.URL+"/login", "application/x-www-form-urlencoded", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversize login form: %d", res.StatusCode)
	}

	// A slug with a trailing newline or space is a 422 naming slug.
	for _, slug := range []string{"acme\n", "acme ", " acme"} {
		r := e.Do("POST", "/api/admin/v1/tenants", "test-admin-token-0123456789", map[string]any{"slug": slug, "name": "Acme",
			"admin_email": "a@acme.test", "admin_password": "password-1234"})
		if r.Status != 422 || !strings.Contains(string(r.Body), `"slug"`) {
			t.Fatalf("slug %q: %d %s", slug, r.Status, r.Body)
		}
	}
	if r := e.Do("POST", "/api/admin/v1/tenants", "test-admin-token-0123456789", map[string]any{"slug": "acme", "name": "Acme",
		"admin_email": "a@acme.test", "admin_password": "password-1234"}); r.Status != 201 {
		t.Fatalf("clean slug: %d %s", r.Status, r.Body)
	}
}
