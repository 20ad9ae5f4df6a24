package browser_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserMappingGuidedFix fixes a broken mapping end to end in the
// browser, no API call: the failing deliveries' latest payload shows as a
// tree, the broken field is marked with its error, a click on the right
// key fills the focused field, the preview names the sender's delivery
// ids, Save says how many failed deliveries would now map with "Reprocess
// N", and after reprocessing a banner links the leads made.
func TestBrowserMappingGuidedFix(t *testing.T) {
	e := browserApp(t, "ui_map", true)
	ten := e.Tenant("acme")
	const n = 3
	src, _ := failingSource(t, e, ten, n)

	_, tb := adminTab(t, e, ten)
	page := "/sources/" + src.ID
	for _, vp := range widths {
		tb.viewport(vp.w, vp.h, vp.mobile)
		tb.open(page)
		tb.fitsWidth(fmt.Sprintf("%s at %d px", page, vp.w))
	}
	tb.viewport(1280, 900, false)
	tb.open(page)
	if tb.count(`[data-testid="payload-tree"] [data-testid="json-key"]`) == 0 {
		t.Fatal("no payload tree")
	}
	if got := tb.text(`[data-testid="field-natural_key_path"] [data-testid="field-error"]`); !strings.Contains(got, "$.lead.uuid") || !strings.Contains(got, "no natural key") {
		t.Fatalf("the broken field is not marked: %q", got)
	}
	if !strings.Contains(tb.text(`[data-testid="payload-tree"]`), "$.lead.id") {
		t.Error("the paths are not printed to copy")
	}
	tb.screenshot("mapping-fix-broken")

	t.Log("focus the natural key field, click lead → id in the payload")
	tb.do(chromedp.Focus(chromedp.CSS(`input[name=natural_key_path]`)))
	tb.do(chromedp.Click(chromedp.CSS(`[data-testid="json-key"][data-json-path="$.lead.id"]`), chromedp.NodeVisible))
	if got := run(tb, chromedp.Evaluate[string](`document.querySelector('input[name=natural_key_path]').value`)); got != "$.lead.id" {
		t.Fatalf("the click filled %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tb.count(`[data-testid="preview-row"][data-ok="true"]`) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the preview does not map %d: %s", n, tb.text(`[data-testid="mapping-preview"]`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ids := tb.text(`[data-testid="preview-table"]`); !strings.Contains(ids, "evt-0") || !strings.Contains(ids, "evt-2") {
		t.Errorf("preview rows do not show the sender's delivery ids: %s", ids)
	}
	tb.screenshot("mapping-fix-preview")

	t.Log("save: N would now map — Reprocess N")
	tb.submit(`[data-testid="mapping-save"]`)
	if got := tb.text(`[data-testid="would-map-text"]`); got != "3 failed deliveries would now map" {
		t.Fatalf("after save: %q", got)
	}
	if got := tb.text(`[data-testid="reprocess-failed"]`); got != "Reprocess 3" {
		t.Fatalf("reprocess button %q", got)
	}
	tb.screenshot("mapping-fix-saved")
	tb.submit(`[data-testid="reprocess-failed"]`)
	if tb.count(`[data-testid="reprocessed"]`) != 1 {
		t.Fatal("no confirmation after reprocessing")
	}
	loc, _, _ := strings.Cut(strings.TrimPrefix(tb.location(), e.URL), "#")
	tb.eventually(loc, "links to the 3 leads made", func() bool {
		return tb.count(`[data-testid="reprocessed-lead"]`) == n
	})
	if got := tb.text(`[data-testid="reprocessed"]`); !strings.Contains(got, "3 failed deliveries reprocessed") || !strings.Contains(got, "3 leads") {
		t.Errorf("banner %q", got)
	}
	var leads int
	_ = e.App.DB.Get(&leads, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID)
	if leads != n {
		t.Errorf("%d leads", leads)
	}
	tb.screenshot("mapping-fix-reprocessed")
	tb.submit(`[data-testid="reprocessed-lead"]`)
	if !strings.Contains(tb.location(), "/leads/") {
		t.Errorf("the banner's link leads to %s", tb.location())
	}
}
