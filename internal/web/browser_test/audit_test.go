package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserAuditLog: an admin opens the audit log from the navigation,
// filters it by action and by person, pages to older entries, and the page
// fits a 390 px phone (one card per entry, nothing sideways) with its
// detail readable. Screenshots: artifacts/screenshots/audit-*.png.
func TestBrowserAuditLog(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_audit", "Dana Scully", "Fox Mulder", "Walter Skinner")
	e, acme := d.e, d.acme
	api := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		res := e.Do(method, path, acme.Token, body, "Idempotency-Key", fmt.Sprintf("audit-%s-%s-%d", method, path, len(fmt.Sprint(body))))
		if res.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, res.Status, res.Body)
		}
		var out map[string]any
		if len(res.Body) > 0 {
			res.JSON(t, &out)
		}
		return out
	}
	src := api("POST", "/api/v1/sources", map[string]any{"slug": "website", "name": "Website contact form", "kind": "standard"}, 201)
	srcID := src["id"].(string)
	api("PATCH", "/api/v1/sources/"+srcID, map[string]any{"name": "Website form (new)"}, 200)
	ep := api("POST", "/api/v1/endpoints", map[string]any{"url": "https://crm.example.com/hooks/leadpipe?key=receiver-own-token", "events": []string{"lead.created"}}, 201)
	epID := ep["id"].(string)
	api("PATCH", "/api/v1/endpoints/"+epID, map[string]any{"enabled": false}, 200)
	api("POST", "/api/v1/endpoints/"+epID+"/rotate-secret", map[string]any{"grace_seconds": 0}, 200)
	ids := []string{d.leads["Dana Scully"], d.leads["Fox Mulder"], d.leads["Walter Skinner"]}
	api("POST", "/api/v1/leads/bulk", map[string]any{"ids": ids, "set": map[string]any{"status": "contacted", "add_tags": []string{"vip"}}}, 200)
	// Enough rotations that the log needs a second page (50 a page).
	for i := range 50 {
		api("POST", "/api/v1/sources/"+srcID+"/rotate-secret", map[string]any{"grace_seconds": i}, 200)
	}

	browser, admin := adminTab(t, e, acme)
	admin.open("/leads")
	admin.submit(`[data-testid="nav-audit"]`) // click, and wait for the whole page: rows counted mid-load came up short
	admin.waitText("h1", "Audit log")
	if n := admin.count(`[data-testid="audit-row"]`); n != 50 {
		t.Fatalf("first page shows %d entries, want 50", n)
	}
	if got := run(admin, chromedp.AttributeValue(chromedp.CSS(`[data-testid="audit-row"]`), "data-action", chromedp.NodeReady)).Value; got != "user.logged_in" {
		t.Fatalf("newest entry is %q, want the admin's sign-in", got)
	}
	if admin.count(`nav.pagination a`) != 1 {
		t.Fatal("no Older link on a full page")
	}
	body := run(admin, chromedp.Evaluate[string](`document.body.innerText`))
	if strings.Contains(body, "receiver-own-token") || strings.Contains(body, "whsec_") {
		t.Fatal("the page shows a secret or an endpoint's query")
	}

	t.Log("filter by action: only bulk edits, detail readable")
	admin.do(chromedp.SetValue(chromedp.CSS(`select[name=action]`), "leads.bulk_edited", chromedp.NodeVisible))
	admin.submit(`[data-testid="audit-filter"]`)
	if n := admin.count(`[data-testid="audit-row"]`); n != 1 || admin.count(`[data-testid="audit-row"][data-action="leads.bulk_edited"]`) != 1 {
		t.Fatalf("action filter shows %d rows", n)
	}
	detail := admin.text(`[data-testid="audit-detail"]`)
	for _, want := range []string{"count", "3", "set.status", "contacted", "vip", ids[0]} {
		if !strings.Contains(detail, want) {
			t.Errorf("bulk detail %q lacks %q", detail, want)
		}
	}
	if who := admin.text(`[data-testid="audit-row"] td[data-label="Who"]`); !strings.Contains(who, "API token") || !strings.Contains(who, "127.0.0.1") {
		t.Errorf("bulk row's actor: %q", who)
	}
	admin.screenshot("audit-filtered-bulk")

	t.Log("filter by person: the admin's own sign-in only")
	admin.open("/settings/audit")
	admin.do(chromedp.SetValue(chromedp.CSS(`select[name=actor]`), acme.Admin.ID, chromedp.NodeVisible))
	admin.submit(`[data-testid="audit-filter"]`)
	if n := admin.count(`[data-testid="audit-row"]`); n != 1 || admin.count(`[data-testid="audit-row"][data-action="user.logged_in"]`) != 1 {
		t.Fatalf("actor filter shows %d rows", n)
	}
	admin.open("/settings/audit?action=source.secret_rotated")
	if n := admin.count(`[data-testid="audit-row"]`); n != 50 {
		t.Fatalf("rotations page 1: %d rows", n)
	}

	t.Log("Older: the rest, no repeats, filter kept")
	admin.open("/settings/audit")
	first := run(admin, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="audit-row"]')).map(function(r){return r.dataset.id})`))
	admin.screenshot("audit-log")
	admin.submit(`nav.pagination a`)
	second := run(admin, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="audit-row"]')).map(function(r){return r.dataset.id})`))
	if len(second) == 0 {
		t.Fatal("Older shows nothing")
	}
	seen := map[string]bool{}
	for _, id := range first {
		seen[id] = true
	}
	for _, id := range second {
		if seen[id] {
			t.Fatalf("entry %s on both pages", id)
		}
	}
	if first[len(first)-1] <= second[0] {
		t.Fatal("older page is not older")
	}
	admin.screenshot("audit-log-older")

	t.Log("a phone: cards, nothing sideways, detail inside the card")
	admin.phoneFits("/settings/audit")
	admin.phoneFits("/settings/audit?action=leads.bulk_edited")
	admin.phoneFits("/settings/audit?action=endpoint.created")
	admin.open("/settings/audit?action=endpoint.created")
	if got := admin.text(`[data-testid="audit-detail"]`); !strings.Contains(got, "crm.example.com") || strings.Contains(got, "receiver-own-token") {
		t.Fatalf("endpoint detail %q: want the host, never the query", got)
	}

	t.Log("staff do not get the page")
	staff := newTab(t, browser, e.URL, "staff")
	staff.login("sam@acme.test", staffPassword)
	if st := staff.open("/settings/audit"); st == 200 {
		t.Fatal("staff opened the audit log")
	}
}
