package components

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var chartStart = time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)

func points(n int, step time.Duration, f func(i int) (vol, dups int64)) []ChartPoint {
	pts := make([]ChartPoint, n)
	for i := range pts {
		v, d := f(i)
		r := 0.0
		if v > 0 {
			r = float64(d) / float64(v)
		}
		pts[i] = ChartPoint{T: chartStart.Add(time.Duration(i) * step), Volume: v, Duplicates: d, Rate: r}
	}
	return pts
}

func TestRateChartBarsThresholdAndTitles(t *testing.T) {
	pts := points(24, time.Hour, func(i int) (int64, int64) { return 300 + int64(i), int64(i % 5) })
	pts[3] = ChartPoint{T: pts[3].T, Volume: 312, Duplicates: 9, Rate: 9.0 / 312}
	doc, html := render(t, RateChart(ChartData{
		Title: "HubSpot — 24 h", Points: pts, Threshold: 0.05, Step: time.Hour,
		From: chartStart, To: chartStart.Add(24 * time.Hour),
		Highlight: []TimeRange{{From: chartStart.Add(5 * time.Hour), To: chartStart.Add(7 * time.Hour)}},
	}))
	if n := doc.Find(`[data-testid="chart-bucket"]`).Length(); n != 24 {
		t.Fatalf("%d buckets, want 24", n)
	}
	if n := doc.Find(`[data-testid="chart-bar"]`).Length(); n != 0 {
		t.Fatalf("%d bars: the volume is a strip, not bars", n)
	}
	if n := doc.Find(`[data-testid="chart-threshold"]`).Length(); n != 1 {
		t.Fatalf("%d threshold lines", n)
	}
	if !strings.Contains(doc.Find(".chart-threshold-label").Text(), "5%") {
		t.Fatal("threshold line is not labelled")
	}
	if doc.Find(`[data-testid="chart-rate-line"]`).AttrOr("d", "") == "" {
		t.Fatal("no rate line")
	}
	if n := doc.Find(`[data-testid="chart-alert"]`).Length(); n != 1 {
		t.Fatalf("%d alert windows", n)
	}
	titles := doc.Find(".chart-bucket > title")
	if titles.Length() != 24 {
		t.Fatalf("%d bucket titles", titles.Length())
	}
	if got := titles.Eq(3).Text(); got != "17:00–18:00 — 312 deliveries, 9 duplicates (2.9%)" {
		t.Fatalf("bucket title = %q", got)
	}
	if !strings.Contains(titles.Eq(5).Text(), "alert open") {
		t.Fatalf("bucket in alert window not marked: %q", titles.Eq(5).Text())
	}
	svg := doc.Find("svg.chart-svg")
	if svg.AttrOr("role", "") != "group" || !strings.Contains(svg.AttrOr("aria-label", ""), "deliveries") {
		t.Fatalf("svg not labelled: %q", svg.AttrOr("aria-label", ""))
	}
	if !strings.Contains(doc.Find("svg.chart-svg > desc").Text(), "Alert line now 5%") {
		t.Fatalf("desc lacks threshold: %q", doc.Find("desc").Text())
	}
	if doc.Find(`[data-testid="chart-legend"] li`).Length() != 4 {
		t.Fatal("legend should list the line, the volume strip, the alert line and the alert window")
	}
	if !strings.HasSuffix(doc.Find(`[data-testid="chart-rate-tick"]`).Last().Text(), "%") {
		t.Fatal("rate ticks lack units")
	}
	var ticks []string
	for _, n := range doc.Find(`[data-testid="chart-time-tick"]`).Nodes {
		ticks = append(ticks, n.FirstChild.Data)
	}
	if len(ticks) < 4 || ticks[0] != "15:00" {
		t.Fatalf("24 h ticks = %v", ticks)
	}
	if strings.Contains(html, "NaN") || strings.Contains(html, "Inf") {
		t.Fatal("NaN/Inf in output")
	}
}

