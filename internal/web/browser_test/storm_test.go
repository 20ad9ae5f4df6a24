package browser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/monitor/monitortest"
	"leadpipe/internal/sources"
)

// TestBrowserStormChart: a day of steady traffic (2 % duplicates) and a
// retry storm (40 %) in the last ten minutes on one source. The alert
// evaluator fires on that source only, the admin sees the banner, and the
// source's chart shows the storm (screenshot: monitor-storm-*.png).
func TestBrowserStormChart(t *testing.T) {
	e := browserApp(t, "ui_storm", false)
	ctx := context.Background()
	ten := e.Tenant("storm")
	stormy, _ := e.Source(ten.ID, sources.CreateInput{Slug: "landing", Name: "Landing page", Kind: "standard"})
	quiet, _ := e.Source(ten.ID, sources.CreateInput{Slug: "typeform", Name: "Typeform", Kind: "typeform"})
	mon := e.App.Web.Monitor
	now := time.Now().UTC().Truncate(time.Minute)
	stormFrom := now.Add(-10 * time.Minute)
	monitortest.Traffic{TenantID: ten.ID, SourceID: stormy.ID, PerMinute: 12, DupRate: 0.02, Seed: 1}.Add(e.App.Stats, now.Add(-24*time.Hour), stormFrom)
	monitortest.Traffic{TenantID: ten.ID, SourceID: stormy.ID, PerMinute: 40, DupRate: 0.40, Seed: 2}.Add(e.App.Stats, stormFrom, now)
	monitortest.Traffic{TenantID: ten.ID, SourceID: quiet.ID, PerMinute: 6, DupRate: 0.02, Seed: 3}.Add(e.App.Stats, now.Add(-24*time.Hour), now)
	evaluateEachMinute(t, mon, stormFrom, now)
	open, _, err := mon.Alerts(ctx, ten.ID, "open", "", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].SourceID != stormy.ID {
		t.Fatalf("want one open alert on the stormy source, got %+v", open)
	}

	_, admin := adminTab(t, e, ten)
	admin.open("/monitor/sources/" + stormy.ID)
	if admin.count(`[data-testid="alert-banner"]`) != 1 {
		t.Fatal("no open-alert banner for the admin")
	}
	if admin.count(`[data-testid="rate-chart"]`) == 0 || admin.count(`[data-testid="chart-rate-line"]`) == 0 {
		t.Fatal("no rate chart")
	}
	summary := admin.text(`[data-testid="chart-summary"]`)
	if !strings.Contains(summary, "peak") {
		t.Fatalf("chart summary %q", summary)
	}
	admin.screenshot("monitor-storm")
	admin.open("/monitor")
	admin.screenshot("monitor-overview-storm")
	admin.open("/alerts")
	if !strings.Contains(admin.text("main"), "Landing page") {
		t.Fatal("alerts page does not name the stormy source")
	}
	admin.screenshot("alerts-storm")
}
