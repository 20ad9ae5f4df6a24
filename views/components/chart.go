package components

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ChartPoint is one time bucket of a source's delivery counters.
type ChartPoint struct {
	T          time.Time // bucket start
	Rate       float64   // 0..1 duplicate rate
	Volume     int64     // deliveries
	Duplicates int64
}

// TimeRange is a shaded window on a chart, typically an alert that was open.
type TimeRange struct {
	From, To time.Time
	Label    string // optional, e.g. "Duplicate-rate spike"; defaults to "Alert open"
}

// ChartData is everything RateChart draws. Points should be sorted by T and
// pre-aggregated by the caller to a sensible number of buckets; more than
// maxChartBuckets are merged here so the page never explodes.
type ChartData struct {
	Title     string
	Points    []ChartPoint
	Threshold float64       // alert threshold rate, 0 = none
	Step      time.Duration // bucket width; inferred from Points when 0
	From, To  time.Time     // visible period; inferred from Points when zero
	Highlight []TimeRange   // alert windows, shaded
}

const (
	chartWidth      = 1000 // virtual x units; rendered as percentages so text never scales
	chartHeight     = 256  // px; y coordinates are real pixels
	chartPlotTop    = 14   // the alert band sits just above the plot; axis titles are HTML above it
	chartPlotBottom = chartHeight - 30
	maxChartBuckets = 360
	minBarPx        = 3 // the least height of a bar with deliveries
	chartGridLines  = 4 // intervals on both y axes, so they share grid lines
)

type chartBucket struct {
	X, W       float64 // slot position and width, virtual units
	BarX, BarW float64 // bar inside the slot
	BarY, BarH float64 // px
	Volume     int64
	Duplicates int64
	Rate       float64
	Title      string // hover text
	When       string // the bucket's time, for the tooltip
	RateText   string // "4.1%", or "—" when the bucket has no deliveries
	Alert      bool   // an alert was open during the bucket
	start, end time.Time
	hasRate    bool
}

type chartYTick struct {
	Y           float64
	RateLabel   string // "" where the threshold's own label takes the place
	VolumeLabel string
}

type chartXTick struct {
	X      float64
	Label  string
	Anchor string // start | middle | end
	Minor  bool   // hidden on narrow screens
}

type chartRect struct {
	X, W  float64
	Title string
}

// chartGeom is the computed drawing of a RateChart: x in virtual units
// (0..W), y in pixels (0..H).
type chartGeom struct {
	W, H                float64
	PlotTop, PlotBottom float64
	Empty               bool // no points at all
	NoVolume            bool // points, but every bucket has zero deliveries
	Buckets             []chartBucket
	LinePath            string
	YTicks              []chartYTick
	XTicks              []chartXTick
	Highlights          []chartRect
	HasThreshold        bool
	ThresholdY          float64
	ThresholdLabel      string // "10%", drawn in the rate gutter
	RateMax             float64
	VolumeMax           int64
	Summary             string // one line shown above the chart
	Description         string // full sentence for assistive technology
	Period              string
	TotalVolume         int64
	TotalDuplicates     int64
}

