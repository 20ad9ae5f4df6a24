package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/sources"
)

// TestBrowserPullSettings: a Typeform source's reconcile pull settings are
// set in the form on its page, not through the API. A bad value comes back
// 422 with the message beside its field and the typed token not in the
// page; after a good save the token shows only as "Set", is stored, is
// never in the page's HTML, a blank token field keeps it, and "Reconcile
// now" pulls the fake Typeform API's leads with it.
func TestBrowserPullSettings(t *testing.T) {
	e := browserApp(t, "ui_pull", true)
	ctx := context.Background()
	ten := e.Tenant("acme")
	src, _ := e.Source(ten.ID, sources.CreateInput{Slug: "demo-form", Name: "Typeform demo request", Kind: "typeform"})
	const token = "tfp_Secret-Pull-Token-4242"
	fake := fakeapi.NewTypeform(t, "F1x2Y3", fakeapi.MakeLeads(3, "tf", time.Now().Add(-2*time.Hour), time.Minute))
	fake.RequireToken(token)

	_, admin := adminTab(t, e, ten)
	page := "/sources/" + src.ID
	admin.open(page)
	if admin.count(`[data-testid="reconcile-now"]`) != 0 {
		t.Fatal("Reconcile now offered before any settings")
	}
	if body := admin.text(`[data-testid="reconcile"]`); strings.Contains(body, "PATCH") {
		t.Errorf("the reconcile card still sends the admin to the API: %q", body)
	}
	if got := admin.text(`[data-testid="token-state"]`); !strings.Contains(got, "Not set") {
		t.Errorf("token state before %q", got)
	}
	admin.screenshot("pull-empty")

	fill := func(base, tok, form, every, back string) {
		t.Helper()
		for id, v := range map[string]string{"base_url": base, "access_token": tok, "form_id": form, "interval_minutes": every, "lookback_minutes": back} {
			admin.setField("#f-"+id, v)
		}
	}
	html := func() string { return run(admin, chromedp.Evaluate[string](`document.documentElement.outerHTML`)) }

	t.Log("a wrong base URL and no form id: 422, each message beside its field, the token not sent back")
	fill("ftp://typeform.example", token, "", "15", "60")
	// The browser's own URL check would stop the submit: let the server judge.
	admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="pull-form"]').noValidate = true`))
	admin.submit(`[data-testid="save-pull"]`)
	if got := admin.text(`[data-testid="field-base_url"] [data-testid="field-error"]`); !strings.Contains(got, "http(s) URL") {
		t.Errorf("base URL error %q", got)
	}
	if got := admin.text(`[data-testid="field-form_id"] [data-testid="field-error"]`); !strings.Contains(got, "form's id") {
		t.Errorf("form id error %q", got)
	}
	if got := admin.text(`[data-testid="token-state"]`); !strings.Contains(got, "Enter the token again") {
		t.Errorf("token state after a refused save %q", got)
	}
	if strings.Contains(html(), token) {
		t.Fatal("the refused save echoed the access token into the page")
	}
	if admin.count(`#f-base_url[aria-invalid="true"]`) != 1 {
		t.Error("the base URL field is not marked invalid")
	}
	if got, _ := e.App.Sources.Get(ctx, ten.ID, src.ID); got.ReconcileBaseURL != nil || len(got.ReconcileTokenEnc) != 0 {
		t.Fatal("a refused save stored something")
	}
	admin.screenshot("pull-invalid")

	t.Log("good settings: saved, token shown only as Set")
	fill(fake.URL, token, "F1x2Y3", "30", "120")
	admin.submit(`[data-testid="save-pull"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "Pull settings saved") {
		t.Fatalf("flash after save %q", got)
	}
	stored, err := e.App.Sources.Get(ctx, ten.ID, src.ID)
	if err != nil {
		t.Fatal(err)
	}
	pull, err := e.App.Sources.Pull(stored)
	if err != nil {
		t.Fatal(err)
	}
	if pull.AccessToken != token || pull.BaseURL != fake.URL || pull.FormID != "F1x2Y3" || pull.Interval != 30*time.Minute || pull.Lookback != 2*time.Hour {
		t.Fatalf("stored pull settings %+v", pull)
	}
	if strings.Contains(html(), token) {
		t.Fatal("the access token is in the page's HTML")
	}
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="pull-settings"] summary`), chromedp.NodeVisible))
	if got := admin.text(`[data-testid="token-state"]`); !strings.Contains(got, "Set.") {
		t.Errorf("token state after save %q", got)
	}
	if v := run(admin, chromedp.Evaluate[string](`document.querySelector('#f-access_token').value`)); v != "" {
		t.Errorf("the token field holds %q", v)
	}

	t.Log("save again with the token field blank: the token stays")
	admin.setField("#f-interval_minutes", "20")
	admin.submit(`[data-testid="save-pull"]`)
	stored, _ = e.App.Sources.Get(ctx, ten.ID, src.ID)
	if pull, err = e.App.Sources.Pull(stored); err != nil || pull.AccessToken != token || pull.Interval != 20*time.Minute {
		t.Fatalf("after a save with a blank token: %+v %v", pull, err)
	}

	t.Log("Reconcile now pulls the fake API with the stored token")
	admin.submit(`[data-testid="reconcile-now"]`)
	admin.eventually(page, "a succeeded run", func() bool {
		return strings.Contains(admin.text(`[data-testid="reconcile"]`), "Succeeded")
	})
	var n int
	if err := e.App.DB.Get(&n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, ten.ID, src.ID); err != nil || n != 3 {
		t.Fatalf("%d leads after the run (%v)", n, err)
	}
	if fake.Requests() == 0 {
		t.Fatal("the fake API was never called")
	}
	for _, vp := range widths {
		admin.viewport(vp.w, vp.h, vp.mobile)
		admin.open(page)
		admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="pull-settings"]').open = true`))
		admin.fitsWidth(page + " with the pull settings open")
	}
	admin.viewport(1280, 900, false)
	admin.open(page)
	admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="pull-settings"]').open = true`))
	admin.screenshot("pull-saved")
}

// setField sets a form control's value as typing would leave it.
func (tb *tab) setField(sel, value string) {
	tb.t.Helper()
	ok := run(tb, chromedp.Evaluate[bool](fmt.Sprintf(`(function(){var e=document.querySelector(%q); if(!e) return false; e.value=%q; e.dispatchEvent(new Event("input",{bubbles:true})); return true;})()`, sel, value)))
	if !ok {
		tb.t.Fatalf("%s: no field %s", tb.name, sel)
	}
}
