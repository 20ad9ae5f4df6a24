package browser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestBrowserMerge is a merge from the lead page: the same
// person arrives by webhook and by hand; the hand-made lead's page lists
// the webhook lead as a possible duplicate (and the inbox's "Possible
// duplicates" view lists both); the admin opens the field-by-field picker,
// which shows both values of each field, takes the webhook's company, and
// merges. The survivor then shows the merged lead's delivery, the merged
// lead's page points at the survivor, the inbox lists one lead, and the
// unmerge button brings the merged lead back. Pages fit 390 px.
func TestBrowserMerge(t *testing.T) {
	e := browserApp(t, "ui_merge", true)
	ctx := context.Background()
	acme := e.Tenant("acme")
	src, hook := e.SourceHook(acme, sources.CreateInput{Slug: "website", Name: "Website contact form", Kind: "standard"})
	if st := hook.Post("evt-1", "contact-1", kinds.Lead{Name: "Dana S.", Email: "Dana@FBI.example", Company: "FBI Field Office", Phone: "+1 202 555 0101"}); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	var webID string
	deadline := time.Now().Add(20 * time.Second)
	for e.App.DB.GetContext(ctx, &webID, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ?`,
		acme.ID, src.ID, "contact-1") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the delivery was never processed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := e.Do("POST", "/api/v1/leads", acme.Token, map[string]any{"name": "Dana Scully", "email": "dana@fbi.example", "company": "FBI"},
		"Idempotency-Key", "hand-dana")
	if r.Status != 201 {
		t.Fatalf("manual lead: %d %s", r.Status, r.Body)
	}
	var hand struct{ ID string }
	r.JSON(t, &hand)

	_, admin := adminTab(t, e, acme)

	t.Log("the inbox view lists both")
	admin.open("/leads?view=duplicates")
	if n := admin.count(`[data-lead-id]`); n < 2 {
		t.Errorf("Possible duplicates view lists %d leads, want both", n)
	}
	admin.screenshot("merge-inbox-duplicates")

	t.Log("the lead page suggests the webhook lead")
	admin.open("/leads/" + hand.ID)
	if got := admin.text(`[data-testid="duplicate"]`); !strings.Contains(got, "Dana S.") || !strings.Contains(got, "same email") {
		t.Fatalf("duplicates panel says %q", got)
	}
	admin.screenshot("merge-lead-duplicates")
	admin.submitLink(`[data-testid="merge-link"]`)
	if loc := admin.location(); !strings.Contains(loc, "/leads/"+hand.ID+"/merge?with="+webID) {
		t.Fatalf("merge link went to %s", loc)
	}
	company := admin.text(`[data-testid="pick-company"]`)
	if !strings.Contains(company, "FBI Field Office") || !strings.Contains(company, "FBI") {
		t.Fatalf("the company row shows %q, want both values", company)
	}
	// The phone: the survivor has none, so the other's is picked already.
	if !run(admin, chromedp.Evaluate[bool](`document.querySelector('[data-testid="pick-phone-1"]').checked`)) {
		t.Error("the only phone is not picked by default")
	}
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="pick-company-1"]`), chromedp.NodeVisible))
	for _, w := range widths {
		admin.viewport(w.w, w.h, w.mobile)
		admin.fitsWidth("merge picker")
	}
	admin.viewport(1280, 900, false)
	admin.screenshot("merge-picker")
	admin.submit(`[data-testid="merge-submit"]`)
	if loc := admin.location(); !strings.HasSuffix(loc, "/leads/"+hand.ID) {
		t.Fatalf("after merge at %s", loc)
	}
	if got := admin.text(`[data-testid="field-company"]`); got != "FBI Field Office" {
		t.Errorf("survivor's company %q, want the picked one", got)
	}
	if got := admin.text(`[data-testid="field-phone"]`); got != "+1 202 555 0101" {
		t.Errorf("survivor's phone %q", got)
	}
	if got := admin.text(`[data-testid="merged-lead"]`); !strings.Contains(got, "Dana S.") {
		t.Errorf("merged leads list %q", got)
	}
	if n := admin.count(`[data-testid="timeline-item"][data-kind="delivery"]`); n != 1 {
		t.Errorf("survivor's timeline shows %d deliveries, want the merged lead's 1", n)
	}
	admin.screenshot("merge-survivor")
	var merges int
	_ = e.App.DB.GetContext(ctx, &merges, `SELECT COUNT(*) FROM lead_merges WHERE tenant_id = ?`, acme.ID)
	if merges != 1 {
		t.Fatalf("%d merge records, want 1", merges)
	}

	t.Log("the merged lead points at the survivor and leaves the inbox")
	admin.open("/leads/" + webID)
	if got := admin.text(`[data-testid="merged-into"]`); !strings.Contains(got, "Dana Scully") {
		t.Errorf("merged lead's page says %q", got)
	}
	admin.open("/leads?view=all")
	if n := admin.count(`[data-lead-id="` + webID + `"]`); n != 0 {
		t.Error("the merged lead is still in the inbox")
	}

	t.Log("unmerge brings it back")
	admin.open("/leads/" + hand.ID)
	admin.submit(`[data-testid="unmerge"]`)
	if loc := admin.location(); !strings.HasSuffix(loc, "/leads/"+webID) {
		t.Fatalf("after unmerge at %s", loc)
	}
	if got := admin.text(`[data-testid="field-company"]`); got != "FBI Field Office" {
		t.Errorf("restored lead's company %q", got)
	}
	admin.open("/leads/" + hand.ID)
	if got := admin.text(`[data-testid="field-company"]`); got != "FBI" {
		t.Errorf("survivor's company after unmerge %q, want its own again", got)
	}
	admin.screenshot("merge-after-unmerge")
}

// submitLink clicks a link and waits for the page it opens.
func (tb *tab) submitLink(sel string) { tb.t.Helper(); tb.submit(sel) }
