package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// failingSource makes the tenant a generic source whose natural-key path
// is wrong ($.lead.uuid for $.lead.id), posts it n deliveries (evt-i,
// lead-i, adai@example.com, sent at the time returned) and waits until
// every one has failed.
func failingSource(t *testing.T, e *apptest.Env, ten apptest.Tenant, n int) (sources.Source, time.Time) {
	t.Helper()
	good := kinds.SampleConfig(kinds.Generic)
	wrong := []byte(strings.Replace(string(good), `"$.lead.id"`, `"$.lead.uuid"`, 1))
	src, hook := e.SourceHook(ten, sources.CreateInput{Slug: "form", Name: "Landing form", Kind: kinds.Generic, Config: wrong})
	hook.Config = wrong
	sentAt := time.Now()
	for i := range n {
		id := fmt.Sprintf("evt-%d", i)
		body := kinds.SampleBody(kinds.Generic, id, fmt.Sprintf("lead-%d", i), kinds.Lead{Email: fmt.Sprintf("ada%d@example.com", i), Name: fmt.Sprintf("Ada %d", i)}, sentAt)
		if st := hook.PostBody(id, body, time.Now()); st != 200 {
			t.Fatalf("webhook %d: %d", i, st)
		}
	}
	apptest.Eventually(t, 20*time.Second, "deliveries failed", func() bool {
		var failed int
		_ = e.App.DB.Get(&failed, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'failed'`, ten.ID)
		return failed == n
	})
	return src, sentAt
}

// A generic source posting with a natural-key path that is wrong: the
// deliveries fail and are listed with their error and raw body. In the
// mapping editor, typing the right path previews (htmx, no reload) the
// right keys; saving and "Reprocess failed (N)" make one lead each. The
// page at 1280 and 390 px is saved as screenshots.
func TestBrowserMappingEditor(t *testing.T) {
	e := browserApp(t, "browser_mapping", true)
	ten := e.Tenant("acme")
	const n = 3
	src, sentAt := failingSource(t, e, ten, n)

	_, tb := adminTab(t, e, ten)
	tb.open("/sources/" + src.ID)
	if c := tb.count(`[data-testid="failed-delivery"]`); c != n {
		t.Fatalf("%d failed deliveries listed, want %d", c, n)
	}
	// Before the mapping is fixed and saved nothing would map: no button.
	if tb.count(`[data-testid="reprocess-failed"]`) != 0 || !strings.Contains(tb.text(`[data-testid="would-map"]`), "None of the failed deliveries maps") {
		t.Fatalf("before the fix: %q", tb.text(`[data-testid="failed"]`))
	}
	if !strings.Contains(tb.text(`[data-testid="failed-list"]`), "no natural key") {
		t.Fatal("failed list does not say why")
	}

	// Live preview: fix the path by typing; htmx swaps the preview in
	// place (the marker set on the page survives: no reload).
	tb.do(chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`))
	tb.do(
		chromedp.Clear(chromedp.CSS(`input[name=natural_key_path]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=natural_key_path]`), "$.lead.id"),
	)
	deadline := time.Now().Add(10 * time.Second)
	for tb.count(`[data-testid="preview-row"][data-ok="true"]`) != n {
		if time.Now().After(deadline) {
			t.Fatalf("live preview did not show %d mapped rows: %s", n, tb.text(`[data-testid="mapping-preview"]`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v := run(tb, chromedp.Evaluate[int](`window.__noReload || 0`)); v != 1 {
		t.Fatal("the preview reloaded the page")
	}
	keys := tb.text(`[data-testid="preview-table"]`)
	for i := 0; i < n; i++ {
		if !strings.Contains(keys, fmt.Sprintf("lead-%d", i)) || !strings.Contains(keys, fmt.Sprintf("ada%d@example.com", i)) {
			t.Fatalf("preview misses lead-%d: %s", i, keys)
		}
	}
	// The event time path: the preview shows each record's time (the
	// sample's event.created_at), and arrival order before it is set.
	if got := tb.text(`[data-testid="preview-event-time"]`); !strings.Contains(got, "arrival order") {
		t.Fatalf("event time before a path is set: %q", got)
	}
	tb.do(chromedp.SendKeys(chromedp.CSS(`input[name=event_time_path]`), "$.event.created_at"))
	sent := sentAt.UTC().Format("2006-01-02 15:04")
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(tb.liveText(`[data-testid="preview-event-time"]`), sent) {
		if time.Now().After(deadline) {
			t.Fatalf("preview does not show the event time %s: %s", sent, tb.liveText(`[data-testid="mapping-preview"]`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var leads int
	_ = e.App.DB.Get(&leads, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID)
	if leads != 0 {
		t.Fatalf("the preview created %d leads", leads)
	}
	tb.screenshot("mapping-preview")

	// Save, then reprocess.
	tb.submit(`[data-testid="mapping-save"]`)
	if !strings.Contains(tb.text(`main`), "Mapping saved") {
		t.Fatal("no saved notice")
	}
	saved, err := e.App.Sources.Get(context.Background(), ten.ID, src.ID)
	if err != nil || !strings.Contains(string(saved.Config), `"event_time_path":"$.event.created_at"`) ||
		!strings.Contains(string(saved.Config), `"natural_key_path":"$.lead.id"`) {
		t.Fatalf("saved config %s (%v)", saved.Config, err)
	}
	tb.submit(`[data-testid="reprocess-failed"]`)
	apptest.Eventually(t, 20*time.Second, "one lead per delivery", func() bool {
		_ = e.App.DB.Get(&leads, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID)
		return leads == n
	})
	tb.eventually("/sources/"+src.ID, "no failed deliveries", func() bool { return tb.count(`[data-testid="no-failed"]`) == 1 })
	tb.screenshot("mapping-reprocessed")
	tb.phoneFits("/sources/" + src.ID) // the recent deliveries, one card each
}

// Without JavaScript the Preview button posts the form and the page comes
// back with the preview and the form as typed.
func TestBrowserMapNoJS(t *testing.T) {
	e := apptest.New(t, "browser_mapping_nojs", apptest.Options{RedisDB: apptest.RedisUI})
	ten := e.Tenant("acme")
	src, _ := e.Source(ten.ID, sources.CreateInput{Slug: "form", Name: "Form", Kind: kinds.Generic, Config: kinds.SampleConfig(kinds.Generic)})
	b := startBrowser(t)
	tb := newTab(t, b, e.URL, "admin")
	if _, err := chromedp.Call(tb.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	tb.login(ten.Admin.Email, ten.AdminPassword)
	tb.open("/sources/" + src.ID)
	tb.do(chromedp.Clear(chromedp.CSS(`input[name=natural_key_path]`)), chromedp.SendKeys(chromedp.CSS(`input[name=natural_key_path]`), "lead.id"))
	tb.submit(`[data-testid="mapping-preview-button"]`)
	if !strings.Contains(tb.location(), "/mapping/preview") {
		t.Fatalf("preview did not post the form: %s", tb.location())
	}
	if tb.count(`[data-testid="preview-invalid"]`) != 1 || !strings.Contains(tb.text(`[data-testid="field-natural_key_path"]`), "$") {
		t.Fatalf("invalid path not explained: %s", tb.text(`[data-testid="mapping-editor"]`))
	}
}