// The tooltip's data: every bucket is a labelled, keyboard-reachable
// point (one tab stop, the newest), and an empty bucket's rate is "—",
// never "0%".
func TestRateChartTooltipData(t *testing.T) {
	from := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	d := ChartData{Title: "Web", Step: time.Minute, From: from, To: from.Add(3 * time.Minute),
		Points: []ChartPoint{
			{T: from, Volume: 40, Duplicates: 10, Rate: 0.25},
			{T: from.Add(time.Minute), Volume: 0},
			{T: from.Add(2 * time.Minute), Volume: 1200, Duplicates: 12, Rate: 0.01},
		},
		Highlight: []TimeRange{{From: from.Add(2 * time.Minute)}},
	}
	doc, _ := render(t, RateChart(d))
	bs := doc.Find(`[data-testid="chart-bucket"]`)
	if bs.Length() != 3 {
		t.Fatalf("%d buckets", bs.Length())
	}
	want := []struct{ when, del, dup, rate, tab, alert string }{
		{"14:00", "40", "10", "25.0%", "-1", ""},
		{"14:01", "0", "0", "—", "-1", ""},
		{"14:02", "1,200", "12", "1.0%", "0", "open"},
	}
	for i, w := range want {
		b := bs.Eq(i)
		got := []string{b.AttrOr("data-when", ""), b.AttrOr("data-deliveries", ""), b.AttrOr("data-duplicates", ""),
			b.AttrOr("data-rate", ""), b.AttrOr("tabindex", ""), b.AttrOr("data-alert", "")}
		if strings.Join(got, "|") != strings.Join([]string{w.when, w.del, w.dup, w.rate, w.tab, w.alert}, "|") {
			t.Errorf("bucket %d: %v, want %+v", i, got, w)
		}
		if b.AttrOr("aria-label", "") == "" || b.AttrOr("role", "") != "img" {
			t.Errorf("bucket %d is not labelled", i)
		}
	}
	if doc.Find(`[data-testid="chart-tip"]`).Length() != 1 || doc.Find(`[data-testid="chart-crosshair"]`).Length() != 1 {
		t.Fatal("no tooltip or crosshair")
	}
}

func TestRateChartNoThreshold(t *testing.T) {
	pts := points(10, time.Hour, func(i int) (int64, int64) { return 10, 1 })
	doc, _ := render(t, RateChart(ChartData{Title: "x", Points: pts, Step: time.Hour}))
	if doc.Find(`[data-testid="chart-threshold"]`).Length() != 0 {
		t.Fatal("threshold line drawn without a threshold")
	}
	if doc.Find(`[data-testid="chart-bucket"]`).Length() != 10 {
		t.Fatal("buckets")
	}
}

func TestRateChartEmpty(t *testing.T) {
	doc, _ := render(t, RateChart(ChartData{Title: "New source", From: chartStart, To: chartStart.Add(24 * time.Hour)}))
	e := doc.Find(`[data-testid="chart-empty"]`)
	if e.Length() != 1 || !strings.Contains(e.Text(), "No deliveries in this period") {
		t.Fatalf("empty message missing: %q", e.Text())
	}
	if doc.Find("svg").Length() != 0 {
		t.Fatal("empty chart should not draw axes")
	}
}

func TestRateChartAllZeroVolume(t *testing.T) {
	pts := points(24, time.Hour, func(int) (int64, int64) { return 0, 0 })
	doc, html := render(t, RateChart(ChartData{Title: "Quiet", Points: pts, Threshold: 0.05, Step: time.Hour}))
	if !strings.Contains(doc.Find(`[data-testid="chart-empty"]`).Text(), "No deliveries in this period") {
		t.Fatal("no-volume message missing")
	}
	if doc.Find(`[data-testid="chart-rate-line"]`).Length() != 0 {
		t.Fatal("a rate line without deliveries")
	}
	if strings.Contains(html, "NaN") || strings.Contains(html, "Inf") {
		t.Fatal("NaN/Inf in output")
	}
}