// chartGeometry computes every coordinate of a RateChart of w virtual units
// by h pixels. It is a plain function so it can be tested without HTML.
func chartGeometry(d ChartData, w, h int) chartGeom {
	g := chartGeom{
		W: float64(w), H: float64(h),
		PlotTop:    chartPlotTop,
		PlotBottom: float64(h) - (chartHeight - chartPlotBottom),
	}
	if g.PlotBottom <= g.PlotTop+10 {
		g.PlotBottom = g.PlotTop + 10
	}
	plotH := g.PlotBottom - g.PlotTop

	pts := make([]ChartPoint, 0, len(d.Points))
	for _, p := range d.Points {
		if !p.T.IsZero() {
			pts = append(pts, p)
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })

	step := d.Step
	if step <= 0 {
		step = inferStep(pts, d.From, d.To)
	}
	from, to := d.From, d.To
	if from.IsZero() && len(pts) > 0 {
		from = pts[0].T
	}
	if to.IsZero() && len(pts) > 0 {
		to = pts[len(pts)-1].T.Add(step)
	}
	if !to.After(from) {
		to = from.Add(step)
	}
	loc := from.Location()
	span := to.Sub(from)
	for i := range pts {
		pts[i].T = pts[i].T.In(loc)
	}
	g.Period = formatPeriod(from, to)

	if len(pts) == 0 {
		g.Empty = true
		g.Summary = "No deliveries"
		g.Description = "No deliveries between " + g.Period + "."
		return g
	}

	// Merge neighbouring buckets when there are too many to draw.
	buckets, bstep := mergeBuckets(pts, step)
	merged := bstep != step

	xOf := func(t time.Time) float64 {
		return clamp(float64(t.Sub(from))/float64(span), 0, 1) * g.W
	}

	var maxVol int64
	maxRate := 0.0
	for _, b := range buckets {
		g.TotalVolume += b.Volume
		g.TotalDuplicates += b.Duplicates
		if b.Volume > maxVol {
			maxVol = b.Volume
		}
		if b.Volume > 0 && b.Rate > maxRate {
			maxRate = b.Rate
		}
	}
	g.NoVolume = g.TotalVolume == 0

	rateTop := maxRate
	if d.Threshold > 0 {
		rateTop = math.Max(rateTop, d.Threshold*1.25)
	}
	g.RateMax = niceCeil(math.Max(rateTop, 0.01)/chartGridLines, false) * chartGridLines
	if g.RateMax > 1 {
		g.RateMax = 1
	}
	if maxVol == 0 {
		g.VolumeMax = chartGridLines
	} else {
		g.VolumeMax = int64(niceCeil(float64(maxVol)/chartGridLines, true)) * chartGridLines
	}
	for i := 0; i <= chartGridLines; i++ {
		f := float64(i) / chartGridLines
		t := chartYTick{Y: g.PlotBottom - f*plotH}
		if i == 0 || !g.NoVolume { // with nothing to measure only the baseline is labelled
			t.RateLabel = formatPercent(f * g.RateMax)
			t.VolumeLabel = formatCompact(int64(math.Round(f * float64(g.VolumeMax))))
		}
		g.YTicks = append(g.YTicks, t)
	}

	// Alert windows.
	for _, r := range d.Highlight {
		r.From, r.To = r.From.In(loc), r.To.In(loc)
		if r.To.IsZero() || !r.To.After(r.From) {
			r.To = to // still open
		}
		if !r.To.After(from) || !r.From.Before(to) {
			continue
		}
		x0, x1 := xOf(r.From), xOf(r.To)
		label := r.Label
		if label == "" {
			label = "Alert open"
		}
		g.Highlights = append(g.Highlights, chartRect{
			X: x0, W: math.Max(x1-x0, 1),
			Title: label + " " + formatBucketTime(r.From, span, step) + "–" + formatBucketTime(r.To, span, step),
		})
	}

	// Bars and hover titles.
	slotW := float64(bstep) / float64(span) * g.W
	// The UI asks for at most about 60 buckets (web.chartStep) so that a bar
	// stays at least minBarPx wide on a 390 px phone; callers that pass
	// more get thinner gaps first.
	fill := 0.8
	switch n := len(buckets); {
	case n > 200:
		fill = 1
	case n > 60:
		fill = 0.9
	}
	for i := range buckets {
		b := &buckets[i]
		if !b.end.After(from) || !b.start.Before(to) {
			continue
		}
		x0, x1 := xOf(b.start), xOf(b.end)
		b.X, b.W = x0, x1-x0
		bw := math.Min(slotW, b.W) * fill
		b.BarX = x0 + (b.W-bw)/2
		b.BarW = bw
		b.BarH = float64(b.Volume) / float64(g.VolumeMax) * plotH
		if b.Volume > 0 && b.BarH < minBarPx {
			b.BarH = minBarPx // a bucket with deliveries is always visible
		}
		b.BarY = g.PlotBottom - b.BarH
		when := formatBucketTime(b.start, span, step)
		if merged {
			end := formatBucketTime(b.end, span, step)
			if y1, m1, d1 := b.start.Date(); span > 26*time.Hour && step < 24*time.Hour {
				if y2, m2, d2 := b.end.Date(); y1 == y2 && m1 == m2 && d1 == d2 {
					end = b.end.Format("15:04")
				}
			}
			when += "–" + end
		}
		b.When = when
		b.RateText = "—"
		if b.Volume > 0 {
			b.RateText = formatPercent1(b.Rate)
		}
		b.Title = when + " — " + bucketText(b.Volume, b.Duplicates, b.Rate)
		if d.Threshold > 0 && b.Volume > 0 && b.Rate >= d.Threshold {
			b.Title += " · above threshold"
		}
		for _, r := range d.Highlight {
			end := r.To
			if end.IsZero() || !end.After(r.From) {
				end = to
			}
			if b.start.Before(end) && b.end.After(r.From) {
				b.Title += " · alert open"
				b.Alert = true
				break
			}
		}
		g.Buckets = append(g.Buckets, *b)
	}

	// Rate line: connect neighbouring buckets that have deliveries; a bucket
	// without deliveries has no rate, so the line breaks there.
	var sb strings.Builder
	rateY := func(r float64) float64 { return g.PlotBottom - clamp(r/g.RateMax, 0, 1)*plotH }
	for i, b := range g.Buckets {
		if !b.hasRate {
			continue
		}
		cx, y := b.X+b.W/2, rateY(b.Rate)
		prevOK := i > 0 && g.Buckets[i-1].hasRate && !g.Buckets[i-1].end.Before(b.start)
		nextOK := i+1 < len(g.Buckets) && g.Buckets[i+1].hasRate && !b.end.Before(g.Buckets[i+1].start)
		switch {
		case prevOK:
			fmt.Fprintf(&sb, "L%s %s", num(cx), num(y))
		case nextOK:
			fmt.Fprintf(&sb, "M%s %s", num(cx), num(y))
		default: // isolated bucket: a short level segment across its slot
			fmt.Fprintf(&sb, "M%s %sL%s %s", num(b.BarX), num(y), num(b.BarX+math.Max(b.BarW, 2)), num(y))
		}
	}
	g.LinePath = sb.String()

	if d.Threshold > 0 {
		g.HasThreshold = true
		g.ThresholdY = rateY(d.Threshold)
		g.ThresholdLabel = formatPercent(d.Threshold)
		// The threshold is labelled on the rate axis, in its colour; a grid
		// label it would overlap gives way.
		for i := range g.YTicks {
			if math.Abs(g.YTicks[i].Y-g.ThresholdY) < 13 {
				g.YTicks[i].RateLabel = ""
			}
		}
	}

	g.XTicks = timeTicks(from, to, loc, g.W)

	// Words.
	overall := 0.0
	if g.TotalVolume > 0 {
		overall = float64(g.TotalDuplicates) / float64(g.TotalVolume)
	}
	if g.NoVolume {
		g.Summary = "No deliveries"
		g.Description = "No deliveries between " + g.Period + "."
	} else {
		peak := chartBucket{}
		above := 0
		for _, b := range g.Buckets {
			if b.hasRate && (b.Rate > peak.Rate || peak.start.IsZero()) {
				peak = b
			}
			if d.Threshold > 0 && b.hasRate && b.Rate >= d.Threshold {
				above++
			}
		}
		vol, dups := countOf(g.TotalVolume, "delivery", "deliveries"), countOf(g.TotalDuplicates, "duplicate", "duplicates")
		g.Summary = fmt.Sprintf("%s · %s · %s overall · peak %s", vol, dups, formatPercent1(overall), formatPercent1(peak.Rate))
		g.Description = fmt.Sprintf("Duplicate rate and delivery volume, %s: %s, %s (%s overall); highest rate %s at %s.",
			g.Period, vol, dups, formatPercent1(overall),
			formatPercent1(peak.Rate), formatBucketTime(peak.start, span, step))
		if d.Threshold > 0 {
			g.Description += fmt.Sprintf(" Alert threshold %s, reached in %d of %d buckets.",
				formatPercent(d.Threshold), above, len(g.Buckets))
		}
		if n := len(g.Highlights); n > 0 {
			g.Description += " " + countOf(int64(n), "alert window", "alert windows") + " shaded."
		}
	}
	return g
}

