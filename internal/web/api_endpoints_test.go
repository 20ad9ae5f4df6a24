package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
)

type endpointView struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Secret  string   `json:"secret"`
	Enabled bool     `json:"enabled"`
}

type problem struct {
	Status int               `json:"status"`
	Detail string            `json:"detail"`
	Errors map[string]string `json:"errors"`
}

func emitEvent(t *testing.T, e *apptest.Env, tenantID, typ string) string {
	t.Helper()
	id := ids.New()
	err := db.InTx(context.Background(), e.App.DB, func(tx *sqlx.Tx) error {
		return e.App.Events.Outbox().Emit(context.Background(), tx, tenantID, events.Event{Type: typ, ResourceID: id, Data: map[string]string{"id": id}})
	})
	if err != nil {
		t.Fatal(err)
	}
	var evID string
	if err := e.App.DB.Get(&evID, `SELECT id FROM events WHERE tenant_id = ? AND resource_id = ?`, tenantID, id); err != nil {
		t.Fatal(err)
	}
	return evID
}

func TestEndpointsAPICrossTenantAndBadInput(t *testing.T) {
	e := uiEnv(t, "web_endpoints")
	a, b := e.Tenant("acme"), e.Tenant("bolt")
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer recv.Close()

	res := e.Do("POST", "/api/v1/endpoints", a.Token, map[string]any{"url": recv.URL + "/hook", "events": []string{"lead.created", "alert.fired"}, "description": "CRM"})
	if res.Status != 201 {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var ep endpointView
	res.JSON(t, &ep)
	if !strings.HasPrefix(ep.Secret, "whsec_") || !ep.Enabled || len(ep.Events) != 2 || res.Header.Get("Location") != "/api/v1/endpoints/"+ep.ID {
		t.Fatalf("created: %+v %v", ep, res.Header)
	}
	res = e.Do("GET", "/api/v1/endpoints/"+ep.ID, a.Token, nil)
	if res.Status != 200 || strings.Contains(string(res.Body), ep.Secret) || strings.Contains(string(res.Body), `"secret"`) {
		t.Fatalf("get shows the secret or fails: %d %s", res.Status, res.Body)
	}
	evID := emitEvent(t, e, a.ID, events.LeadCreated)

	// Every route, with tenant B's token on tenant A's ids: 404, nothing changed.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/endpoints/" + ep.ID, nil},
		{"PATCH", "/api/v1/endpoints/" + ep.ID, map[string]any{"enabled": false}},
		{"DELETE", "/api/v1/endpoints/" + ep.ID, nil},
		{"POST", "/api/v1/endpoints/" + ep.ID + "/rotate-secret", map[string]any{}},
		{"GET", "/api/v1/endpoints/" + ep.ID + "/attempts", nil},
		{"POST", "/api/v1/endpoints/" + ep.ID + "/recover", map[string]any{"since": "2026-01-01T00:00:00Z"}},
		{"GET", "/api/v1/events/" + evID, nil},
		{"GET", "/api/v1/events/" + evID + "/attempts", nil},
		{"POST", "/api/v1/events/" + evID + "/replay", map[string]any{}},
		{"POST", "/api/v1/events/" + evID + "/replay", map[string]any{"endpoint_id": ep.ID}},
	} {
		if res := e.Do(c.method, c.path, b.Token, c.body); res.Status != 404 {
			t.Errorf("%s %s as another tenant: %d %s", c.method, c.path, res.Status, res.Body)
		}
	}
	var list struct{ Items []endpointView }
	e.Do("GET", "/api/v1/endpoints", b.Token, nil).JSON(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("tenant B lists %d endpoints", len(list.Items))
	}
	var evs struct{ Items []events.EventView }
	e.Do("GET", "/api/v1/events", b.Token, nil).JSON(t, &evs)
	if len(evs.Items) != 0 {
		t.Fatalf("tenant B lists tenant A's events")
	}
	if res := e.Do("GET", "/api/v1/endpoints/"+ep.ID, a.Token, nil); res.Status != 200 || !strings.Contains(string(res.Body), `"enabled":true`) {
		t.Fatalf("tenant A's endpoint changed: %s", res.Body)
	}

	// Bad input: a clear 4xx naming the field, nothing created or changed.
	huge := `{"url":"https://example.com/","events":["lead.created"],"description":"` + strings.Repeat("x", 2<<20) + `"}`
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"not a URL", "POST", "/api/v1/endpoints", map[string]any{"url": "not a url", "events": []string{"lead.created"}}, 422, "url"},
		{"no URL", "POST", "/api/v1/endpoints", map[string]any{"events": []string{"lead.created"}}, 422, "url"},
		{"ftp", "POST", "/api/v1/endpoints", map[string]any{"url": "ftp://example.com/x", "events": []string{"lead.created"}}, 422, "url"},
		{"metadata", "POST", "/api/v1/endpoints", map[string]any{"url": "http://169.254.169.254/latest", "events": []string{"lead.created"}}, 422, "url"},
		{"unknown event", "POST", "/api/v1/endpoints", map[string]any{"url": "https://example.com/", "events": []string{"lead.deleted"}}, 422, "events"},
		{"no events", "POST", "/api/v1/endpoints", map[string]any{"url": "https://example.com/", "events": []string{}}, 422, "events"},
		{"events not a list", "POST", "/api/v1/endpoints", `{"url":"https://example.com/","events":"lead.created"}`, 422, "events"},
		{"bad secret", "POST", "/api/v1/endpoints", map[string]any{"url": "https://example.com/", "events": []string{"lead.created"}, "secret": "hunter2"}, 422, "secret"},
		{"malformed JSON", "POST", "/api/v1/endpoints", `{"url": "https://example.com/",`, 400, ""},
		{"2 MiB body", "POST", "/api/v1/endpoints", huge, 413, ""},
		{"patch unknown event", "PATCH", "/api/v1/endpoints/" + ep.ID, map[string]any{"events": []string{"lead.nope"}}, 422, "events"},
		{"patch not a URL", "PATCH", "/api/v1/endpoints/" + ep.ID, map[string]any{"url": "::"}, 422, "url"},
		{"patch malformed", "PATCH", "/api/v1/endpoints/" + ep.ID, `{"enabled":`, 400, ""},
		{"patch 2 MiB", "PATCH", "/api/v1/endpoints/" + ep.ID, huge, 413, ""},
		{"rotate bad grace", "POST", "/api/v1/endpoints/" + ep.ID + "/rotate-secret", map[string]any{"grace_seconds": -1}, 422, "grace_seconds"},
		{"recover no since", "POST", "/api/v1/endpoints/" + ep.ID + "/recover", map[string]any{}, 422, "since"},
		{"recover bad since", "POST", "/api/v1/endpoints/" + ep.ID + "/recover", map[string]any{"since": "yesterday"}, 400, ""},
		{"replay unknown endpoint", "POST", "/api/v1/events/" + evID + "/replay", map[string]any{"endpoint_id": ids.New()}, 422, "endpoint_id"},
		{"attempts bad limit", "GET", "/api/v1/endpoints/" + ep.ID + "/attempts?limit=0", nil, 422, "limit"},
		{"events bad type", "GET", "/api/v1/events?type=lead.nope", nil, 422, "type"},
		{"unknown endpoint", "GET", "/api/v1/endpoints/" + ids.New(), nil, 404, ""},
		{"not an id", "GET", "/api/v1/endpoints/..%2f", nil, 404, ""},
	} {
		res := e.Do(c.method, c.path, a.Token, c.body)
		if res.Status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.Status, res.Body, c.status)
			continue
		}
		var p problem
		res.JSON(t, &p)
		if res.Header.Get("Content-Type") != "application/problem+json" || p.Detail == "" && len(p.Errors) == 0 {
			t.Errorf("%s: not a clear problem: %s", c.name, res.Body)
		}
		if c.field != "" && p.Errors[c.field] == "" {
			t.Errorf("%s: errors do not name %q: %s", c.name, c.field, res.Body)
		}
	}
	e.Do("GET", "/api/v1/endpoints", a.Token, nil).JSON(t, &list)
	if len(list.Items) != 1 || list.Items[0].URL != recv.URL+"/hook" || len(list.Items[0].Events) != 2 {
		t.Fatalf("bad input changed something: %+v", list.Items)
	}

	// The good paths answer as documented.
	if res := e.Do("PATCH", "/api/v1/endpoints/"+ep.ID, a.Token, map[string]any{"events": []string{"lead.status_changed"}, "enabled": false}); res.Status != 200 ||
		!strings.Contains(string(res.Body), `"enabled":false`) || !strings.Contains(string(res.Body), `"disabled_reason":"disabled by a user"`) {
		t.Fatalf("patch: %d %s", res.Status, res.Body)
	}
	if res := e.Do("POST", "/api/v1/endpoints/"+ep.ID+"/recover", a.Token, map[string]any{"since": "2026-01-01T00:00:00Z"}); res.Status != 409 {
		t.Fatalf("recover of a disabled endpoint: %d %s", res.Status, res.Body)
	}
	if res := e.Do("PATCH", "/api/v1/endpoints/"+ep.ID, a.Token, map[string]any{"enabled": true}); res.Status != 200 {
		t.Fatalf("re-enable: %d %s", res.Status, res.Body)
	}
	var rot endpointView
	if res := e.Do("POST", "/api/v1/endpoints/"+ep.ID+"/rotate-secret", a.Token, nil); res.Status != 200 {
		t.Fatalf("rotate without a body: %d %s", res.Status, res.Body)
	} else {
		res.JSON(t, &rot)
	}
	if rot.Secret == "" || rot.Secret == ep.Secret {
		t.Fatalf("rotate gave %q", rot.Secret)
	}
	if res := e.Do("POST", "/api/v1/endpoints/"+ep.ID+"/recover", a.Token, map[string]any{"since": "2026-01-01T00:00:00Z"}); res.Status != 202 {
		t.Fatalf("recover: %d %s", res.Status, res.Body)
	}
	if res := e.Do("GET", "/api/v1/endpoints/"+ep.ID+"/attempts", a.Token, nil); res.Status != 200 || !strings.Contains(string(res.Body), `"next_cursor":null`) {
		t.Fatalf("attempts: %d %s", res.Status, res.Body)
	}
	if res := e.Do("GET", "/api/v1/events/"+evID, a.Token, nil); res.Status != 200 || !strings.Contains(string(res.Body), `"type":"lead.created"`) {
		t.Fatalf("event: %d %s", res.Status, res.Body)
	}
	if res := e.Do("DELETE", "/api/v1/endpoints/"+ep.ID, a.Token, nil); res.Status != 204 {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if res := e.Do("GET", "/api/v1/endpoints/"+ep.ID, a.Token, nil); res.Status != 404 {
		t.Fatalf("deleted endpoint: %d", res.Status)
	}
}

