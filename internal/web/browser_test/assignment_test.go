package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestBrowserAssignment is the assignment rules' acceptance in Chromium: an admin
// creates a round-robin rule on the assignment page; leads posted through
// the webhook are processed and each lead's page names its owner and the
// rule, with the first-response clock; the Overdue view lists overdue
// leads, the reader's own first, with the due time in the reader's zone.
// A stale form is refused; staff get 403 on the rules page; the pages fit
// 390 and 1280 px (screenshots assignment-*, overdue-*, lead-assigned-*).
func TestBrowserAssignment(t *testing.T) {
	e := browserApp(t, "ui_browser_assign", true)
	ctx := context.Background()
	acme := e.Tenant("acme")
	ada := e.Staff(acme.ID, "ada@acme.test", "Ada Lovelace")
	ben := e.Staff(acme.ID, "ben@acme.test", "Ben Okafor")
	src, hook := e.SourceHook(acme, sources.CreateInput{Slug: "website", Name: "Website contact form", Kind: "standard"})

	browser := startBrowser(t)
	admin := newTab(t, browser, e.URL, "admin")
	const zone = "America/New_York"
	if _, err := chromedp.Call(admin.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
		t.Fatal(err)
	}
	admin.login(acme.Admin.Email, acme.AdminPassword)
	loc, _ := time.LoadLocation(zone)

	t.Log("the rules page starts empty; add a round-robin rule among Ada, Ben and me")
	if st := admin.open("/settings/assignment"); st != 200 {
		t.Fatalf("rules page: %d", st)
	}
	if admin.count(`[data-testid="nav-assignment"][aria-current="page"]`) != 1 {
		t.Error("the nav does not mark Assignment as the current page")
	}
	admin.submit(`[data-testid="add-rule"]`)
	if admin.count(`[data-testid="rule-form"]`) != 1 {
		t.Fatal("no rule form")
	}
	// The owner select is hidden while round robin is chosen (CSS :has).
	if vis := run(admin, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector('.asg-if-owner')).display !== 'none'`)); vis {
		t.Error("the fixed-owner select shows while round robin is chosen")
	}
	t.Log("saving without a member is refused on its field, keeping what was typed")
	admin.do(chromedp.SetValue(chromedp.CSS(`#f-name`), "Everyone"))
	admin.submit(`[data-testid="save-rule"]`)
	if got := admin.text(`[data-testid="rule-members"] ~ [data-testid="field-error"]`); !strings.Contains(got, "at least one") {
		t.Fatalf("members error %q", got)
	}
	if got := run(admin, chromedp.Evaluate[string](`document.querySelector('#f-name').value`)); got != "Everyone" {
		t.Fatalf("the refused form lost the name: %q", got)
	}
	for _, id := range []string{ada.ID, ben.ID, acme.Admin.ID} {
		admin.do(chromedp.Click(chromedp.CSS(`input[name=members][value="`+id+`"]`), chromedp.NodeVisible))
	}
	admin.screenshot("assignment-rule-form")
	admin.submit(`[data-testid="save-rule"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "Everyone") {
		t.Fatalf("flash %q", got)
	}
	a, err := e.App.Web.Leads.Assignment(ctx, acme.ID)
	if err != nil || len(a.Rules) != 1 || a.Rules[0].Strategy != leads.StrategyRoundRobin || len(a.Rules[0].Members) != 3 {
		t.Fatalf("stored rules %+v %v", a, err)
	}
	var audited int
	if err := e.App.DB.GetContext(ctx, &audited, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'assignment.changed' AND actor_kind = 'user'`, acme.ID); err != nil || audited != 1 {
		t.Fatalf("audit rows by the user: %d %v", audited, err)
	}

	t.Log("a fixed-owner rule for one source, then move it to the top")
	admin.open("/settings/assignment/rules/new")
	admin.do(chromedp.SetValue(chromedp.CSS(`#f-name`), "Website to Ben"),
		chromedp.Click(chromedp.CSS(`[data-testid="when-source"]`)),
		chromedp.SetValue(chromedp.CSS(`#f-source_id`), src.ID),
		chromedp.Click(chromedp.CSS(`[data-testid="strategy-owner"]`)),
		chromedp.SetValue(chromedp.CSS(`#f-owner_id`), ben.ID))
	admin.submit(`[data-testid="save-rule"]`)
	if got := admin.count(`[data-testid="rule"]`); got != 2 {
		t.Fatalf("%d rules listed", got)
	}
	admin.submit(`[data-rule-name="Website to Ben"] [data-testid="rule-up"]`)
	if got := admin.text(`[data-testid="rule"]:first-child [data-testid="rule-name"]`); got != "Website to Ben" {
		t.Fatalf("first rule after moving up: %q", got)
	}
	if got := admin.text(`[data-testid="rule"]:first-child [data-testid="rule-when"]`); got != "Source is Website contact form" {
		t.Errorf("condition in words: %q", got)
	}

	t.Log("a form from a stale page is refused and keeps what was typed")
	admin.open("/settings/assignment")
	admin.submit(`[data-rule-name="Website to Ben"] [data-testid="rule-edit"]`)
	admin.do(chromedp.SetValue(chromedp.CSS(`#f-name`), "Website to Ada"))
	// Meanwhile another admin (the API) deletes that rule: only Everyone remains.
	if _, err := e.App.Web.Leads.PutAssignment(ctx, acme.ID, leads.Assignment{Rules: a.Rules, FirstResponseMinutes: 60}); err != nil {
		t.Fatal(err)
	}
	admin.submit(`[data-testid="save-rule"]`)
	if admin.count(`[data-testid="conflict"]`) != 1 {
		t.Fatal("no conflict shown for a stale form")
	}
	if got := run(admin, chromedp.Evaluate[string](`document.querySelector('#f-name').value`)); got != "Website to Ada" {
		t.Errorf("the conflict lost what was typed: %q", got)
	}
	if now, _ := e.App.Web.Leads.Assignment(ctx, acme.ID); len(now.Rules) != 1 || now.Rules[0].Name != "Everyone" {
		t.Fatalf("a stale form changed the rules: %+v", now)
	}
	admin.screenshot("assignment-conflict")
	admin.open("/settings/assignment")
	admin.screenshot("assignment-rules")
	admin.pageFits("/settings/assignment", 390, 844, true)
	admin.pageFits("/settings/assignment/rules/0", 390, 844, true)

	t.Log("three leads through the webhook: one each, the page names the owner and the rule")
	for i := range 3 {
		if st := hook.Post(fmt.Sprintf("evt-%d", i), fmt.Sprintf("contact-%d", i), kinds.Lead{Name: fmt.Sprintf("Lead %d", i),
			Email: fmt.Sprintf("lead%d@example.test", i), Company: "Initech"}); st != 200 {
			t.Fatalf("webhook: %d", st)
		}
	}
	owners := map[string]string{} // lead id → owner id
	deadline := time.Now().Add(20 * time.Second)
	for len(owners) < 3 {
		var rows []struct {
			ID    string  `db:"id"`
			Owner *string `db:"owner_id"`
		}
		if err := e.App.DB.SelectContext(ctx, &rows, `SELECT id, owner_id FROM leads WHERE tenant_id = ? AND source_id = ?`, acme.ID, src.ID); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Owner != nil {
				owners[r.ID] = *r.Owner
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("leads assigned: %v", owners)
		}
		time.Sleep(100 * time.Millisecond)
	}
	per := map[string]int{}
	var mine, adas string
	for id, o := range owners {
		per[o]++
		if o == acme.Admin.ID {
			mine = id
		}
		if o == ada.ID {
			adas = id
		}
	}
	if per[ada.ID] != 1 || per[ben.ID] != 1 || per[acme.Admin.ID] != 1 {
		t.Fatalf("round robin gave %v", per)
	}
	admin.open("/leads/" + adas)
	if got := admin.text(`[data-testid="field-owner"]`); !strings.Contains(got, "Ada Lovelace") || !strings.Contains(got, "Assigned by the rule “Everyone”") {
		t.Errorf("owner field %q", got)
	}
	if got := admin.text(`[data-testid="timeline"] [data-kind="assigned"]`); !strings.Contains(got, "Assigned to Ada Lovelace by rule Everyone") {
		t.Errorf("timeline entry %q", strings.Join(strings.Fields(got), " "))
	}
	if got := run(admin, chromedp.Evaluate[string](`document.querySelector('[data-testid="field-first-response"] [data-testid="sla"]').dataset.clock`)); got != "running" {
		t.Errorf("clock state %q", got)
	}
	if got := admin.text(`[data-testid="field-first-response"]`); !strings.Contains(got, "First reply within") {
		t.Errorf("first response %q", got)
	}
	admin.screenshot("lead-assigned")
	admin.pageFits("/leads/"+adas, 390, 844, true)

	t.Log("make every lead overdue: the Overdue view lists them, mine first, due times in New York")
	due := time.Now().Add(-95 * time.Minute).UTC().Truncate(time.Second)
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET assigned_at = ?, first_response_due_at = ? WHERE tenant_id = ? AND source_id = ?`,
		due.Add(-time.Hour), due, acme.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	admin.open("/leads?view=overdue")
	if got := admin.count(`[data-testid="lead-row"]`); got != 3 {
		t.Fatalf("overdue view lists %d leads", got)
	}
	if got := run(admin, chromedp.Evaluate[string](`document.querySelector('[data-testid="lead-row"]').dataset.leadId`)); got != mine {
		t.Errorf("the first overdue lead is %s, want mine %s", got, mine)
	}
	if got := admin.text(`[data-testid="sla-group"]`); !strings.Contains(got, "Yours") {
		t.Errorf("group heading %q", got)
	}
	chip := admin.text(`[data-lead-id="` + adas + `"] [data-testid="sla"]`)
	if !strings.Contains(chip, "First reply overdue by 1 h 3") || !strings.Contains(chip, due.In(loc).Format("15:04")) {
		t.Errorf("overdue chip %q, want 'First reply overdue by 1 h 3…' and %s", chip, due.In(loc).Format("15:04"))
	}
	admin.screenshot("overdue")
	admin.pageFits("/leads?view=overdue", 390, 844, true)
	// On a phone the row of views scrolls: the current one is brought into sight.
	admin.phone()
	admin.open("/leads?view=overdue")
	admin.do(chromedp.Sleep(150 * time.Millisecond))
	if r := admin.rect(`[data-testid="view-overdue"]`); r == nil || r["left"] < 0 || r["right"] > r["vw"] {
		t.Errorf("on a phone the Overdue tab is out of sight: %v", r)
	}
	admin.screenshotViewport("overdue-390-first-screen")
	admin.do(chromedp.EmulateViewport(1280, 900))
	admin.open("/leads/" + adas)
	if got := admin.text(`.lead-sub [data-testid="sla"]`); !strings.Contains(got, "First reply overdue by") {
		t.Errorf("the lead's header says %q", got)
	}
	admin.screenshot("lead-overdue")
	admin.open("/leads?view=due_soon")
	if got := admin.count(`[data-testid="lead-row"]`); got != 0 {
		t.Errorf("due soon lists %d overdue leads", got)
	}

	t.Log("a note is the first response: the lead leaves Overdue, its page says when")
	admin.open("/leads/" + mine)
	admin.do(chromedp.SetValue(chromedp.CSS(`textarea[name=body]`), "Called, left a voicemail"))
	admin.submit(`[data-testid="add-note"]`)
	admin.open("/leads/" + mine)
	if got := admin.text(`[data-testid="field-first-response"]`); !strings.Contains(got, "Answered") || !strings.Contains(got, "late") {
		t.Errorf("after a note: %q", got)
	}
	admin.open("/leads?view=overdue")
	if got := admin.count(`[data-testid="lead-row"]`); got != 2 {
		t.Errorf("overdue after a response lists %d", got)
	}
	if admin.count(`[data-testid="sla-group"]`) != 0 {
		t.Error("group headings shown with none of mine")
	}

	t.Log("staff see the views but not the rules page")
	staff := newTab(t, browser, e.URL, "ada")
	staff.login("ada@acme.test", "staff-password-1")
	if st := staff.open("/settings/assignment"); st != http.StatusForbidden {
		t.Errorf("staff on the rules page: %d", st)
	}
	staff.open("/leads?view=overdue")
	if got := run(staff, chromedp.Evaluate[string](`document.querySelector('[data-testid="lead-row"]').dataset.leadId`)); got != adas {
		t.Errorf("Ada's first overdue lead is %s, want hers %s", got, adas)
	}
}
