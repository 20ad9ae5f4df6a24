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
	Rate       float64   // 0..1 duplicate rate of the whole bucket
	Volume     int64     // deliveries
	Duplicates int64
	// PeakRate is the highest rate of a finer sub-bucket (monitor.ChartBucket);
	// the chart draws the larger of it and Rate, so a spike inside a long
	// bucket is never averaged away. 0: unknown.
	PeakRate float64
	PeakAt   time.Time // when the peak was measured (zero: the bucket's start)
	// Baseline and Threshold are the spike rule's usual rate and alert line
	// at the bucket's end; HasBaseline says Baseline was measured.
	Baseline, Threshold float64
	HasBaseline         bool
}

// TimeRange is a shaded window on a chart, typically an alert that was open.
type TimeRange struct {
	From, To time.Time
	Label    string // optional, e.g. "Duplicate-rate spike"; defaults to "Alert open"
}

// ChartData is everything RateChart draws. Points should be sorted by T and
// pre-aggregated by the caller to a sensible number of buckets; more than
// maxChartBuckets are merged here (keeping each group's highest rate).
// Times are drawn in From's location: pass them in the reader's zone.
type ChartData struct {
	Title     string
	Points    []ChartPoint
	Threshold float64       // a flat alert line when the points carry none; 0 = none
	Step      time.Duration // bucket width; inferred from Points when 0
	From, To  time.Time     // visible period; inferred from Points when zero
	Highlight []TimeRange   // alert windows, shaded behind the data
	// NoZoom keeps From..To even when the deliveries start late in it.
	NoZoom bool
}

const (
	chartWidth      = 1000 // virtual x units; rendered as percentages so text never scales
	chartHeight     = 244  // px; y coordinates are real pixels
	chartPlotTop    = 22   // room for the peak's label above a point near the top
	chartPlotBottom = 170  // the rate's zero line
	chartStripTop   = 180  // the volume strip below the rate plot
	chartStripH     = 34
	maxChartBuckets = 360
	chartGridLines  = 4 // used by the duration chart
	minBarPx        = 3 // the duration chart's least bar height
)

type chartBucket struct {
	X, W       float64 // slot position and width, virtual units
	Volume     int64
	Duplicates int64
	Rate       float64 // what the line draws: 0 without deliveries, else the larger of the rate and the peak
	Baseline   float64
	Threshold  float64
	hasBase    bool
	Title      string // hover text
	When       string // the bucket's time, for the tooltip
	RateText   string // "4.1%", or "—" when the bucket has no deliveries
	Alert      bool   // an alert was open during the bucket
	peakAt     time.Time
	peakRate   float64 // the rate peakAt belongs to
	start, end time.Time
	hasRate    bool
}

type chartYTick struct {
	Y           float64
	RateLabel   string // "" where the threshold's own label takes the place
	VolumeLabel string // the duration chart's
}

type chartXTick struct {
	X      float64
	Label  string
	Anchor string // start | middle | end
	Minor  bool   // hidden on narrow screens
}

type chartRect struct {
	X, W     float64
	Title    string
	Label    string // drawn inside the band's top left when it is wide enough
	LabelX   float64
	labelEnd float64
}

// chartPeak is the highest point of the rate line and its label.
type chartPeak struct {
	X, Y   float64 // X virtual, Y px
	Label  string  // "45.1% at 14:32"
	LabelY float64
	Anchor string
}

// chartGeom is the computed drawing of a RateChart: x in virtual units
// (0..W), y in pixels (0..H).
type chartGeom struct {
	W, H                float64
	PlotTop, PlotBottom float64
	StripTop, StripH    float64
	Empty               bool // no points at all
	NoVolume            bool // points, but every bucket has zero deliveries
	Buckets             []chartBucket
	LinePath            string // the rate, continuous (an empty bucket is 0)
	AreaPath            string // under the rate line
	VolumePath          string // the light volume strip
	ThresholdPath       string // the alert line as it moved
	BaselinePath        string // the usual rate as it moved
	YTicks              []chartYTick
	XTicks              []chartXTick
	Highlights          []chartRect
	HasThreshold        bool
	ThresholdY          float64 // at the newest bucket, for the gutter label
	ThresholdLabel      string  // "10%", drawn in the rate gutter
	Peak                *chartPeak
	RateMax             float64
	VolumeMax           int64
	VolumeLabel         string // the strip's scale, "40 / 5 min"
	Zoomed              bool   // From was moved to where the deliveries start
	Summary             string // one line shown above the chart
	Description         string // full sentence for assistive technology
	Period              string
	TotalVolume         int64
	TotalDuplicates     int64
}