// inferStep guesses the bucket width: the smallest gap between points, or
// the whole period for a single point.
func inferStep(pts []ChartPoint, from, to time.Time) time.Duration {
	var best time.Duration
	for i := 1; i < len(pts); i++ {
		if dt := pts[i].T.Sub(pts[i-1].T); dt > 0 && (best == 0 || dt < best) {
			best = dt
		}
	}
	if best > 0 {
		return best
	}
	if !from.IsZero() && to.After(from) {
		if len(pts) > 0 {
			return to.Sub(from) / time.Duration(max(len(pts), 24))
		}
		return to.Sub(from)
	}
	return time.Hour
}

// mergeBuckets turns points into buckets, merging groups of k consecutive
// points when there are more than maxChartBuckets. The merged rate is the
// duplicate count over the delivery count, not an average of rates.
func mergeBuckets(pts []ChartPoint, step time.Duration) ([]chartBucket, time.Duration) {
	k := 1
	if len(pts) > maxChartBuckets {
		k = (len(pts) + maxChartBuckets - 1) / maxChartBuckets
	}
	out := make([]chartBucket, 0, (len(pts)+k-1)/k)
	for i := 0; i < len(pts); i += k {
		j := min(i+k, len(pts))
		b := chartBucket{start: pts[i].T, end: pts[j-1].T.Add(step)}
		rateSum, rateN := 0.0, 0
		for _, p := range pts[i:j] {
			b.Volume += max(p.Volume, 0)
			b.Duplicates += max(p.Duplicates, 0)
			if r := p.Rate; !math.IsNaN(r) && !math.IsInf(r, 0) && p.Volume > 0 {
				rateSum += clamp(r, 0, 1)
				rateN++
			}
		}
		switch {
		case b.Volume > 0 && (b.Duplicates > 0 || rateN == 0):
			b.Rate = clamp(float64(b.Duplicates)/float64(b.Volume), 0, 1)
		case rateN > 0:
			b.Rate = rateSum / float64(rateN)
		}
		b.hasRate = b.Volume > 0
		out = append(out, b)
	}
	return out, step * time.Duration(k)
}