func TestRateChartManyPoints(t *testing.T) {
	// 30 days of 5-minute buckets.
	pts := points(8640, 5*time.Minute, func(i int) (int64, int64) { return int64(20 + i%7), int64(i % 3) })
	start := time.Now()
	doc, html := render(t, RateChart(ChartData{Title: "30 d", Points: pts, Threshold: 0.1, Step: 5 * time.Minute}))
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("rendering took %v", el)
	}
	n := doc.Find(`[data-testid="chart-bucket"]`).Length()
	if n == 0 || n > maxChartBuckets {
		t.Fatalf("%d buckets, want 1..%d", n, maxChartBuckets)
	}
	if len(html) > 400_000 {
		t.Fatalf("chart is %d bytes", len(html))
	}
	var ticks []string
	for _, n := range doc.Find(`[data-testid="chart-time-tick"]`).Nodes {
		ticks = append(ticks, n.FirstChild.Data)
	}
	if len(ticks) == 0 || len(ticks) > 9 || !strings.HasPrefix(ticks[0], "Mar ") && !strings.HasPrefix(ticks[0], "Apr ") {
		t.Fatalf("30 d ticks = %v", ticks)
	}
	// Merged buckets keep totals and say which span they cover.
	if !strings.Contains(doc.Find(".chart-bucket > title").First().Text(), "–") {
		t.Fatalf("merged bucket title lacks a range: %q", doc.Find(".chart-bucket > title").First().Text())
	}
	g := chartGeometry(ChartData{Points: pts, Step: 5 * time.Minute}, chartWidth, chartHeight)
	var vol int64
	for _, p := range pts {
		vol += p.Volume
	}
	if g.TotalVolume != vol {
		t.Fatalf("merged volume %d, want %d", g.TotalVolume, vol)
	}
}

func TestTimeTickFormats(t *testing.T) {
	cases := []struct {
		span   time.Duration
		layout string
	}{
		{24 * time.Hour, "15:04"},
		{7 * 24 * time.Hour, "Mon 02"},
		{30 * 24 * time.Hour, "Jan 02"},
		{90 * time.Minute, "15:04"},
	}
	for _, c := range cases {
		t.Run(c.span.String(), func(t *testing.T) {
			ticks := timeTicks(chartStart, chartStart.Add(c.span), time.UTC, chartWidth)
			if len(ticks) < 3 || len(ticks) > 9 {
				t.Fatalf("%d ticks: %+v", len(ticks), ticks)
			}
			for i, tk := range ticks {
				if _, err := time.Parse(c.layout, tk.Label); err != nil {
					t.Errorf("tick %q does not match layout %q", tk.Label, c.layout)
				}
				if tk.X < 0 || tk.X > chartWidth {
					t.Errorf("tick %d outside the plot: %v", i, tk.X)
				}
				if i > 0 && tk.X <= ticks[i-1].X {
					t.Errorf("ticks not increasing")
				}
			}
		})
	}
	// Daylight-saving days still advance.
	loc, err := time.LoadLocation("Europe/Berlin")
	if err == nil {
		from := time.Date(2026, 3, 29, 0, 0, 0, 0, loc)
		if ticks := timeTicks(from, from.Add(24*time.Hour), loc, chartWidth); len(ticks) < 4 {
			t.Fatalf("DST day ticks: %+v", ticks)
		}
	}
}