// With private targets refused (production), creation refuses every
// non-public address, including a name that resolves to one.
func TestEndpointCreationSSRFGuard(t *testing.T) {
	e := apptest.New(t, "web_endpoints_ssrf", apptest.Options{RedisDB: apptest.RedisWeb,
		Env: map[string]string{"LEADPIPE_ALLOW_PRIVATE_TARGETS": "false"}})
	a := e.Tenant("acme")
	for _, u := range []string{
		"https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://192.168.1.1/", "https://172.16.0.1/",
		"https://169.254.169.254/latest/meta-data", "https://[::1]/", "https://100.64.0.1/", "https://[fe80::1]/",
		"https://0.0.0.0/", "https://224.0.0.1/", "https://localhost/hook", "http://example.com/hook",
	} {
		res := e.Do("POST", "/api/v1/endpoints", a.Token, map[string]any{"url": u, "events": []string{"lead.created"}})
		var p problem
		res.JSON(t, &p)
		if res.Status != 422 || p.Errors["url"] == "" {
			t.Errorf("%s: %d %s", u, res.Status, res.Body)
		} else {
			t.Logf("%s → %s", u, p.Errors["url"])
		}
	}
	var list struct{ Items []endpointView }
	e.Do("GET", "/api/v1/endpoints", a.Token, nil).JSON(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("refused URLs were stored: %+v", list.Items)
	}
}

func emitWith(t *testing.T, e *apptest.Env, tenantID, typ, resourceID string, data any) {
	t.Helper()
	err := db.InTx(context.Background(), e.App.DB, func(tx *sqlx.Tx) error {
		return e.App.Events.Outbox().Emit(context.Background(), tx, tenantID, events.Event{Type: typ, ResourceID: resourceID, Data: data})
	})
	if err != nil {
		t.Fatal(err)
	}
}
