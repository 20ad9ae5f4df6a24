package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserEndpointForms: an endpoint's events are the UI's styled
// checkboxes (.check), saved from its page; "Delete endpoint" is a red
// danger button that asks first (naming the endpoint), and once accepted
// the endpoint is gone from the list and from the API.
func TestBrowserEndpointForms(t *testing.T) {
	e := browserApp(t, "ui_epforms", false)
	acme := e.Tenant("acme")
	const url = "https://crm.example.com/hooks/leadpipe"
	res := e.Do("POST", "/api/v1/endpoints", acme.Token, map[string]any{"url": url, "events": []string{"lead.created", "lead.updated"}})
	if res.Status != 201 {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	var ep struct{ ID string }
	res.JSON(t, &ep)

	_, admin := adminTab(t, e, acme)
	for _, path := range []string{"/settings/endpoints", "/settings/endpoints/" + ep.ID} {
		admin.open(path)
		if n, styled := admin.count(`[data-testid="field-events"] input[type=checkbox]`), admin.count(`[data-testid="field-events"] .check > input[type=checkbox]`); n != 4 || styled != n {
			t.Errorf("%s: %d event checkboxes, %d of them styled (.check)", path, n, styled)
		}
		if w := run(admin, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('[data-testid="event-lead.created"]')).width`)); w != "18px" {
			t.Errorf("%s: an event checkbox is %s wide, not the UI's 18px", path, w)
		}
	}

	t.Log("subscribe to status changes from the page")
	page := "/settings/endpoints/" + ep.ID
	admin.open(page)
	admin.do(chromedp.Click(chromedp.CSS(`label[for="event-lead.status_changed"]`), chromedp.NodeVisible))
	admin.submit(`[data-testid="save-endpoint"]`)
	res = e.Do("GET", "/api/v1/endpoints/"+ep.ID, acme.Token, nil)
	if !strings.Contains(string(res.Body), "lead.status_changed") {
		t.Fatalf("after saving: %s", res.Body)
	}
	admin.open(page)
	if admin.count(`[data-testid="event-lead.status_changed"]:checked`) != 1 {
		t.Error("the saved event is not ticked")
	}

	t.Log("Delete endpoint: a red danger button that asks first")
	bg := run(admin, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('[data-testid="delete-endpoint"]')).backgroundColor`))
	if bg != "rgb(180, 35, 24)" { // --danger
		t.Errorf("Delete endpoint's background is %s, want the danger red", bg)
	}
	admin.screenshot("endpoint-forms")
	t.Log("declined: nothing happens")
	admin.do(chromedp.Evaluate[chromedp.Void](`window.__asked = ""; window.confirm = function(m){ window.__asked = m; return false; }`))
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="delete-endpoint"]`), chromedp.NodeVisible))
	if asked := run(admin, chromedp.Evaluate[string](`window.__asked`)); !strings.Contains(asked, "Delete the endpoint "+url) {
		t.Fatalf("the confirmation asked %q", asked)
	}
	if res := e.Do("GET", "/api/v1/endpoints/"+ep.ID, acme.Token, nil); res.Status != 200 {
		t.Fatalf("declining deleted it: %d", res.Status)
	}
	t.Log("accepted: gone")
	admin.do(chromedp.Evaluate[chromedp.Void](`window.confirm = function(m){ window.__asked = m; return true; }`))
	admin.submit(`[data-testid="delete-endpoint"]`)
	if !strings.HasSuffix(admin.location(), "/settings/endpoints") {
		t.Fatalf("after delete at %s", admin.location())
	}
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, url+" deleted") {
		t.Errorf("flash %q", got)
	}
	if admin.count(`[data-testid="endpoint-row"]`) != 0 {
		t.Error("the deleted endpoint is still listed")
	}
	if res := e.Do("GET", "/api/v1/endpoints/"+ep.ID, acme.Token, nil); res.Status != 404 {
		t.Errorf("the API still has it: %d", res.Status)
	}
	if st := admin.open(page); st != 404 {
		t.Errorf("its page answers %d", st)
	}
	admin.open("/settings/endpoints")
	admin.screenshot("endpoint-deleted")
}