func TestChartGeometry(t *testing.T) {
	pts := points(12, time.Hour, func(i int) (int64, int64) { return 100, 2 })
	// a bucket with no deliveries is a rate of 0: the line goes on through it
	pts[5].Volume, pts[5].Duplicates, pts[5].Rate = 0, 0, 0
	pts[10].Volume, pts[10].Duplicates, pts[10].Rate = 0, 0, 0
	g := chartGeometry(ChartData{Points: pts, Step: time.Hour, Threshold: 0.3}, 1000, chartHeight)
	if got := strings.Count(g.LinePath, "M"); got != 1 {
		t.Fatalf("line has %d segments, want one continuous line: %s", got, g.LinePath)
	}
	if len(g.Buckets) != 12 {
		t.Fatalf("%d buckets", len(g.Buckets))
	}
	if g.RateMax < 0.3 || g.RateMax > 0.4 {
		t.Fatalf("rate axis %v: want a little above the alert line 0.3", g.RateMax)
	}
	if g.ThresholdY < g.PlotTop || g.ThresholdY > g.PlotBottom {
		t.Fatalf("threshold y %v outside plot", g.ThresholdY)
	}
	for i, b := range g.Buckets {
		if b.X < 0 || b.X+b.W > 1000.01 {
			t.Fatalf("bucket %d outside width: %+v", i, b)
		}
	}
	if g.Buckets[5].Rate != 0 || g.Buckets[5].RateText != "—" {
		t.Fatalf("empty bucket %+v", g.Buckets[5])
	}
	if g.VolumeMax != 100 || g.StripTop <= g.PlotBottom {
		t.Fatalf("volume strip max %d at %v below a plot ending at %v", g.VolumeMax, g.StripTop, g.PlotBottom)
	}

	t.Run("inferred step and period", func(t *testing.T) {
		g := chartGeometry(ChartData{Points: points(3, 15*time.Minute, func(int) (int64, int64) { return 1, 0 })}, 1000, 256)
		if w := g.Buckets[0].W; math.Abs(w-1000.0/3) > 0.01 {
			t.Fatalf("bucket width %v", w)
		}
	})
	t.Run("unsorted and hostile input", func(t *testing.T) {
		pts := []ChartPoint{
			{T: chartStart.Add(2 * time.Hour), Volume: 5, Rate: math.NaN()},
			{T: chartStart, Volume: -3, Duplicates: 9, Rate: math.Inf(1)},
			{T: chartStart.Add(time.Hour), Volume: 4, Duplicates: 8, Rate: 2},
			{}, // zero time is ignored
		}
		g := chartGeometry(ChartData{Points: pts}, 1000, 256)
		if len(g.Buckets) != 3 || g.Buckets[0].start != chartStart {
			t.Fatalf("buckets %+v", g.Buckets)
		}
		for _, b := range g.Buckets {
			if b.Rate < 0 || b.Rate > 1 || math.IsNaN(b.Rate) {
				t.Fatalf("bad bucket %+v", b)
			}
		}
		if strings.Contains(g.LinePath, "NaN") {
			t.Fatal("NaN in path")
		}
	})
	t.Run("points outside the period are dropped", func(t *testing.T) {
		pts := points(48, time.Hour, func(int) (int64, int64) { return 1, 0 })
		g := chartGeometry(ChartData{Points: pts, Step: time.Hour, From: chartStart.Add(24 * time.Hour), To: chartStart.Add(48 * time.Hour)}, 1000, 256)
		if len(g.Buckets) != 24 {
			t.Fatalf("%d buckets, want 24", len(g.Buckets))
		}
	})
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct {
		in      float64
		integer bool
		want    float64
	}{
		{0.034, false, 0.05}, {0.02, false, 0.02}, {0.021, false, 0.025}, {0.0026, false, 0.005},
		{78, true, 100}, {21, true, 50}, {2.1, true, 5}, {0.3, true, 1}, {0, true, 1}, {math.NaN(), false, 1},
	} {
		if got := niceCeil(c.in, c.integer); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("niceCeil(%v, %v) = %v, want %v", c.in, c.integer, got, c.want)
		}
	}
}

func TestSparkline(t *testing.T) {
	doc, _ := render(t, Sparkline([]float64{0.01, 0.02, 0.08, 0.03}, "Duplicate rate of HubSpot"))
	svg := doc.Find(`svg[data-testid="sparkline"]`)
	if svg.AttrOr("aria-label", "") != "Duplicate rate of HubSpot" || svg.AttrOr("role", "") != "img" {
		t.Fatal("sparkline not labelled")
	}
	d := svg.Find(".sparkline-line").AttrOr("d", "")
	if strings.Count(d, "L") != 3 {
		t.Fatalf("path %q", d)
	}
	doc, _ = render(t, Sparkline(nil, "nothing"))
	if doc.Find(`[data-testid="sparkline-empty"]`).Length() != 1 || doc.Find("svg").Length() != 0 {
		t.Fatal("empty sparkline")
	}
	for _, vals := range [][]float64{{0, 0, 0}, {0.5}, {math.NaN(), math.Inf(1), -1}} {
		g := sparklineGeometry(vals, sparkW, sparkH, 0)
		if strings.Contains(g.Line+g.Area, "NaN") || strings.Contains(g.Line, "Inf") || g.Line == "" {
			t.Fatalf("%v → %q", vals, g.Line)
		}
	}
	long := make([]float64, 2000)
	long[1234] = 1
	g := sparklineGeometry(long, sparkW, sparkH, 0)
	if n := strings.Count(g.Line, "L"); n >= sparkMax {
		t.Fatalf("%d segments for 2000 values", n)
	}
	if !strings.Contains(g.Line, " "+strconv.Itoa(sparkPad)+"L") {
		t.Fatalf("spike lost in downsampling: %s", g.Line)
	}
}