// timeTicks places x-axis labels at round times suited to the span:
// HH:MM within a day or so, "Mon 02" within ten days, "Jan 02" beyond.
func timeTicks(from, to time.Time, loc *time.Location, w float64) []chartXTick {
	span := to.Sub(from)
	var (
		layout string
		first  time.Time
		next   func(time.Time) time.Time
	)
	f := from.In(loc)
	switch {
	case span < 2*time.Hour:
		layout = "15:04"
		mins := 60
		for _, m := range []int{5, 10, 15, 30, 60} {
			if mins = m; span/(time.Duration(m)*time.Minute) <= 8 {
				break
			}
		}
		first = time.Date(f.Year(), f.Month(), f.Day(), f.Hour(), 0, 0, 0, loc)
		next = func(t time.Time) time.Time { return t.Add(time.Duration(mins) * time.Minute) }
	case span <= 36*time.Hour:
		layout = "15:04"
		hours := 24
		for _, h := range []int{1, 2, 3, 4, 6, 12, 24} {
			if hours = h; span/(time.Duration(h)*time.Hour) <= 8 {
				break
			}
		}
		first = time.Date(f.Year(), f.Month(), f.Day(), 0, 0, 0, 0, loc)
		next = func(t time.Time) time.Time {
			n := t.Add(time.Duration(hours) * time.Hour)
			// Re-align to round hours after a daylight-saving jump.
			if a := time.Date(n.Year(), n.Month(), n.Day(), n.Hour()/hours*hours, 0, 0, 0, loc); a.After(t) {
				return a
			}
			return n
		}
	default:
		layout = "Jan 02"
		if span <= 10*24*time.Hour {
			layout = "Mon 02"
		}
		days := 365
		for _, dd := range []int{1, 2, 3, 5, 7, 10, 14, 15, 30, 60, 90, 180, 365} {
			if days = dd; span/(time.Duration(dd)*24*time.Hour) <= 8 {
				break
			}
		}
		first = time.Date(f.Year(), f.Month(), f.Day(), 0, 0, 0, 0, loc)
		if first.Before(from) {
			first = first.AddDate(0, 0, 1)
		}
		next = func(t time.Time) time.Time { return t.AddDate(0, 0, days) }
	}
	for first.Before(from) {
		first = next(first)
	}

	var ticks []chartXTick
	for t := first; !t.After(to) && len(ticks) < 32; t = next(t) {
		x := float64(t.Sub(from)) / float64(span) * w
		anchor := "middle"
		switch {
		case x < w*0.03:
			anchor = "start"
		case x > w*0.97:
			anchor = "end"
		}
		ticks = append(ticks, chartXTick{X: x, Label: t.In(loc).Format(layout), Anchor: anchor})
		if n := next(t); !n.After(t) {
			break
		}
	}
	if len(ticks) > 4 {
		for i := range ticks {
			ticks[i].Minor = i%2 == 1
		}
	}
	return ticks
}

// niceCeil returns the smallest of 1, 2, 2.5, 5 × 10^k that is ≥ v.
// Integer axes skip 2.5 and never go below 1.
func niceCeil(v float64, integer bool) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	exp := math.Floor(math.Log10(v))
	base := math.Pow(10, exp)
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if integer && m == 2.5 {
			continue
		}
		if c := m * base; c >= v*(1-1e-9) {
			if integer && c < 1 {
				return 1
			}
			return c
		}
	}
	return 10 * base
}

func clamp(v, lo, hi float64) float64 {
	if math.IsNaN(v) {
		return lo
	}
	return math.Max(lo, math.Min(hi, v))
}

