package monitor

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// ChartBucket is one bucket of a source's duplicate-rate chart: the
// bucket's counters, the highest rate inside it, and the spike rule's
// baseline and alert line as they stood at the bucket's end.
type ChartBucket struct {
	Bucket
	// PeakRate is, in a bucket longer than a minute, the highest rate of
	// any 1-minute, 5-minute or rule-window window ending in the bucket
	// with at least the spike rule's minimum deliveries (0 when none had).
	// A 24 h or 7 d chart draws it, so a spike never averages away inside
	// a 30-minute or 4-hour bucket, and a minute with 3 duplicates of 10
	// deliveries is not drawn as a spike.
	PeakRate float64
	PeakAt   time.Time // the start of the peak window's last minute
	// Baseline is the duplicate rate of the rule's baseline period before
	// the rule's window ending at the bucket's end; Threshold the spike
	// rule's alert line for it (0 when the rule is off). HasBaseline is
	// false when the baseline period had no deliveries.
	Baseline, Threshold float64
	HasBaseline         bool
}

// PeakMinDeliveries is the least volume a window needs to count for a
// bucket's peak (or the spike rule's minimum, when higher): one duplicate
// out of two deliveries is not a spike.
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

	// Peaks: in a bucket longer than a minute, the highest rate of any
	// window of 1, 5 or the rule's minutes ending inside it that had at
	// least the rule's minimum deliveries (what the alert rule would
	// judge), from per-minute rows (15-minute ones beyond 8 days). A burst
	// of 500 deliveries in one minute shows at its own rate; a minute of 3
	// duplicates in 20 deliveries is noise and does not.
	if step > time.Minute {
		g := time.Minute
		if end.Sub(buckets[0].T) > 8*24*time.Hour {
			g = 15 * time.Minute
		}
		lens := map[int]bool{}
		for _, w := range []time.Duration{time.Minute, 5 * time.Minute, rules.Window()} {
			if w >= g && w < step*4 {
				lens[int(w/g)] = true
			}
		}
		longest := 1
		for l := range lens {
			longest = max(longest, l)
		}
		pFrom := buckets[0].T.Add(-time.Duration(longest-1) * g)
		var rows map[int64]counts
		err := s.read(ctx, func(x *sqlx.DB) error {
			var err error
			rows, err = seriesRows(ctx, x, tableMinute, 60, tenantID, sourceID, pFrom, end, int64(g/time.Second))
			return err
		})
		if err != nil {
			return nil, err
		}
		n := int(end.Sub(pFrom) / g)
		del, dup := make([]int64, n+1), make([]int64, n+1)
		for i := range n {
			c := rows[pFrom.Add(time.Duration(i)*g).Unix()]
			del[i+1], dup[i+1] = del[i]+c[iDeliveries], dup[i]+c[iDuplicates]
		}
		minDel := int64(max(rules.SpikeMinDeliveries, PeakMinDeliveries))
		for e := 1; e <= n; e++ { // windows of rows ending at row e-1
			i, ok := idx[floorDiv(pFrom.Add(time.Duration(e-1)*g).Unix(), st)]
			if !ok {
				continue
			}
			for l := range lens {
				if e < l {
					continue
				}
				if d := del[e] - del[e-l]; d >= minDel {
					if r := round6(Rate(dup[e]-dup[e-l], d)); r > out[i].PeakRate {
						out[i].PeakRate, out[i].PeakAt = r, pFrom.Add(time.Duration(e-1)*g)
					}
				}
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
	now := s.now()
	for i := range out {
		// At the bucket's start (clamped to now): the line the bucket's
		// rate was measured against, before the bucket's own deliveries
		// moved the baseline.
		e := out[i].T
		if e.After(now) {
			e = now
		}
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
