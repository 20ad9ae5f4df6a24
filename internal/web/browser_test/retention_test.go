package browser_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/retention"
	"leadpipe/internal/tenants"
)

// An admin reads and changes the tenant's retention on the settings page:
// the defaults shown, a value out of range refused with the field marked,
// a good one saved (and audited); staff get 403; a cross-site post is
// refused.
func TestBrowserRetention(t *testing.T) {
	e := browserApp(t, "ui_browser_retention", false)
	ctx := context.Background()
	acme := e.Tenant("acme")
	if _, err := e.App.Tenants.CreateUser(ctx, acme.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam Staff",
		Password: "sam-password-1", Role: tenants.RoleStaff}); err != nil {
		t.Fatal(err)
	}
	browser, admin := adminTab(t, e, acme)
	if st := admin.open("/settings/retention"); st != 200 {
		t.Fatalf("retention page: %d", st)
	}
	value := func(name string) string {
		return run(admin, chromedp.Evaluate[string](`document.querySelector('input[name=`+name+`]').value`))
	}
	if got := value("delivery_payload_days") + "/" + value("dead_letter_days") + "/" + value("event_days"); got != "90/30/30" {
		t.Fatalf("defaults shown: %s", got)
	}
	if admin.count(`[data-testid="nav-retention"][aria-current="page"]`) != 1 {
		t.Error("the nav does not mark Retention as the current page")
	}
	admin.screenshot("retention")

	set := func(name, v string) {
		admin.do(chromedp.SetValue(chromedp.CSS(`input[name=`+name+`]`), v, chromedp.NodeVisible))
	}
	set("delivery_payload_days", "0")
	set("event_days", "14")
	admin.submit(`[data-testid="save-retention"]`)
	if got := admin.text(`[data-testid="field-delivery_payload_days"] [data-testid="field-error"]`); !strings.Contains(got, "1 to 3650") {
		t.Fatalf("field error: %q", got)
	}
	if value("event_days") != "14" || value("delivery_payload_days") != "0" {
		t.Fatal("the refused form lost what was typed")
	}
	if st, _ := e.App.Retention.Get(ctx, acme.ID); st != retention.Defaults {
		t.Fatalf("a refused form changed the settings: %+v", st)
	}
	admin.screenshot("retention-invalid")

	set("delivery_payload_days", "45")
	admin.submit(`[data-testid="save-retention"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "Retention saved") {
		t.Fatalf("flash: %q", got)
	}
	if got := value("delivery_payload_days") + "/" + value("dead_letter_days") + "/" + value("event_days"); got != "45/30/14" {
		t.Fatalf("after saving: %s", got)
	}
	if st, _ := e.App.Retention.Get(ctx, acme.ID); st != (retention.Settings{DeliveryPayloadDays: 45, DeadLetterDays: 30, EventDays: 14}) {
		t.Fatalf("stored: %+v", st)
	}
	var n int
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'retention.changed' AND actor_kind = 'user'`, acme.ID); err != nil || n != 1 {
		t.Fatalf("audit rows by the user: %d %v", n, err)
	}

	staff := newTab(t, browser, e.URL, "staff")
	staff.login("sam@acme.test", "sam-password-1")
	if st := staff.open("/settings/retention"); st != http.StatusForbidden {
		t.Fatalf("staff on the retention page: %d", st)
	}

	// A cross-site form post never reaches the handler.
	form := url.Values{"delivery_payload_days": {"1"}, "dead_letter_days": {"1"}, "event_days": {"1"}}
	req, _ := http.NewRequest("POST", e.URL+"/settings/retention", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site post: %d", res.StatusCode)
	}
	if st, _ := e.App.Retention.Get(ctx, acme.ID); st.DeliveryPayloadDays != 45 {
		t.Fatalf("the cross-site post changed the settings: %+v", st)
	}
}