// num formats a coordinate compactly: at most two decimals, no trailing zeros.
func num(v float64) string {
	s := strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

// pct converts a virtual x coordinate into an SVG percentage.
func pct(v, w float64) string {
	return strconv.FormatFloat(math.Round(v/w*100000)/1000, 'f', -1, 64) + "%"
}

// formatPercent renders an axis rate: 0.05 → "5%", 0.025 → "2.5%", 0.0025 → "0.25%".
func formatPercent(r float64) string {
	p := r * 100
	s := strconv.FormatFloat(math.Round(p*100)/100, 'f', -1, 64)
	return s + "%"
}

// formatPercent1 renders a measured rate with one decimal: "2.9%".
func formatPercent1(r float64) string {
	return strconv.FormatFloat(clamp(r, 0, 1)*100, 'f', 1, 64) + "%"
}

// formatInt adds thousands separators: 12345 → "12,345".
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatCompact renders axis counts: 950, 1.2k, 25k, 3.4M.
func formatCompact(n int64) string {
	f := float64(n)
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(math.Round(f/100)/10, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(math.Round(f/100_000)/10, 'f', -1, 64) + "M"
	}
}

func bucketText(vol, dups int64, rate float64) string {
	if vol == 0 {
		return "no deliveries"
	}
	return fmt.Sprintf("%s, %s (%s)", countOf(vol, "delivery", "deliveries"), countOf(dups, "duplicate", "duplicates"), formatPercent1(rate))
}

// countOf is "1 delivery" or "1,234 deliveries".
func countOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return formatInt(n) + " " + many
}

func formatBucketTime(t time.Time, span, step time.Duration) string {
	switch {
	case span <= 26*time.Hour:
		return t.Format("15:04")
	case step >= 24*time.Hour:
		return t.Format("Mon Jan 02")
	default:
		return t.Format("Mon Jan 02 15:04")
	}
}

func formatPeriod(from, to time.Time) string {
	return from.Format("Jan 02 15:04") + " to " + to.In(from.Location()).Format("Jan 02 15:04") + " " + from.Format("MST")
}

// sparkGeom is the drawing of a Sparkline.
type sparkGeom struct {
	Line, Area string
	DotX, DotY float64
	Empty      bool
}

const (
	sparkW   = 112
	sparkH   = 28
	sparkPad = 3
	sparkMax = 112
)

// sparklineGeometry scales values (NaN and ±Inf count as 0) into a w×h box
// with a zero baseline and top as its ceiling (0: the series' own maximum;
// rows of one table pass the same top so their heights compare); long
// series keep the maximum of each group so spikes survive the downsampling.
func sparklineGeometry(values []float64, w, h, scaleTop float64) sparkGeom {
	if len(values) == 0 {
		return sparkGeom{Empty: true}
	}
	vals := make([]float64, 0, len(values))
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			v = 0
		}
		vals = append(vals, v)
	}
	if len(vals) > sparkMax {
		k := (len(vals) + sparkMax - 1) / sparkMax
		ds := make([]float64, 0, sparkMax)
		for i := 0; i < len(vals); i += k {
			m := 0.0
			for _, v := range vals[i:min(i+k, len(vals))] {
				m = math.Max(m, v)
			}
			ds = append(ds, m)
		}
		vals = ds
	}
	top := 0.0
	for _, v := range vals {
		top = math.Max(top, v)
	}
	if scaleTop > top {
		top = scaleTop
	}
	yOf := func(v float64) float64 {
		if top == 0 {
			return h - sparkPad
		}
		return h - sparkPad - math.Min(v/top, 1)*(h-2*sparkPad)
	}
	xOf := func(i int) float64 {
		if len(vals) == 1 {
			return w - sparkPad
		}
		return sparkPad + float64(i)/float64(len(vals)-1)*(w-2*sparkPad)
	}
	var line strings.Builder
	if len(vals) == 1 {
		fmt.Fprintf(&line, "M%s %sL%s %s", num(sparkPad), num(yOf(vals[0])), num(w-sparkPad), num(yOf(vals[0])))
	} else {
		for i, v := range vals {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&line, "%s%s %s", cmd, num(xOf(i)), num(yOf(v)))
		}
	}
	g := sparkGeom{Line: line.String(), DotX: xOf(len(vals) - 1), DotY: yOf(vals[len(vals)-1])}
	startX := xOf(0)
	if len(vals) == 1 {
		startX = sparkPad
	}
	g.Area = g.Line + fmt.Sprintf("L%s %sL%s %sZ", num(xOf(len(vals)-1)), num(h-sparkPad), num(startX), num(h-sparkPad))
	return g
}

// SparkTop is the shared ceiling of a table's sparklines: the largest value
// of any row, so a 16 % row is drawn taller than a 3 % one.
func SparkTop(series ...[]float64) float64 {
	top := 0.0
	for _, vs := range series {
		for _, v := range vs {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = math.Max(top, v)
			}
		}
	}
	return top
}
