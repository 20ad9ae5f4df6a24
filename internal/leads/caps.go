package leads

import (
	"slices"
	"sync"
	"time"
)

// Daily caps (docs/ARCHITECTURE.md; docs/ARCHITECTURE.md, "Daily caps"). A
// round-robin rule's positions count from the start of the day, so the
// position alone says whom it goes to: the rule's active members rotate
// until the lowest cap is reached, then those left rotate until the next
// cap, and so on; past the last cap only uncapped members remain (none:
// the day is full, the lead stays unassigned). Concurrent batches take
// disjoint positions of one counter (the reservation stays one round
// trip), so a capped member gets exactly their cap and the others share
// the rest in turn, ±1.

// capPhase is a stretch of a day's positions shared in turn by members:
// from start, n positions (n < 0: the rest of the day).
type capPhase struct {
	start, n int64
	members  []string
}

// capSchedule maps a rule's day positions to members. The zero value has
// nobody.
type capSchedule struct{ phases []capPhase }

// newCapSchedule builds the schedule of base (the rule's members who are
// neither disabled nor away, in the rule's order) with their caps.
func newCapSchedule(base []string, caps map[string]int) capSchedule {
	if len(base) == 0 {
		return capSchedule{}
	}
	var levels []int
	for _, m := range base {
		if c, ok := caps[m]; ok {
			levels = append(levels, c)
		}
	}
	slices.Sort(levels)
	levels = slices.Compact(levels)
	var sc capSchedule
	start, prev := int64(0), 0
	for _, l := range levels {
		if l <= prev {
			continue
		}
		var ms []string // members whose cap is above prev
		for _, m := range base {
			if c, ok := caps[m]; !ok || c > prev {
				ms = append(ms, m)
			}
		}
		n := int64(len(ms)) * int64(l-prev)
		sc.phases = append(sc.phases, capPhase{start: start, n: n, members: ms})
		start += n
		prev = l
	}
	var free []string
	for _, m := range base {
		if _, ok := caps[m]; !ok {
			free = append(free, m)
		}
	}
	if len(free) > 0 {
		sc.phases = append(sc.phases, capPhase{start: start, n: -1, members: free})
	}
	return sc
}

// empty reports a schedule with nobody.
func (sc capSchedule) empty() bool { return len(sc.phases) == 0 }

// full reports whether position pos of the day is past every cap.
func (sc capSchedule) full(pos int64) bool {
	if len(sc.phases) == 0 {
		return true
	}
	last := sc.phases[len(sc.phases)-1]
	return last.n >= 0 && pos >= last.start+last.n
}

// ownerAt is whom position pos of the day goes to; ok false: past every
// cap.
func (sc capSchedule) ownerAt(pos int64) (string, bool) {
	for _, ph := range sc.phases {
		if ph.n < 0 || pos < ph.start+ph.n {
			return ph.members[(pos-ph.start)%int64(len(ph.members))], true
		}
	}
	return "", false
}

// dayNumber is the day of now in loc as days since 1970-01-01.
func dayNumber(now time.Time, loc *time.Location) int64 {
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// zones caches time.LoadLocation, which reads the zone file each call;
// every batch asks for its tenant's.
var zones sync.Map // name → *time.Location

// zoneOf is the routing zone named ("" or unknown: UTC).
func zoneOf(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		l = time.UTC
	}
	zones.Store(name, l)
	return l
}

// away reports whether the user is away at now.
func (u userState) away(now time.Time) bool { return u.awayUntil != nil && u.awayUntil.After(now) }
