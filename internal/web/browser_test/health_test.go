package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/monitor"
	"leadpipe/internal/monitor/monitortest"
)

// TestBrowserSourceHealth: a retry storm on one source (a 45 % spike over
// a 5 % baseline) and a source that went quiet. The chart shows the spike
// (its peak labelled) at 390 and 1280 px in the 1 h, 24 h and 7 d views;
// the sources list shows each source's health; the source page starts
// with its open alerts; the alerts page groups the alerts and
// "Acknowledge all" acknowledges every one. Screenshots: health-*.png.
func TestBrowserSourceHealth(t *testing.T) {
	e := browserApp(t, "ui_health", false)
	ctx := context.Background()
	ten := e.Tenant("acme")
	srcs := standardSources(e, ten, "landing", "Landing page", "partner", "Partner feed")
	stormy, quiet := srcs[0], srcs[1]
	mon := e.App.Web.Monitor
	now := time.Now().UTC().Truncate(time.Minute)
	stormFrom := now.Add(-10 * time.Minute)
	monitortest.Traffic{TenantID: ten.ID, SourceID: stormy.ID, PerMinute: 40, DupRate: 0.05, Seed: 1}.Add(e.App.Stats, now.Add(-8*24*time.Hour), stormFrom)
	monitortest.Traffic{TenantID: ten.ID, SourceID: stormy.ID, PerMinute: 80, DupRate: 0.45, Seed: 2}.Add(e.App.Stats, stormFrom, now.Add(time.Minute))
	for k := 1; k <= monitor.SilenceWeeks; k++ { // the partner usually sends at this hour
		wk := now.Add(-time.Duration(k) * 7 * 24 * time.Hour)
		monitortest.Traffic{TenantID: ten.ID, SourceID: quiet.ID, PerMinute: 3, Seed: uint64(10 + k)}.Add(e.App.Stats, wk.Add(-2*time.Hour), wk.Add(time.Hour))
	}
	monitortest.Traffic{TenantID: ten.ID, SourceID: quiet.ID, PerMinute: 3, Seed: 3}.Add(e.App.Stats, now.Add(-3*time.Hour), now.Add(-70*time.Minute))
	evaluateEachMinute(t, mon, stormFrom, now)
	open, _, err := mon.Alerts(ctx, ten.ID, monitor.StateOpen, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{}
	for _, a := range open {
		rules[a.Rule] = a.SourceID
	}
	if rules[monitor.RuleDuplicateSpike] != stormy.ID || rules[monitor.RuleSilence] != quiet.ID {
		t.Fatalf("open alerts %v", rules)
	}

	_, admin := adminTab(t, e, ten)
	for _, rng := range []string{"1h", "24h", "7d"} {
		admin.open("/monitor/sources/" + stormy.ID + "?range=" + rng)
		for _, vp := range widths {
			admin.viewport(vp.w, vp.h, vp.mobile)
			admin.fitsWidth(fmt.Sprintf("%s chart at %d px", rng, vp.w))
			// The peak's label is drawn inside the chart, and the line's
			// highest point is at least half the plot's height.
			got := run(admin, chromedp.Evaluate[float64](`(function(){
				var l=document.querySelector('[data-testid="chart-peak-label"]'), f=document.querySelector('[data-testid="rate-chart"]');
				var p=document.querySelector('[data-testid="chart-peak"]'), s=document.querySelector('svg.chart-svg');
				if(!l||!p) return -1;
				var lr=l.getBoundingClientRect(), fr=f.getBoundingClientRect();
				if(lr.left<fr.left-1||lr.right>fr.right+1) return -2;
				var top=+s.getAttribute('data-plot-top'), bottom=+s.getAttribute('data-plot-bottom');
				return (bottom-(+p.getAttribute('cy')))/(bottom-top);})()`))
			if got < 0.5 {
				t.Errorf("%s at %d px: peak check %v (want ≥ 0.5 of the plot height, its label inside the chart)", rng, vp.w, got)
			}
		}
		admin.screenshot("health-chart-" + rng)
	}

	admin.open("/sources")
	if txt := admin.text(`[data-testid="sources"]`); !strings.Contains(txt, "Duplicate-rate spike") || !strings.Contains(txt, "Source gone quiet") {
		t.Errorf("sources list lacks the health: %q", txt)
	}
	admin.screenshot("health-sources")

	admin.open("/sources/" + stormy.ID)
	if !run(admin, chromedp.Evaluate[bool](`(function(){var a=document.querySelector('[data-testid="source-alerts"]'), d=document.querySelector('[data-testid="delivery-filter"]');
		return !!a && !!d && !!(a.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING);})()`)) {
		t.Error("the source page does not start with its open alerts")
	}
	admin.screenshot("health-source")

	admin.open("/monitor")
	admin.screenshot("health-monitor")

	admin.open("/alerts")
	if !strings.Contains(admin.text(`[data-testid="alerts"]`), "sender is retrying") {
		t.Error("the spike alert does not say the sender is retrying")
	}
	admin.screenshot("health-alerts")
	admin.submit(`[data-testid="ack-all"]`)
	if n := admin.count(`[data-testid="ack"], [data-testid="ack-group"], [data-testid="ack-all"]`); n != 0 {
		t.Errorf("%d acknowledge buttons left after Acknowledge all", n)
	}
}
