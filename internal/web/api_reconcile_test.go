package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/webhooks/kinds"
)

// TestReconcileAPI covers POST /api/v1/sources/{id}/reconcile and GET
// /api/v1/sources/{id}/reconcile-runs: the same run id while one runs,
// 404 across tenants, 422 without settings, the exact item shape, paging.
func TestReconcileAPI(t *testing.T) {
	e := uiEnv(t, "web_reconcile")
	ten := e.Tenant("acme")
	other := e.Tenant("other")
	ctx := context.Background()
	f := fakeapi.NewGeneric(t, "/leads", []json.RawMessage{json.RawMessage(`{"lead":{"id":"l1","email":"l1@x.test"}}`)})
	cfg := json.RawMessage(kinds.SampleConfig(kinds.Generic))
	create := func(tok string, body map[string]any) string {
		t.Helper()
		res := e.Do("POST", "/api/v1/sources", tok, body)
		if res.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", res.Status, res.Body)
		}
		var s struct{ ID string }
		res.JSON(t, &s)
		return s.ID
	}
	src := create(ten.Token, map[string]any{"slug": "gen", "name": "Generic", "kind": "generic", "config": cfg,
		"reconcile": map[string]any{"base_url": f.URL, "list_path": "/leads"}})
	bare := create(ten.Token, map[string]any{"slug": "bare", "name": "No settings", "kind": "generic", "config": cfg})
	std := create(ten.Token, map[string]any{"slug": "std", "name": "Standard", "kind": "standard"})
	foreign := create(other.Token, map[string]any{"slug": "gen", "name": "Theirs", "kind": "generic", "config": cfg,
		"reconcile": map[string]any{"base_url": f.URL, "list_path": "/leads"}})

	for _, c := range []struct {
		name, method, path, token string
		status                    int
		detail                    string
	}{
		{"another tenant's source", "POST", "/api/v1/sources/" + foreign + "/reconcile", ten.Token, 404, ""},
		{"another tenant's runs", "GET", "/api/v1/sources/" + foreign + "/reconcile-runs", ten.Token, 404, ""},
		{"unknown id", "POST", "/api/v1/sources/nope/reconcile", ten.Token, 404, ""},
		{"no token", "POST", "/api/v1/sources/" + src + "/reconcile", "", 401, ""},
		{"no settings", "POST", "/api/v1/sources/" + bare + "/reconcile", ten.Token, 422, "no reconcile settings"},
		{"kind without a list API", "POST", "/api/v1/sources/" + std + "/reconcile", ten.Token, 422, "cannot be reconciled"},
		{"bad cursor", "GET", "/api/v1/sources/" + src + "/reconcile-runs?cursor=zzz", ten.Token, 422, ""},
		{"bad limit", "GET", "/api/v1/sources/" + src + "/reconcile-runs?limit=0", ten.Token, 422, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := e.Do(c.method, c.path, c.token, nil)
			if res.Status != c.status || !strings.Contains(string(res.Body), c.detail) {
				t.Fatalf("%d %s, want %d %q", res.Status, res.Body, c.status, c.detail)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("content type %q", ct)
			}
		})
	}

	trigger := func() string {
		t.Helper()
		res := e.Do("POST", "/api/v1/sources/"+src+"/reconcile", ten.Token, nil)
		if res.Status != http.StatusAccepted {
			t.Errorf("trigger: %d %s", res.Status, res.Body)
			return ""
		}
		var out map[string]string
		res.JSON(t, &out)
		if len(out) != 1 || out["run_id"] == "" {
			t.Errorf("body %s", res.Body)
		}
		return out["run_id"]
	}
	// Double clicks while a run is going: one run, the same id.
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { ids[i] = trigger() })
	}
	wg.Wait()
	if ids[0] == "" || slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
		t.Fatalf("ids %v", ids)
	}

	list := func(query string) (items []map[string]any, next *string) {
		t.Helper()
		res := e.Do("GET", "/api/v1/sources/"+src+"/reconcile-runs"+query, ten.Token, nil)
		if res.Status != http.StatusOK {
			t.Fatalf("list: %d %s", res.Status, res.Body)
		}
		var out struct {
			Items      []map[string]any `json:"items"`
			NextCursor *string          `json:"next_cursor"`
		}
		res.JSON(t, &out)
		return out.Items, out.NextCursor
	}
	items, next := list("")
	if len(items) != 1 || next != nil || items[0]["id"] != ids[0] || items[0]["state"] != "running" || items[0]["finished_at"] != nil {
		t.Fatalf("runs %v next %v", items, next)
	}
	var keys []string
	for k := range items[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"backfill", "errors", "finished_at", "id", "known", "last_error", "new", "pages", "records", "started_at", "state"}
	if !slices.Equal(keys, want) {
		t.Fatalf("item keys %v, want %v", keys, want)
	}

	// The worker finishes the run; the next click starts a new one.
	run, err := e.App.Web.Reconcile.RunNow(ctx, ten.ID, ids[0])
	if err != nil || run.State != "succeeded" {
		t.Fatalf("run: %+v %v", run, err)
	}
	second := trigger()
	if second == ids[0] {
		t.Fatal("a finished run's id was handed out again")
	}
	items, next = list("?limit=1")
	if len(items) != 1 || items[0]["id"] != second || next == nil {
		t.Fatalf("page 1: %v %v", items, next)
	}
	items, next = list("?limit=1&cursor=" + *next)
	if len(items) != 1 || items[0]["id"] != ids[0] || next != nil || items[0]["state"] != "succeeded" ||
		// The source's first run is its back-fill: its record is not webhook loss.
		items[0]["records"] != 1.0 || items[0]["new"] != 0.0 || items[0]["backfill"] != 1.0 || items[0]["finished_at"] == nil {
		t.Fatalf("page 2: %v %v", items, next)
	}
}
