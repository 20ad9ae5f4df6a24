package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestUIMappingEditorTenantIsolation: another tenant's admin gets 404 on
// the source page and on every mapping editor action, and nothing of the
// source changes; the owner's save keeps event_time_path.
func TestUIMappingEditorTenantIsolation(t *testing.T) {
	e := uiEnv(t, "ui_mapping_iso")
	owner, intruder := e.Tenant("acme"), e.Tenant("intruder")
	cfg := kinds.SampleConfig(kinds.Generic)
	src, _ := e.Source(owner.ID, sources.CreateInput{Slug: "form", Name: "Form", Kind: kinds.Generic, Config: cfg})
	form := url.Values{"natural_key_path": {"$.lead.other"}, "event_time_path": {"$.event.created_at"}, "encoding": {"hex"}}

	b := newBrowser(t, e)
	b.login(intruder.Admin.Email, intruder.AdminPassword)
	if p := b.get("/sources/" + src.ID); p.status != http.StatusNotFound {
		t.Fatalf("GET another tenant's source page: %d", p.status)
	}
	for _, path := range []string{"/mapping/preview", "/mapping", "/reprocess-failed"} {
		if p := b.post("/sources/"+src.ID+path, form); p.status != http.StatusNotFound {
			t.Fatalf("POST %s on another tenant's source: %d", path, p.status)
		}
	}
	if got, err := e.App.Sources.Get(context.Background(), owner.ID, src.ID); err != nil || string(got.Config) != string(src.Config) {
		t.Fatalf("the intruder changed the config: %s (%v)", got.Config, err)
	}

	// The owner's save keeps every setting, the event time path included.
	o := newBrowser(t, e)
	o.login(owner.Admin.Email, owner.AdminPassword)
	form.Set("natural_key_path", "$.lead.id")
	if p := o.post("/sources/"+src.ID+"/mapping", form); p.status != http.StatusOK {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	got, err := e.App.Sources.Get(context.Background(), owner.ID, src.ID)
	if err != nil || !strings.Contains(string(got.Config), `"event_time_path":"$.event.created_at"`) {
		t.Fatalf("saved config %s (%v)", got.Config, err)
	}
	if v := o.get("/sources/"+src.ID).input(`[data-testid="mapping-form"]`, "event_time_path"); v != "$.event.created_at" {
		t.Fatalf("editor shows event_time_path %q", v)
	}
}