// chartGeometry computes every coordinate of a RateChart of w virtual units
// by h pixels. It is a plain function so it can be tested without HTML.
//
// One y axis, the duplicate rate from 0 to a little above the larger of the
// peak and the alert line; the rate is one continuous line (a bucket
// without deliveries is 0), the volume a light strip below the plot, the
// alert windows shaded behind the data, the peak labelled.
func chartGeometry(d ChartData, w, h int) chartGeom {
	g := chartGeom{
		W: float64(w), H: float64(h),
		PlotTop:    chartPlotTop,
		PlotBottom: float64(h) - (chartHeight - chartPlotBottom),
		StripTop:   float64(h) - (chartHeight - chartStripTop),
		StripH:     chartStripH,
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
	to = to.In(loc)
	for i := range pts {
		pts[i].T = pts[i].T.In(loc)
	}

	// Zoom to the data: when the deliveries start late in the period, the
	// chart starts a little before them (and before any alert window),
	// so a spike is not a sliver at the right edge of an empty chart.
	if !d.NoZoom {
		first := -1
		for i, p := range pts {
			if p.Volume > 0 {
				first = i
				break
			}
		}
		if first >= 0 && pts[first].T.Sub(from) > to.Sub(from)/4 {
			start := pts[first].T
			for _, r := range d.Highlight {
				if r.From.After(from) && r.From.Before(start) {
					start = r.From
				}
			}
			pad := max(3*step, to.Sub(start)/4)
			nf := start.Add(-pad).Truncate(step)
			if to.Sub(nf) < 12*step {
				nf = to.Add(-12 * step).Truncate(step)
			}
			if nf.After(from) {
				from, g.Zoomed = nf.In(loc), true
				kept := pts[:0]
				for _, p := range pts {
					if !p.T.Before(from) {
						kept = append(kept, p)
					}
				}
				pts = kept
			}
		}
	}
	span := to.Sub(from)
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
	maxRate, maxThr := 0.0, 0.0
	for _, b := range buckets {
		g.TotalVolume += b.Volume
		g.TotalDuplicates += b.Duplicates
		maxVol = max(maxVol, b.Volume)
		if b.hasRate {
			maxRate = math.Max(maxRate, b.Rate)
		}
		maxThr = math.Max(maxThr, b.Threshold)
	}
	if maxThr == 0 && d.Threshold > 0 {
		maxThr = d.Threshold
		for i := range buckets {
			buckets[i].Threshold = d.Threshold
		}
	}
	g.NoVolume = g.TotalVolume == 0
	g.HasThreshold = maxThr > 0

	// The rate axis: 0 to a little above the larger of the peak and the
	// alert line, at a round tick.
	var tick float64
	g.RateMax, tick = rateAxis(math.Max(maxRate, maxThr) * 1.1)
	for v := 0.0; v <= g.RateMax*(1-0.06); v += tick { // no tick crowding the top edge
		g.YTicks = append(g.YTicks, chartYTick{Y: g.PlotBottom - v/g.RateMax*plotH, RateLabel: formatPercent(math.Round(v*1e6) / 1e6)})
		if g.NoVolume {
			break // with nothing to measure only the zero line is labelled
		}
	}
	rateY := func(r float64) float64 { return g.PlotBottom - clamp(r/g.RateMax, 0, 1)*plotH }

	g.VolumeMax = max(maxVol, 1)
	g.VolumeLabel = formatCompact(maxVol) + " / " + stepWords(bstep)

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
		cr := chartRect{X: x0, W: math.Max(x1-x0, 2),
			Title: label + " " + formatBucketTime(r.From, span, step) + "–" + formatBucketTime(r.To, span, step)}
		if x1-x0 >= 0.12*g.W {
			cr.Label, cr.LabelX = "alert open", x0+4
		}
		cr.labelEnd = x1
		g.Highlights = append(g.Highlights, cr)
	}

	// Buckets: hover targets and the paths' points.
	for i := range buckets {
		b := &buckets[i]
		if !b.end.After(from) || !b.start.Before(to) {
			continue
		}
		x0, x1 := xOf(b.start), xOf(b.end)
		b.X, b.W = x0, x1-x0
		when := formatBucketTime(b.start, span, step)
		if merged || bstep >= time.Hour || span > 26*time.Hour {
			end := formatBucketTime(b.end, span, step)
			if y1, m1, d1 := b.start.Date(); span > 26*time.Hour && bstep < 24*time.Hour {
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
		if b.Threshold > 0 && b.Volume > 0 && b.Rate >= b.Threshold {
			b.Title += " · above the alert line"
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

	// The rate: one continuous line through the buckets' middles, from the
	// first bucket's left edge to the last one's right edge.
	var line, area, vol, thr, base strings.Builder
	stripBottom := g.StripTop + g.StripH
	for i, b := range g.Buckets {
		cx, y := b.X+b.W/2, rateY(b.Rate)
		vy := stripBottom - float64(b.Volume)/float64(g.VolumeMax)*g.StripH
		if i == 0 {
			fmt.Fprintf(&line, "M%s %s", num(b.X), num(y))
			fmt.Fprintf(&area, "M%s %sL%s %s", num(b.X), num(g.PlotBottom), num(b.X), num(y))
			fmt.Fprintf(&vol, "M%s %s", num(b.X), num(stripBottom))
		}
		fmt.Fprintf(&line, "L%s %s", num(cx), num(y))
		fmt.Fprintf(&area, "L%s %s", num(cx), num(y))
		// The volume strip is a step area: each bucket level across its slot.
		fmt.Fprintf(&vol, "L%s %sL%s %s", num(b.X), num(vy), num(b.X+b.W), num(vy))
		if i == len(g.Buckets)-1 {
			fmt.Fprintf(&line, "L%s %s", num(b.X+b.W), num(y))
			fmt.Fprintf(&area, "L%s %sL%s %sZ", num(b.X+b.W), num(y), num(b.X+b.W), num(g.PlotBottom))
			fmt.Fprintf(&vol, "L%s %sZ", num(b.X+b.W), num(stripBottom))
		}
		// The alert line and the baseline move with the baseline: a level
		// across each bucket, joined to the next.
		if b.Threshold > 0 {
			cmd := "L"
			if i == 0 || g.Buckets[i-1].Threshold <= 0 {
				cmd = "M"
			}
			fmt.Fprintf(&thr, "%s%s %sH%s", cmd, num(b.X), num(rateY(b.Threshold)), num(b.X+b.W))
		}
		if b.hasBase {
			cmd := "L"
			if i == 0 || !g.Buckets[i-1].hasBase {
				cmd = "M"
			}
			fmt.Fprintf(&base, "%s%s %sH%s", cmd, num(b.X), num(rateY(b.Baseline)), num(b.X+b.W))
		}
	}
	g.LinePath, g.AreaPath, g.VolumePath = line.String(), area.String(), vol.String()
	g.ThresholdPath, g.BaselinePath = thr.String(), base.String()
	if g.NoVolume {
		g.AreaPath, g.LinePath = "", "" // nothing measured: no line at 0
	}

	if g.HasThreshold && len(g.Buckets) > 0 {
		last := g.Buckets[len(g.Buckets)-1].Threshold
		if last <= 0 {
			last = maxThr
		}
		g.ThresholdY = rateY(last)
		g.ThresholdLabel = formatPercent(math.Round(last*1000) / 1000)
		// The alert line is labelled on the rate axis, in its colour; a
		// grid label it would overlap gives way.
		for i := range g.YTicks {
			if math.Abs(g.YTicks[i].Y-g.ThresholdY) < 13 {
				g.YTicks[i].RateLabel = ""
			}
		}
	}

	g.XTicks = timeTicks(from, to, loc, g.W)

	// The peak, labelled with its value and time.
	var peak *chartBucket
	above := 0
	for i := range g.Buckets {
		b := &g.Buckets[i]
		if b.hasRate && b.Rate > 0 && (peak == nil || b.Rate > peak.Rate) {
			peak = b
		}
		if b.Threshold > 0 && b.hasRate && b.Rate >= b.Threshold {
			above++
		}
	}
	if peak != nil {
		p := &chartPeak{X: peak.X + peak.W/2, Y: rateY(peak.Rate)}
		at := peak.start
		if !peak.peakAt.IsZero() && peak.Rate == peak.peakRate {
			at = peak.peakAt.In(loc)
		}
		p.Label = formatPercent1(peak.Rate) + " at " + peakTime(at, span)
		p.LabelY = p.Y - 9
		if p.LabelY < 12 {
			p.LabelY = p.Y + 18
		}
		// The label ("47.5% at 03:46", about 90 px) is centred on the peak
		// only where half of it fits on either side at 390 px (a plot of
		// about 330 px): nearer an edge it is anchored away from that edge.
		p.Anchor = "middle"
		switch {
		case p.X < 0.25*g.W:
			p.Anchor = "start"
		case p.X > 0.75*g.W:
			p.Anchor = "end"
		}
		g.Peak = p
		// The peak's label wins over an alert band's: the band keeps its
		// shading and its hover title.
		for i := range g.Highlights {
			if h := &g.Highlights[i]; h.Label != "" && p.X > h.LabelX-0.3*g.W && p.X < h.labelEnd+0.3*g.W {
				h.Label = ""
			}
		}
	}

	// Words.
	overall := 0.0
	if g.TotalVolume > 0 {
		overall = float64(g.TotalDuplicates) / float64(g.TotalVolume)
	}
	if g.NoVolume {
		g.Summary = "No deliveries"
		g.Description = "No deliveries between " + g.Period + "."
		g.Peak = nil
	} else {
		vol, dups := countOf(g.TotalVolume, "delivery", "deliveries"), countOf(g.TotalDuplicates, "duplicate", "duplicates")
		g.Summary = fmt.Sprintf("%s · %s · %s overall", vol, dups, formatPercent1(overall))
		g.Description = fmt.Sprintf("Duplicate rate and delivery volume, %s: %s, %s (%s overall)", g.Period, vol, dups, formatPercent1(overall))
		if g.Peak != nil {
			g.Summary += " · peak " + g.Peak.Label
			g.Description += "; highest rate " + g.Peak.Label
		}
		g.Description += "."
		if g.HasThreshold {
			g.Description += fmt.Sprintf(" Alert line now %s, reached in %d of %d buckets.", g.ThresholdLabel, above, len(g.Buckets))
		}
		if n := len(g.Highlights); n > 0 {
			g.Description += " " + countOf(int64(n), "alert window", "alert windows") + " shaded."
		}
	}
	if g.Zoomed {
		g.Summary += " · zoomed to the deliveries, from " + formatBucketTime(from, span, step)
	}
	return g
}

// rateAxis returns the axis top for a rate axis reaching v (the top is v
// itself, so the peak is drawn near the top whatever its value) and the
// grid tick: the smallest of 1, 2, 2.5 or 5 × 10^k that draws at most six
// intervals below it.
func rateAxis(v float64) (top, tick float64) {
	v = clamp(v, 0.01, 1)
	for exp := -4.0; exp <= 0; exp++ {
		for _, m := range []float64{1, 2, 2.5, 5} {
			if t := m * math.Pow(10, exp); v/t <= 6 {
				return v, t
			}
		}
	}
	return v, 0.2
}

// stepWords is a bucket width in words: "1 min", "30 min", "4 h", "1 day".
func stepWords(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		if d == 24*time.Hour {
			return "day"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		if d == time.Hour {
			return "hour"
		}
		return fmt.Sprintf("%d h", d/time.Hour)
	case d == time.Minute:
		return "min"
	}
	return fmt.Sprintf("%d min", d/time.Minute)
}

// peakTime is the peak's time for its label: the clock within a day, with
// the weekday beyond.
func peakTime(t time.Time, span time.Duration) string {
	if span <= 26*time.Hour {
		return t.Format("15:04")
	}
	return t.Format("Mon 15:04")
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
// points when there are more than maxChartBuckets. A bucket's rate is the
// highest of its whole rate, its points' rates (with at least
// minPeakVolume deliveries) and their peaks: a spike never averages away.
// The baseline and threshold are the group's last.
func mergeBuckets(pts []ChartPoint, step time.Duration) ([]chartBucket, time.Duration) {
	k := 1
	if len(pts) > maxChartBuckets {
		k = (len(pts) + maxChartBuckets - 1) / maxChartBuckets
	}
	ok := func(r float64) float64 {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return 0
		}
		return clamp(r, 0, 1)
	}
	out := make([]chartBucket, 0, (len(pts)+k-1)/k)
	for i := 0; i < len(pts); i += k {
		j := min(i+k, len(pts))
		b := chartBucket{start: pts[i].T, end: pts[j-1].T.Add(step)}
		rate := 0.0
		for _, p := range pts[i:j] {
			b.Volume += max(p.Volume, 0)
			b.Duplicates += max(p.Duplicates, 0)
			if p.Volume > 0 {
				if pr := ok(p.PeakRate); pr > rate {
					rate, b.peakAt = pr, p.PeakAt
				}
				if r := ok(p.Rate); (k == 1 || p.Volume >= minPeakVolume) && r > rate {
					rate, b.peakAt = r, p.T
				}
			}
			b.Threshold, b.Baseline, b.hasBase = ok(p.Threshold), ok(p.Baseline), p.HasBaseline
		}
		if b.Volume > 0 {
			b.peakRate = rate
			if b.Duplicates > 0 || rate == 0 {
				rate = math.Max(rate, clamp(float64(b.Duplicates)/float64(b.Volume), 0, 1))
			}
			b.Rate, b.hasRate = rate, true
		}
		out = append(out, b)
	}
	return out, step * time.Duration(k)
}

// minPeakVolume is the least volume a merged point needs for its own rate
// to count as its group's peak (as monitor.PeakMinDeliveries).
const minPeakVolume = 5

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
