package alerts

import (
	"testing"
	"time"
)

// Six alerts of one rule on one source that fired within a minute are one
// group; the same rule on another source, or the same source hours later,
// is another.
func TestGroupAlerts(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var list []Alert
	for i := range 6 { // newest first
		list = append(list, Alert{ID: string(rune('a' + i)), SourceID: "s1", Rule: "duplicate_spike", State: "open", FiredAt: t0.Add(-time.Duration(i) * 10 * time.Second)})
	}
	list = append(list,
		Alert{ID: "x", SourceID: "s2", Rule: "duplicate_spike", State: "open", FiredAt: t0.Add(-time.Minute)},
		Alert{ID: "y", SourceID: "s1", Rule: "silence", State: "open", FiredAt: t0.Add(-2 * time.Minute), AckedAt: t0},
		Alert{ID: "z", SourceID: "s1", Rule: "duplicate_spike", State: "resolved", FiredAt: t0.Add(-5 * time.Hour)},
	)
	g := GroupAlerts(list)
	if len(g) != 4 {
		t.Fatalf("%d groups, want 4: %+v", len(g), g)
	}
	if len(g[0].Alerts) != 6 || g[0].Alerts[0].ID != "a" || g[3].Alerts[0].ID != "z" {
		t.Fatalf("groups %+v", g)
	}
	if ids := Unacked(list); len(ids) != 7 {
		t.Fatalf("unacked %v, want the 7 open ones nobody acknowledged", ids)
	}
}
