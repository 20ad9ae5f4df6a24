package web_test

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/monitor/monitortest"
	"leadpipe/internal/sources"
)

// What "the chart shows the spike" means, asserted on the rendered SVG of
// the source page:
//
//   - the rate line's highest point is at least 50 % of the plot's height
//     above its zero line (a 45 % spike over a 5 % baseline);
//   - the line's typical point (its median) stays in the lower quarter, so
//     the spike stands out against the usual rate rather than the whole
//     chart being high;
//   - the rate line is one continuous path (no gaps where buckets are
//     empty), and there are no delivery bars;
//   - the peak is labelled with its value (≥ 35 %) and its time in the
//     reader's zone (within the spike), and the alert window is shaded
//     behind the data;
//   - the 24 h and 7 d views label the same peak as the 1 h view.
//
// It must hold for the 1 h, 24 h and 7 d views: the longer views draw the
// highest rate in each bucket, so the spike never averages away.
func TestUIChartShowsTheSpike(t *testing.T) {
	e := uiEnv(t, "ui_chart_spike")
	ctx := context.Background()
	ten := e.Tenant("acme")
	src, _ := e.Source(ten.ID, sources.CreateInput{Slug: "landing", Name: "Landing page", Kind: "standard"})
	// The reader is in New York: the peak's label says New York's time.
	ny, _ := time.LoadLocation("America/New_York")
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE users SET time_zone = 'America/New_York' WHERE tenant_id = ? AND id = ?`, ten.ID, ten.Admin.ID); err != nil {
		t.Fatal(err)
	}
	mon := e.App.Web.Monitor
	now := time.Now().UTC().Truncate(time.Minute)
	spikeFrom := now.Add(-10 * time.Minute)
	monitortest.Traffic{TenantID: ten.ID, SourceID: src.ID, PerMinute: 40, DupRate: 0.05, Seed: 1}.Add(e.App.Stats, now.Add(-8*24*time.Hour), spikeFrom)
	monitortest.Traffic{TenantID: ten.ID, SourceID: src.ID, PerMinute: 80, DupRate: 0.45, Seed: 2}.Add(e.App.Stats, spikeFrom, now.Add(time.Minute))
	if err := mon.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for m := spikeFrom.Add(time.Minute); !m.After(now); m = m.Add(time.Minute) {
		if err := mon.Evaluate(ctx, m.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t, e)
	b.login(ten.Admin.Email, ten.AdminPassword)
	peaks := map[string]string{} // view → the peak's value
	label := regexp.MustCompile(`^(\d+\.\d)% at (?:[A-Z][a-z]{2} )?(\d\d:\d\d)$`)
	for _, rng := range []string{"1h", "24h", "7d"} {
		t.Run(rng, func(t *testing.T) {
			p := b.get("/monitor/sources/" + src.ID + "?range=" + rng)
			if p.status != 200 {
				t.Fatalf("status %d", p.status)
			}
			svg := p.doc.Find("svg.chart-svg")
			top, _ := strconv.ParseFloat(svg.AttrOr("data-plot-top", ""), 64)
			bottom, _ := strconv.ParseFloat(svg.AttrOr("data-plot-bottom", ""), 64)
			if bottom <= top {
				t.Fatalf("plot %v..%v", top, bottom)
			}
			d := p.testid("chart-rate-line").AttrOr("d", "")
			if strings.Count(d, "M") != 1 {
				t.Errorf("the rate line is not one continuous path: %d moves", strings.Count(d, "M"))
			}
			ys := pathYs(d)
			if len(ys) < 10 {
				t.Fatalf("rate line %q", d)
			}
			high := (bottom - slicesMin(ys)) / (bottom - top)
			typical := (bottom - median(ys)) / (bottom - top)
			t.Logf("%s: spike at %.0f%% of the plot height, usual rate at %.0f%%, peak label %q", rng, high*100, typical*100, p.testid("chart-peak-label").Text())
			if high < 0.5 {
				t.Errorf("the spike spans %.0f%% of the plot height, want ≥ 50%%", high*100)
			}
			if typical > 0.25 {
				t.Errorf("the usual rate sits at %.0f%% of the plot height, want ≤ 25%%", typical*100)
			}
			if n := p.testid("chart-bar").Length(); n != 0 {
				t.Errorf("%d delivery bars: the volume is a strip below the line", n)
			}
			if p.testid("chart-volume").Length() != 1 {
				t.Error("no volume strip")
			}
			m := label.FindStringSubmatch(strings.TrimSpace(p.testid("chart-peak-label").Text()))
			if m == nil {
				t.Fatalf("peak label %q", p.testid("chart-peak-label").Text())
			}
			peaks[rng] = m[1]
			if v, _ := strconv.ParseFloat(m[1], 64); v < 35 {
				t.Errorf("peak labelled %s%%, want the spike's ≥ 35%%", m[1])
			}
			at, _ := time.ParseInLocation("15:04", m[2], ny)
			spike := spikeFrom.In(ny)
			if gap := clockGap(at, spike); gap > 12*time.Minute { // the peak window's minute, inside the spike
				t.Errorf("peak at %s, the spike started at %s New York time", m[2], spike.Format("15:04"))
			}
			if p.testid("chart-alert").Length() == 0 {
				t.Error("the alert window is not shaded")
			}
			if p.testid("chart-threshold").Length() != 1 || p.testid("chart-threshold").AttrOr("d", "") == "" {
				t.Error("no alert line")
			}
		})
	}
	// Max per bucket: the 24 h and 7 d views label the same peak as the
	// 1 h view, never an average of it.
	if peaks["24h"] != peaks["1h"] || peaks["7d"] != peaks["1h"] {
		t.Errorf("peaks differ between the views: %v", peaks)
	}
}

var pathNum = regexp.MustCompile(`[ML]([-\d.]+) ([-\d.]+)`)

// pathYs returns the y of every point of an M/L path.
func pathYs(d string) []float64 {
	var ys []float64
	for _, m := range pathNum.FindAllStringSubmatch(d, -1) {
		y, _ := strconv.ParseFloat(m[2], 64)
		ys = append(ys, y)
	}
	return ys
}

func slicesMin(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s { // small: insertion sort
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// clockGap is the distance between two clock times of day, ignoring dates.
func clockGap(a, b time.Time) time.Duration {
	am := a.Hour()*60 + a.Minute()
	bm := b.Hour()*60 + b.Minute()
	d := am - bm
	if d < 0 {
		d = -d
	}
	d = min(d, 24*60-d)
	return time.Duration(d) * time.Minute
}
