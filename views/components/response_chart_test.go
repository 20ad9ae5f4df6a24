package components

import (
	"strings"
	"testing"
	"time"
)

func TestDurationLabels(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0", 45 * time.Second: "45 s", 12 * time.Minute: "12 min",
		time.Hour: "1 h", 90 * time.Minute: "1 h 30", 7*time.Hour + 35*time.Minute: "7 h 35", 26*time.Hour + 20*time.Minute: "26 h",
		72 * time.Hour: "3 d", 60 * time.Hour: "2.5 d"} {
		if got := durLabel(d); got != want {
			t.Errorf("durLabel(%v) = %q, want %q", d, got, want)
		}
	}
}

// A slow day stands out: it is the tallest bar, the only one above the
// target, and the axis reaches above it in round steps; a day without
// responses has no bar; day labels sit under bars, today's included.
func TestDurationChartGeometry(t *testing.T) {
	loc, _ := time.LoadLocation("Europe/Berlin")
	today := time.Date(2026, 12, 4, 0, 0, 0, 0, loc)
	var d DurationChartData
	d.Target, d.What = time.Hour, "first response"
	for i := range 30 {
		day := DayDuration{Day: today.AddDate(0, 0, i-29), Median: time.Duration(20+i%7) * time.Minute, Count: 3}
		switch i {
		case 24:
			day.Median = 7*time.Hour + 35*time.Minute
		case 10:
			day.Count, day.Median = 0, 0
		}
		d.Days = append(d.Days, day)
	}
	g := durationGeometry(d, chartWidth, chartHeight)
	if len(g.Bars) != 30 || !g.Bars[10].Empty || g.Bars[10].BarH != 0 {
		t.Fatalf("bars: %d, empty day %+v", len(g.Bars), g.Bars[10])
	}
	tallest, slow := 0, 0
	for i, b := range g.Bars {
		if b.BarH > g.Bars[tallest].BarH {
			tallest = i
		}
		if b.Slow {
			slow++
		}
	}
	if tallest != 24 || slow != 1 || !g.Bars[24].Slow || g.Bars[24].BarH < 5*g.Bars[23].BarH {
		t.Errorf("tallest %d, slow %d, spike %v vs %v", tallest, slow, g.Bars[24].BarH, g.Bars[23].BarH)
	}
	if top := g.YTicks[len(g.YTicks)-1].RateLabel; top != "8 h" {
		t.Errorf("axis top %q, want 8 h", top)
	}
	if !g.HasTarget || g.TargetLabel != "1 h" || g.TargetY <= g.PlotTop || g.TargetY >= g.PlotBottom {
		t.Errorf("target %v %q %v", g.HasTarget, g.TargetLabel, g.TargetY)
	}
	if n := len(g.XTicks); n < 4 || n > 8 {
		t.Errorf("%d day labels", n)
	}
	last := g.XTicks[len(g.XTicks)-1]
	if last.Label != "Dec 04" || last.X != g.Bars[29].X+g.Bars[29].W/2 {
		t.Errorf("last label %+v, want Dec 04 under the last bar", last)
	}
	if !strings.Contains(g.Summary, "87 first responses") || !strings.Contains(g.Summary, "Nov 29") || !strings.Contains(g.Description, "exceeded on 1 of 30 days") {
		t.Errorf("words: %q / %q", g.Summary, g.Description)
	}

	// Nothing at all: an empty chart, no division by zero.
	for i := range d.Days {
		d.Days[i].Count, d.Days[i].Median = 0, 0
	}
	g = durationGeometry(d, chartWidth, chartHeight)
	if !g.Empty || g.YTicks[len(g.YTicks)-1].RateLabel == "" {
		t.Errorf("empty chart: %+v", g)
	}
}