func TestSightingsText(t *testing.T) {
	for _, c := range []struct {
		d, r int64
		want string
	}{
		{3, 9, "Received 12× · 3 deliveries, 9 repeats"},
		{1, 0, "Received once · 1 delivery"},
		{1, 1, "Received 2× · 1 delivery, 1 repeat"},
		{1200, 0, "Received 1,200× · 1,200 deliveries"},
	} {
		if got := SightingsText(c.d, c.r); got != c.want {
			t.Errorf("SightingsText(%d, %d) = %q, want %q", c.d, c.r, got, c.want)
		}
	}
}

// A source whose deliveries start late in the period (a new source's first
// burst): the chart zooms to the deliveries, so the spike is not a sliver
// at the right edge of an empty hour, and says so.
func TestRateChartZoomsToTheData(t *testing.T) {
	pts := points(60, time.Minute, func(i int) (int64, int64) {
		if i < 55 {
			return 0, 0
		}
		return 60, 48 // 80 % duplicates in the last five minutes
	})
	g := chartGeometry(ChartData{Points: pts, Step: time.Minute, From: chartStart, To: chartStart.Add(time.Hour)}, chartWidth, chartHeight)
	if !g.Zoomed || len(g.Buckets) > 20 || len(g.Buckets) < 12 {
		t.Fatalf("zoomed %v to %d buckets", g.Zoomed, len(g.Buckets))
	}
	spikeX := g.Buckets[len(g.Buckets)-5].X
	if spikeX > 0.75*g.W {
		t.Fatalf("the spike starts at %.0f of %.0f: still squeezed at the right edge", spikeX, g.W)
	}
	if !strings.Contains(g.Summary, "zoomed") {
		t.Fatalf("summary %q does not say it zoomed", g.Summary)
	}
	if g.Peak == nil || g.Peak.Label != "80.0% at 14:55" {
		t.Fatalf("peak %+v", g.Peak)
	}
	if h := (g.PlotBottom - g.Peak.Y) / (g.PlotBottom - g.PlotTop); h < 0.85 {
		t.Fatalf("peak at %.2f of the plot height", h)
	}
	// NoZoom (an alert's window) keeps the period.
	if g := chartGeometry(ChartData{Points: pts, Step: time.Minute, From: chartStart, To: chartStart.Add(time.Hour), NoZoom: true}, chartWidth, chartHeight); g.Zoomed || len(g.Buckets) != 60 {
		t.Fatalf("NoZoom: zoomed %v, %d buckets", g.Zoomed, len(g.Buckets))
	}
}

// The alert line and the usual rate are drawn as they moved: a path with a
// level per bucket, not one flat line; merged buckets keep their highest
// rate, so 8,640 five-minute buckets with one 45 % bucket still peak at 45 %.
func TestRateChartMovingThresholdAndMaxMerge(t *testing.T) {
	pts := points(24, time.Hour, func(i int) (int64, int64) { return 100, 5 })
	for i := range pts {
		pts[i].Baseline, pts[i].HasBaseline = 0.02+0.001*float64(i), true
		pts[i].Threshold = pts[i].Baseline + 0.10
	}
	g := chartGeometry(ChartData{Points: pts, Step: time.Hour}, chartWidth, chartHeight)
	ys := map[string]bool{}
	for _, m := range regexp.MustCompile(`[ML][-\d.]+ ([-\d.]+)H`).FindAllStringSubmatch(g.ThresholdPath, -1) {
		ys[m[1]] = true
	}
	if len(ys) < 10 {
		t.Fatalf("the alert line has %d levels, want it to move with the baseline: %s", len(ys), g.ThresholdPath)
	}
	if g.BaselinePath == "" || g.ThresholdLabel != "14.3%" {
		t.Fatalf("baseline %q, threshold label %q", g.BaselinePath, g.ThresholdLabel)
	}

	month := points(8640, 5*time.Minute, func(i int) (int64, int64) {
		if i == 4000 {
			return 100, 45
		}
		return 100, 5
	})
	g = chartGeometry(ChartData{Points: month, Step: 5 * time.Minute}, chartWidth, chartHeight)
	if g.Peak == nil || !strings.HasPrefix(g.Peak.Label, "45.0%") {
		t.Fatalf("merged peak %+v", g.Peak)
	}
}
