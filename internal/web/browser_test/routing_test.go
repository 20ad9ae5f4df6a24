package browser_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserRouting is routing beyond round robin in Chromium: an admin
// gives a round-robin member a daily cap and the rule an escalation on
// the rule form, the list shows both; a staff member marks themselves
// away on My settings and the rules list says so. The pages fit 390 and
// 1280 px (screenshots routing-*).
func TestBrowserRouting(t *testing.T) {
	e := browserApp(t, "ui_browser_routing", false)
	ctx := context.Background()
	acme := e.Tenant("acme")
	ada := e.Staff(acme.ID, "ada@acme.test", "Ada Lovelace")
	ben := e.Staff(acme.ID, "ben@acme.test", "Ben Okafor")

	browser, admin := adminTab(t, e, acme)
	admin.open("/settings/assignment/rules/new")
	admin.do(chromedp.SetValue(chromedp.CSS(`#f-name`), "Sales team"))
	admin.do(chromedp.Click(chromedp.CSS(`#member-`+ada.ID)), chromedp.Click(chromedp.CSS(`#member-`+ben.ID)))
	admin.do(chromedp.SetValue(chromedp.CSS(`#cap-`+ada.ID), "2"))
	admin.do(chromedp.SetValue(chromedp.CSS(`[data-testid="escalate-after"]`), "15"))
	admin.screenshot("routing-rule-form")
	noSideways(t, admin, "rule form")
	admin.submit(`[data-testid="save-rule"]`)
	if got := admin.text(`[data-testid="rule-strategy"]`); !strings.Contains(got, "2 a day") {
		t.Fatalf("rule list: %q", got)
	}
	if got := admin.text(`[data-testid="rule-escalate"]`); !strings.Contains(got, "After 15 minutes") || !strings.Contains(got, "next member") {
		t.Fatalf("escalation on the list: %q", got)
	}
	a, err := e.App.Web.Leads.Assignment(ctx, acme.ID)
	if err != nil || len(a.Rules) != 1 || a.Rules[0].Caps[ada.ID] != 2 || a.Rules[0].Escalate == nil || a.Rules[0].Escalate.AfterMinutes != 15 ||
		a.Rules[0].Escalate.To != "next_member" {
		t.Fatalf("stored rules: %+v %v", a, err)
	}
	// The edit form shows what is stored.
	admin.open("/settings/assignment/rules/0")
	if v := run(admin, chromedp.Evaluate[string](`document.querySelector('#cap-`+ada.ID+`').value`)); v != "2" {
		t.Fatalf("cap on the edit form: %q", v)
	}

	t.Log("Ben marks himself away on My settings")
	staff := newTab(t, browser, e.URL, "ben")
	staff.login("ben@acme.test", "staff-password-1")
	staff.open("/settings/me")
	staff.do(chromedp.SetValue(chromedp.CSS(`[data-testid="away-until"]`), "2027-01-15T09:00"))
	staff.submit(`[data-testid="save-away"]`)
	if got := staff.text(`[data-testid="away-status"]`); !strings.Contains(got, "away until") {
		t.Fatalf("away status: %q", got)
	}
	staff.screenshot("routing-away")
	noSideways(t, staff, "my settings")
	u, err := e.App.Tenants.User(ctx, acme.ID, ben.ID)
	if err != nil || u.AwayUntil == nil || u.AwayUntil.Year() != 2027 {
		t.Fatalf("stored away: %+v %v", u.AwayUntil, err)
	}
	admin.open("/settings/assignment")
	if got := admin.text(`[data-testid="member-away"]`); !strings.Contains(got, "Ben Okafor · away to") {
		t.Fatalf("away on the rules list: %q", got)
	}
	admin.screenshot("routing-rules")
	noSideways(t, admin, "rules list")
	staff.submit(`[data-testid="away-back"]`)
	if got := staff.text(`[data-testid="away-status"]`); strings.Contains(got, "away until") {
		t.Fatalf("still away: %q", got)
	}
}

// noSideways fails when the page scrolls sideways at 390 px.
func noSideways(t *testing.T, tb *tab, what string) {
	t.Helper()
	tb.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	if over := run(tb, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`)); over {
		t.Errorf("%s scrolls sideways at 390 px", what)
	}
	tb.do(chromedp.EmulateViewport(1280, 900))
}
