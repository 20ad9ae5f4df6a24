package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestBrowserMonitorCountsAgree: the source's monitoring page sums up
// its "Deliveries sent again" table with the table's own rows: as many
// deliveries as it lists, as many repeats as its rows add up to, the
// repeat of a delivery received three days earlier included; and with
// real traffic the duplicates stat above counts the same repeats.
func TestBrowserMonitorCountsAgree(t *testing.T) {
	e := browserApp(t, "ui_moncount", false)
	ctx := context.Background()
	acme := e.Tenant("acme")
	src, hook := e.SourceHook(acme, sources.CreateInput{Slug: "landing", Name: "Landing page", Kind: "standard"})
	post := func(id string) {
		t.Helper()
		if st := hook.Post(id, "ref-"+id, kinds.Lead{Name: "Lead " + id, Email: id + "@example.test"}); st != 200 {
			t.Fatalf("webhook %s: %d", id, st)
		}
	}
	t.Log("a delivery from three days ago, re-sent now")
	post("evt-old")
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE deliveries SET received_at = received_at - INTERVAL 3 DAY WHERE tenant_id = ? AND delivery_id = 'evt-old'`, acme.ID); err != nil {
		t.Fatal(err)
	}
	post("evt-old")
	t.Log("four recent deliveries, three of them re-sent 2, 1 and 3 times")
	for _, id := range []string{"evt-a", "evt-b", "evt-c", "evt-d"} {
		post(id)
	}
	for id, n := range map[string]int{"evt-a": 2, "evt-b": 1, "evt-c": 3} {
		for range n {
			post(id)
		}
	}
	// Repeats answered from memory are logged at the next flush and
	// folded onto their deliveries by the worker; this test runs none, so
	// it flushes and folds itself.
	apptest.Eventually(t, 10*time.Second, "the repeats counted on their deliveries", func() bool {
		var n int
		if err := e.App.Ingest.Claimer.FlushDuplicates(ctx); err != nil {
			t.Fatal(err)
		}
		return e.App.DB.Get(&n, `SELECT COALESCE(SUM(dup_count), 0) FROM deliveries WHERE tenant_id = ? AND source_id = ?`, acme.ID, src.ID) == nil && n == 7
	})
	if err := e.App.Web.Monitor.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	_, admin := adminTab(t, e, acme)
	page := "/monitor/sources/" + src.ID + "?range=1h"
	admin.open(page)
	note := admin.text(`[data-testid="window-count-note"]`)
	rows := admin.count(`[data-testid="window-duplicate"]`)
	sum := run(admin, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="window-duplicate"]')].reduce((n, r) => n + Number(r.dataset.repeats), 0)`))
	if want := fmt.Sprintf("%d deliveries arrived again: %d repeats.", rows, sum); note != want {
		t.Errorf("the summary says %q, the table lists %d deliveries with %d repeats", note, rows, sum)
	}
	if rows != 4 || sum != 7 {
		t.Errorf("the table lists %d deliveries with %d repeats, want 4 with 7 (the three-day-old one included)", rows, sum)
	}
	if !strings.Contains(admin.text(`[data-testid="window-duplicates"]`), "evt-old") {
		t.Error("the repeat of the three-day-old delivery is not listed")
	}
	stats := admin.text(`.stats`)
	if !strings.Contains(stats, "7 duplicates") {
		t.Errorf("the duplicates stat does not count the table's 7 repeats: %q", stats)
	}
	for _, vp := range widths {
		admin.pageFits(page, vp.w, vp.h, vp.mobile)
	}
	admin.open(page)
	admin.screenshot("monitor-counts")
}
