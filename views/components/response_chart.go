package components

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// DayDuration is one day of a DurationChart: a median time and how many
// values it is the median of (0: nothing that day, no bar).
type DayDuration struct {
	Day    time.Time // the day's midnight in the reader's zone
	Median time.Duration
	Count  int64
}

// DurationChartData is what DurationChart draws: one bar per day, its
// height the day's median (e.g. the time to first response), against a
// target line.
type DurationChartData struct {
	Title  string
	Days   []DayDuration // oldest first, consecutive days
	Target time.Duration // 0: no target line
	What   string        // "first response": words for the summary and labels
}

type durBar struct {
	X, W       float64 // slot, virtual units
	BarX, BarW float64
	BarY, BarH float64 // px
	Title      string
	When       string
	CountText  string
	MedianText string
	VsTarget   string
	Slow       bool // above the target
	Empty      bool
}

type durGeom struct {
	W, H                float64
	PlotTop, PlotBottom float64
	Bars                []durBar
	YTicks              []chartYTick // RateLabel holds the duration label
	XTicks              []chartXTick
	HasTarget           bool
	TargetY             float64
	TargetLabel         string
	Empty               bool // no value on any day
	Summary             string
	Description         string
	Period              string
}

// durSteps are the y axis's grid steps: a chart of a 20-minute median
// reads 0, 5, 10, 15, 20 min; one with a 9-hour spike 0, 3, 6, 9, 12 h.
var durSteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}

func durationGeometry(d DurationChartData, w, h int) durGeom {
	g := durGeom{W: float64(w), H: float64(h), PlotTop: chartPlotTop, PlotBottom: float64(h) - (chartHeight - chartPlotBottom)}
	plotH := g.PlotBottom - g.PlotTop
	n := len(d.Days)
	what := d.What
	if what == "" {
		what = "value"
	}
	if n == 0 {
		g.Empty = true
		g.Summary = "No data"
		g.Description = "No data."
		return g
	}
	from, to := d.Days[0].Day, d.Days[n-1].Day.AddDate(0, 0, 1)
	g.Period = from.Format("Jan 02") + " to " + d.Days[n-1].Day.Format("Jan 02")

	var top time.Duration
	var total int64
	slowest := -1
	for i, p := range d.Days {
		total += p.Count
		if p.Count > 0 && p.Median > top {
			top = p.Median
		}
		if p.Count > 0 && (slowest < 0 || p.Median > d.Days[slowest].Median) {
			slowest = i
		}
	}
	g.Empty = total == 0
	if d.Target > 0 {
		top = max(top, d.Target*5/4)
	}
	step := durSteps[len(durSteps)-1]
	for _, s := range durSteps {
		if s*chartGridLines >= top {
			step = s
			break
		}
	}
	axisTop := step * chartGridLines
	for i := 0; i <= chartGridLines; i++ {
		f := float64(i) / chartGridLines
		g.YTicks = append(g.YTicks, chartYTick{Y: g.PlotBottom - f*plotH, RateLabel: durLabel(step * time.Duration(i))})
	}
	yOf := func(v time.Duration) float64 {
		return g.PlotBottom - clamp(float64(v)/float64(axisTop), 0, 1)*plotH
	}
	if d.Target > 0 {
		g.HasTarget, g.TargetY, g.TargetLabel = true, yOf(d.Target), durLabel(d.Target)
		for i := range g.YTicks {
			if math.Abs(g.YTicks[i].Y-g.TargetY) < 13 {
				g.YTicks[i].RateLabel = "" // the target's own label takes the place
			}
		}
	}

	slot := g.W / float64(n)
	fill := 0.7
	if n > 20 {
		fill = 0.8
	}
	for i, p := range d.Days {
		b := durBar{X: float64(i) * slot, W: slot, When: p.Day.Format("Mon Jan 02"), CountText: formatInt(p.Count)}
		b.BarW = slot * fill
		b.BarX = b.X + (slot-b.BarW)/2
		if p.Count == 0 {
			b.Empty = true
			b.MedianText, b.VsTarget = "—", ""
			b.Title = b.When + " — no " + what + "s"
			b.BarY, b.BarH = g.PlotBottom, 0
		} else {
			b.MedianText = durLabel(p.Median)
			b.BarH = math.Max(g.PlotBottom-yOf(p.Median), minBarPx)
			b.BarY = g.PlotBottom - b.BarH
			b.Title = fmt.Sprintf("%s — median %s over %s", b.When, b.MedianText, countOf(p.Count, what, what+"s"))
			if d.Target > 0 {
				b.Slow = p.Median > d.Target
				if b.Slow {
					b.VsTarget = "slower than the " + durLabel(d.Target) + " target"
					b.Title += " · " + b.VsTarget
				} else {
					b.VsTarget = "within the target"
				}
			}
		}
		g.Bars = append(g.Bars, b)
	}

	// Day labels under their bars: at most about 8, every k-th day
	// counting back from today (today is always labelled); every other one
	// hides on a phone.
	k := 1
	for _, s := range []int{1, 2, 3, 5, 7, 10, 14, 15, 30} {
		if k = s; (n+s-1)/s <= 8 {
			break
		}
	}
	layout := "Jan 02"
	if to.Sub(from) <= 10*24*time.Hour {
		layout = "Mon 02"
	}
	var ticks []chartXTick
	for i := n - 1; i >= 0; i -= k {
		x := (float64(i) + 0.5) * slot
		anchor := "middle"
		switch {
		case x < g.W*0.04:
			anchor = "start"
		case x > g.W*0.96:
			anchor = "end"
		}
		ticks = append([]chartXTick{{X: x, Label: d.Days[i].Day.Format(layout), Anchor: anchor}}, ticks...)
	}
	if len(ticks) > 4 {
		for i := range ticks {
			ticks[i].Minor = (len(ticks)-1-i)%2 == 1
		}
	}
	g.XTicks = ticks

	if g.Empty {
		g.Summary = "No " + what + "s"
		g.Description = "No " + what + "s between " + g.Period + "."
		return g
	}
	g.Summary = fmt.Sprintf("%s · slowest day %s (median %s)", countOf(total, what, what+"s"),
		d.Days[slowest].Day.Format("Jan 02"), durLabel(d.Days[slowest].Median))
	g.Description = fmt.Sprintf("Median time to %s per day, %s: %s; the slowest day was %s with a median of %s.",
		what, g.Period, countOf(total, what, what+"s"), d.Days[slowest].Day.Format("Mon Jan 02"), durLabel(d.Days[slowest].Median))
	if d.Target > 0 {
		slow := 0
		for _, b := range g.Bars {
			if b.Slow {
				slow++
			}
		}
		g.Description += fmt.Sprintf(" Target %s, exceeded on %d of %d days.", durLabel(d.Target), slow, n)
	}
	return g
}

// DurationText is a duration as people read it: "45 s", "12 min",
// "1 h 30", "26 h", "3 d".
func DurationText(d time.Duration) string { return durLabel(d) }

func durLabel(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 || h >= 10 {
			return strconv.Itoa(h) + " h"
		}
		return fmt.Sprintf("%d h %02d", h, m)
	}
	days := d.Hours() / 24
	if days < 10 && math.Abs(days-math.Round(days)) > 0.05 {
		return strconv.FormatFloat(math.Round(days*10)/10, 'f', -1, 64) + " d"
	}
	return strconv.Itoa(int(math.Round(days))) + " d"
}

func durBarAlert(b durBar) string {
	if b.Slow {
		return "open"
	}
	return ""
}
