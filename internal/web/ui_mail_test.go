package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
	"leadpipe/internal/tenants"
)

// The mail preview (no SMTP configured): an admin sees the tenant's
// messages rendered, opens one (HTML in a sandboxed frame, the text part),
// and never another tenant's; a staff member does not get the page.
func TestUIMailPreview(t *testing.T) {
	ctx := context.Background()
	e := uiEnv(t, "ui_mail")
	a, b := e.Tenant("mail-a"), e.Tenant("mail-b")
	ids := map[string]string{}
	for _, ten := range []apptest.Tenant{a, b} {
		if r := e.Do("PUT", "/api/v1/assignment", ten.Token, map[string]any{"rules": []any{
			map[string]any{"name": "All", "when": map[string]any{}, "strategy": "owner", "owner_id": ten.Admin.ID}}}); r.Status != 200 {
			t.Fatalf("rules: %d %s", r.Status, r.Body)
		}
		if r := e.Do("POST", "/api/v1/leads", ten.Token, map[string]any{"name": "Lead of " + ten.Slug}, "Idempotency-Key", "k-"+ten.Slug); r.Status != 201 {
			t.Fatalf("lead: %d %s", r.Status, r.Body)
		}
		var id string
		if err := e.App.DB.GetContext(ctx, &id, `SELECT id FROM notifications WHERE tenant_id = ?`, ten.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.App.Web.Notify.Send(ctx, ten.ID, id); err != nil {
			t.Fatal(err)
		}
		ids[ten.Slug] = id
	}
	br := newBrowser(t, e)
	br.login(a.Admin.Email, a.AdminPassword)
	p := br.get("/settings/mail")
	if p.status != 200 || p.testid("mail-row").Length() != 1 || !strings.Contains(p.body, "New lead for you: Lead of mail-a") ||
		strings.Contains(p.body, "mail-b") || !strings.Contains(p.body, "E-mail preview") {
		t.Fatalf("mail page: %d\n%s", p.status, p.body)
	}
	p = br.get("/settings/mail?id=" + ids["mail-a"])
	if html, _ := p.testid("mail-html").Attr("srcdoc"); !strings.Contains(html, "Lead of mail-a") {
		t.Fatalf("opened message: %s", p.body)
	}
	if sb, ok := p.testid("mail-html").Attr("sandbox"); !ok || sb != "" {
		t.Fatal("the message's HTML is not sandboxed")
	}
	if !strings.Contains(p.testid("mail-text").Text(), "Lead of mail-a") {
		t.Fatal("no text part")
	}
	if p = br.get("/settings/mail?id=" + ids["mail-b"]); p.status != http.StatusNotFound {
		t.Fatalf("another tenant's message: %d", p.status)
	}
	if p = br.get("/settings/mail?state=failed"); p.testid("mail-row").Length() != 0 {
		t.Fatal("failed filter shows messages that did not fail")
	}
	staff, err := e.App.Tenants.CreateUser(ctx, a.ID, tenantsUser("sam@mail-a.test", "Sam"))
	if err != nil {
		t.Fatal(err)
	}
	sb := newBrowser(t, e)
	sb.login(staff.Email, "a-long-password-1")
	if p = sb.get("/settings/mail"); p.status == 200 {
		t.Fatalf("staff got the mail page")
	}

	// Everyone's own notification settings: digest off, quiet hours.
	p = sb.get("/settings/notifications")
	if p.status != 200 || p.testid("notify-digest").Length() != 1 {
		t.Fatalf("settings: %d", p.status)
	}
	if p = sb.post("/settings/notifications", url.Values{"on": {"assigned", "overdue"}, "quiet_from": {"25:00"}, "quiet_to": {"07:00"}}); p.status != 422 {
		t.Fatalf("bad time: %d", p.status)
	}
	if p = sb.post("/settings/notifications", url.Values{"on": {"assigned", "overdue"}, "quiet_from": {"22:00"}, "quiet_to": {"07:00"}}); p.status != 303 {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	got, err := e.App.Web.Notify.Preferences(ctx, a.ID, staff.ID)
	if err != nil || strings.Join(got.Off, ",") != "digest" || got.QuietFrom != "22:00" || got.QuietTo != "07:00" {
		t.Fatalf("stored %+v %v", got, err)
	}
	if p = sb.get("/settings/notifications"); p.testid("notify-digest").Is("[checked]") || !p.testid("notify-assigned").Is("[checked]") {
		t.Fatal("the form does not show what was saved")
	}
}

func tenantsUser(email, name string) tenants.CreateUserInput {
	return tenants.CreateUserInput{Email: email, Name: name, Role: "staff", Password: "a-long-password-1"}
}
