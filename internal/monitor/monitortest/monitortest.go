// Package monitortest generates simulated webhook traffic into a monitor
// Sink, for tests and demos (a chart with a retry storm on it).
package monitortest

import (
	"math/rand/v2"
	"time"

	"leadpipe/internal/monitor"
)

// Traffic is steady traffic for one source: PerMinute deliveries a minute,
// each a duplicate with probability DupRate (drawn from Seed, so a run is
// reproducible).
type Traffic struct {
	TenantID, SourceID string
	PerMinute          int
	DupRate            float64
	Seed               uint64
}

// Totals are what a simulation added.
type Totals struct{ Deliveries, Duplicates int64 }

// Add records the traffic of every minute in [from, to) into s and
// returns what it added.
func (tr Traffic) Add(s monitor.Sink, from, to time.Time) Totals {
	rng := rand.New(rand.NewPCG(tr.Seed, uint64(from.Unix())))
	var tot Totals
	for m := from.UTC().Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		var dups int64
		for range tr.PerMinute {
			if rng.Float64() < tr.DupRate {
				dups++
			}
		}
		at := m.Add(30 * time.Second)
		s.Add(tr.TenantID, tr.SourceID, monitor.Deliveries, int64(tr.PerMinute), at)
		s.Add(tr.TenantID, tr.SourceID, monitor.Duplicates, dups, at)
		tot.Deliveries += int64(tr.PerMinute)
		tot.Duplicates += dups
	}
	return tot
}
