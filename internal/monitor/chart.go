package monitor

import (
	"context"
	"time"
)

// ChartBucket is one bucket of a source's duplicate-rate chart: the
// bucket's counters, the highest rate inside it, and the spike rule's
// baseline and alert line as they stood at the bucket's end.
type ChartBucket struct {
	Bucket
	// PeakRate is, in a bucket longer than the spike rule's window, the
	// highest rate of any window of that length ending in the bucket with
	// at least PeakMinDeliveries deliveries (0 when none had): what the
	// rule judged. A 24 h or 7 d chart draws it, so a ten-minute spike
	// never averages away inside a 30-minute or 4-hour bucket, and a
	// minute with 3 duplicates of 10 deliveries is not drawn as a spike.
	PeakRate float64
	// Baseline is the duplicate rate of the rule's baseline period before
	// the rule's window ending at the bucket's end; Threshold the spike
	// rule's alert line for it (0 when the rule is off). HasBaseline is
	// false when the baseline period had no deliveries.
	Baseline, Threshold float64
	HasBaseline         bool
}

// PeakMinDeliveries is the least volume a window needs to count for a
// bucket's peak: one duplicate out of two deliveries is not a spike.
const PeakMinDeliveries = 20

// ChartSeries is Stats for a chart: buckets of step over [from, to), each
// with its peak sub-bucket rate and the baseline and threshold of the
// source's spike rule at that time ("drawn as they moved").
func (s *Service) ChartSeries(ctx context.Context, tenantID, sourceID string, from, to time.Time, step time.Duration) ([]ChartBucket, error) {
	buckets, err := s.Stats(ctx, tenantID, sourceID, from, to, step)
	if err != nil {
		return nil, err
	}
	out := make([]ChartBucket, len(buckets))
	idx := make(map[int64]int, len(buckets))
	st := int64(step / time.Second)
	for i, b := range buckets {
		out[i].Bucket = b
		idx[floorDiv(b.T.Unix(), st)] = i
	}
	if len(buckets) == 0 {
		return out, nil
	}
	end := buckets[len(buckets)-1].T.Add(step)

	rules, err := getRules(ctx, s.DB, tenantID, sourceID)
	if err != nil {
		return nil, err
	}

	// Peaks: in a bucket longer than the rule's window, the highest rate
	// any window of the rule's length ending inside it saw (what the
	// alert rule judged), from per-minute rows (15-minute ones beyond 8
	// days).
	win := rules.Window()
	if step > win {
		g := time.Minute
		if end.Sub(buckets[0].T) > 8*24*time.Hour {
			g = 15 * time.Minute
		}
		lw := max(int((win+g-1)/g), 1) // the window in g-rows
		pFrom := buckets[0].T.Add(-time.Duration(lw-1) * g)
		table, gran := tableMinute, int64(60)
		rows, err := seriesRows(ctx, s.DB, table, gran, tenantID, sourceID, pFrom, end, int64(g/time.Second))
		if err != nil {
			return nil, err
		}
		n := int(end.Sub(pFrom) / g)
		del, dup := make([]int64, n+1), make([]int64, n+1)
		for i := range n {
			c := rows[pFrom.Add(time.Duration(i)*g).Unix()]
			del[i+1], dup[i+1] = del[i]+c[iDeliveries], dup[i]+c[iDuplicates]
		}
		for e := lw; e <= n; e++ { // the window of rows [e-lw, e)
			d := del[e] - del[e-lw]
			if d < PeakMinDeliveries {
				continue
			}
			last := pFrom.Add(time.Duration(e-1) * g)
			if i, ok := idx[floorDiv(last.Unix(), st)]; ok {
				out[i].PeakRate = max(out[i].PeakRate, round6(Rate(dup[e]-dup[e-lw], d)))
			}
		}
	}

	// Baseline and threshold at each bucket's end, from one series at the
	// chart's step (at most an hour) reaching back a window and a baseline.
	bs := min(step, time.Hour)
	bFrom := buckets[0].T.Add(-rules.Window() - rules.Baseline())
	if ValidateRange(bFrom, end, bs) != nil {
		bs = time.Hour
		if ValidateRange(bFrom, end, bs) != nil {
			return out, nil // a baseline longer than the chart can afford: no lines
		}
	}
	series, err := s.Stats(ctx, tenantID, sourceID, bFrom, end, bs)
	if err != nil || len(series) == 0 {
		return out, err
	}
	// Prefix sums: del[i] is the deliveries of series[:i].
	del, dup := make([]int64, len(series)+1), make([]int64, len(series)+1)
	for i, b := range series {
		del[i+1], dup[i+1] = del[i]+b.Deliveries, dup[i]+b.Duplicates
	}
	at := func(t time.Time) int { // index of the series bucket starting at t (clamped)
		i := int(t.Sub(series[0].T) / bs)
		return max(0, min(i, len(series)))
	}
	for i := range out {
		e := out[i].T.Add(step)
		lo, hi := at(e.Add(-rules.Window()-rules.Baseline())), at(e.Add(-rules.Window()))
		if d := del[hi] - del[lo]; d > 0 {
			out[i].HasBaseline = true
			out[i].Baseline = round6(Rate(dup[hi]-dup[lo], d))
		}
		if rules.SpikeEnabled {
			out[i].Threshold = round6(rules.SpikeThreshold(out[i].Baseline))
		}
	}
	return out, nil
}
