package browser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// One person in two tenants signs in to each from their own browser: the
// login asks which tenant, and each session shows that tenant's leads
// only. An admin then makes a scoped token with an expiry on the tokens
// page and sees both in the list.
func TestBrowserPersonInTwoTenants(t *testing.T) {
	e := browserApp(t, "ui_browser_tenants", false)
	ctx := context.Background()
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	for _, ten := range []apptest.Tenant{acme, beta} {
		if _, err := e.App.Tenants.CreateUser(ctx, ten.ID, tenants.CreateUserInput{Email: "pat@example.test", Name: "Pat Lee",
			Password: "pat-password-1", Role: tenants.RoleStaff}); err != nil {
			t.Fatal(err)
		}
		src, _ := e.Source(ten.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
		name := "Lead of " + ten.Slug
		if _, _, err := leads.UpsertFromSender(ctx, e.App.DB, ten.ID, src.ID, leads.SenderRecord{SourceRef: "r1", Name: name,
			Email: ten.Slug + "@lead.test", Payload: []byte(`{"id":"r1"}`)}, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
	}
	browser := startBrowser(t)
	for _, ten := range []apptest.Tenant{acme, beta} {
		tb := newTab(t, browser, e.URL, "pat in "+ten.Slug)
		tb.open("/login")
		tb.do(
			chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "pat@example.test", chromedp.NodeVisible),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "pat-password-1", chromedp.NodeVisible),
		)
		tb.submit(`[data-testid="login-submit"]`)
		if n := tb.count(`[data-testid="tenant-chooser"] button[name=tenant]`); n != 2 {
			t.Fatalf("%s: the chooser offers %d tenants", ten.Slug, n)
		}
		if ten.Slug == "acme" {
			tb.screenshot("login-choose-tenant")
		}
		tb.submit(`[data-testid="choose-` + ten.Slug + `"]`)
		if loc := tb.location(); !strings.HasSuffix(loc, "/leads") {
			t.Fatalf("%s: after choosing at %s", ten.Slug, loc)
		}
		tb.open("/leads?view=all")
		body := tb.text("main")
		other := map[string]string{"acme": "beta", "beta": "acme"}[ten.Slug]
		if !strings.Contains(body, "Lead of "+ten.Slug) || strings.Contains(body, "Lead of "+other) {
			t.Fatalf("%s: the inbox shows %q", ten.Slug, body)
		}
		if got := tb.text(`[data-testid="tenant-name"]`); got != strings.ToUpper(ten.Slug) {
			t.Fatalf("%s: tenant shown %q", ten.Slug, got)
		}
	}

	admin := newTab(t, browser, e.URL, "admin")
	admin.login(acme.Admin.Email, acme.AdminPassword)
	admin.open("/settings/tokens")
	admin.do(
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Website backend", chromedp.NodeVisible),
		chromedp.Click(chromedp.CSS(`[data-testid="scope-leads:write"]`), chromedp.NodeVisible),
		chromedp.SetValue(chromedp.CSS(`select[name=expires]`), "90", chromedp.NodeVisible),
	)
	admin.submit(`[data-testid="create-token"]`)
	if n := admin.count(`[data-testid="new-token"]`); n != 1 {
		t.Fatal("the new token is not shown")
	}
	if got := admin.text(`[data-testid="token-row"] [data-testid="token-scopes"]`); got != "leads:write" {
		t.Fatalf("scopes shown %q", got)
	}
	admin.screenshot("tokens-scoped")
	admin.phoneFits("/settings/tokens")
}
