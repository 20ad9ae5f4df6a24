package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/leads"
)

// TestBrowserSourcesReport: the "Sources and campaigns" report by source
// and by campaign at 390 and 1280 px. Nothing sticks out sideways, the
// grouping toggle and the period's buttons stay on one line on a phone,
// every row has its chart, the campaign rows name their source, and the
// admin's nav shows all its tabs at 1280 px.
// Screenshots: report-*.png (and report-monitor-*.png for the nav).
func TestBrowserSourcesReport(t *testing.T) {
	e := browserApp(t, "ui_report", false)
	ctx := context.Background()
	ten := e.Tenant("acme")
	srcs := standardSources(e, ten, "web", "Website contact form", "meta", "Facebook Lead Ads", "partner", "Partner feed")
	campaigns := []string{"spring-sale-2026", "retargeting-november", "", "webinar-follow-up"}
	statuses := []string{"new", "contacted", "qualified", "won", "lost", "won"}
	now := time.Now().UTC().Truncate(time.Second)
	for i := range 240 {
		src := srcs[i%len(srcs)]
		ref := fmt.Sprintf("r%d", i)
		id, _, err := leads.UpsertFromSender(ctx, e.App.DB, ten.ID, src.ID, leads.SenderRecord{SourceRef: ref, Name: fmt.Sprintf("Lead %d", i),
			Email: fmt.Sprintf("l%d@example.com", i), Payload: []byte(`{"id":"` + ref + `"}`)}, now)
		if err != nil {
			t.Fatal(err)
		}
		created := now.Add(-time.Duration((i*7919)%(28*24*60)) * time.Minute)
		var attr any
		if c := campaigns[(i/3)%len(campaigns)]; c != "" {
			attr = `{"first":{"utm_source":"newsletter","utm_campaign":"` + c + `"}}`
		}
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET created_at = ?, status = ?, assigned_at = ?, first_responded_at = ?, attribution = ? WHERE tenant_id = ? AND id = ?`,
			created, statuses[i%len(statuses)], created.Add(time.Minute), created.Add(time.Duration(5+i%90)*time.Minute), attr, ten.ID, id); err != nil {
			t.Fatal(err)
		}
	}

	_, admin := adminTab(t, e, ten)
	oneLine := func(sel, what string) {
		t.Helper()
		// Every item of sel sits on the first item's line.
		n := run(admin, chromedp.Evaluate[int](fmt.Sprintf(`(function(){var xs=[...document.querySelectorAll(%q)]; if(!xs.length) return -1;
			var top=xs[0].getBoundingClientRect().top; return xs.filter(function(x){return Math.abs(x.getBoundingClientRect().top-top)>2}).length;})()`, sel)))
		if n != 0 {
			t.Errorf("%s: %d items off the first line (or none found: -1)", what, n)
		}
	}
	for _, by := range []string{"source", "campaign"} {
		if st := admin.open("/reports/sources?by=" + by); st != 200 {
			t.Fatalf("by=%s: %d", by, st)
		}
		want := len(srcs)
		if by == "campaign" {
			want = len(srcs) * len(campaigns)
		}
		if n := admin.count(`[data-testid="report-row"]`); n != want {
			t.Errorf("by=%s: %d rows, want %d", by, n, want)
		}
		if n := admin.count(`[data-testid="report-daily"] svg`); n != want {
			t.Errorf("by=%s: %d charts, want %d", by, n, want)
		}
		for _, vp := range widths {
			admin.viewport(vp.w, vp.h, vp.mobile)
			at := fmt.Sprintf("by=%s at %d px", by, vp.w)
			admin.fitsWidth(at)
			oneLine(`[data-testid^="report-by-"]`, "grouping toggle "+at)
			oneLine(`[data-testid="report-period"] input[type=date]`, "the period's days "+at)
			if !vp.mobile {
				// Every tab of the admin's nav is in sight, none scrolled away.
				if o := run(admin, chromedp.Evaluate[float64](`(function(){var l=document.querySelector('.nav-list'); return l.scrollWidth-l.clientWidth;})()`)); o > 0 {
					t.Errorf("the nav overflows by %v px %s", o, at)
				}
			}
		}
		admin.screenshot("report-" + by)
	}
	if !strings.Contains(admin.text(`[data-testid="report-rows"]`), "Facebook Lead Ads") {
		t.Error("campaign rows do not name their source")
	}
	// The toggle leads back to the grouping by source, keeping the period.
	admin.open("/reports/sources?by=campaign&from=" + now.AddDate(0, 0, -13).Format("2006-01-02") + "&to=" + now.Format("2006-01-02"))
	admin.submit(`[data-testid="report-by-source"]`)
	if loc := admin.location(); !strings.Contains(loc, "by=source") || !strings.Contains(loc, "from="+now.AddDate(0, 0, -13).Format("2006-01-02")) {
		t.Errorf("toggle led to %s", loc)
	}
	for _, path := range []string{"/monitor", "/monitor/sources/" + srcs[0].ID} {
		admin.open(path)
		for _, vp := range widths {
			admin.viewport(vp.w, vp.h, vp.mobile)
			admin.fitsWidth(fmt.Sprintf("%s at %d px", path, vp.w))
		}
	}
	admin.open("/monitor")
	admin.screenshot("report-monitor")
}
