package leads

import (
	"testing"
	"time"
)

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		20 * time.Second:              "under a minute",
		45 * time.Minute:              "45 min",
		-45 * time.Minute:             "45 min",
		time.Hour:                     "1 h",
		95 * time.Minute:              "1 h 35 min",
		26 * time.Hour:                "1 d 2 h",
		48*time.Hour + 59*time.Minute: "2 d",
	} {
		if got := Span(d); got != want {
			t.Errorf("Span(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestClock(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	due := func(d time.Duration) Lead {
		return Lead{AssignedAt: now.Add(-time.Hour), FirstResponseDueAt: now.Add(d)}
	}
	answered := due(-10 * time.Minute)
	answered.FirstRespondedAt = now.Add(-5 * time.Minute)
	for name, c := range map[string]struct {
		l    Lead
		want string
		late bool
	}{
		"not assigned by a rule": {Lead{}, ClockNone, false},
		"due later":              {due(time.Hour), ClockRunning, false},
		"due soon":               {due(10 * time.Minute), ClockSoon, false},
		"overdue":                {due(-time.Second), ClockOverdue, false},
		"answered late":          {answered, ClockAnswered, true},
	} {
		if got := c.l.Clock(now); got != c.want || c.l.AnsweredLate() != c.late {
			t.Errorf("%s: %q late=%v, want %q late=%v", name, got, c.l.AnsweredLate(), c.want, c.late)
		}
	}
}
