package leads

import (
	"strconv"
	"time"
)

// First-response clock states of a lead (docs/ARCHITECTURE.md, "Assignment and first response").
const (
	ClockNone     = ""         // not assigned by a rule: no clock
	ClockRunning  = "running"  // assigned, not answered, due later
	ClockSoon     = "soon"     // due within DueSoonWindow
	ClockOverdue  = "overdue"  // due passed, not answered
	ClockAnswered = "answered" // a person responded (maybe late)
)

// DueSoonWindow is how close "due soon" is; the inbox view of that name
// uses the same window (leads.DueSoonWindow).
const DueSoonWindow = 15 * time.Minute

// Clock is the lead's first-response state at now.
func (l Lead) Clock(now time.Time) string {
	switch {
	case l.FirstResponseDueAt.IsZero():
		return ClockNone
	case !l.FirstRespondedAt.IsZero():
		return ClockAnswered
	case l.FirstResponseDueAt.Before(now):
		return ClockOverdue
	case l.FirstResponseDueAt.Sub(now) < DueSoonWindow:
		return ClockSoon
	}
	return ClockRunning
}

// AnsweredLate reports whether the first response came after its due time.
func (l Lead) AnsweredLate() bool {
	return !l.FirstRespondedAt.IsZero() && l.FirstRespondedAt.After(l.FirstResponseDueAt)
}

// Span is a duration for people, rounded down to what matters: "under a
// minute", "45 min", "1 h 20 min", "3 h", "2 d 4 h".
func Span(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	m := int(d / time.Minute)
	h, m := m/60, m%60
	days, h := h/24, h%24
	switch {
	case days > 0 && h > 0:
		return strconv.Itoa(days) + " d " + strconv.Itoa(h) + " h"
	case days > 0:
		return strconv.Itoa(days) + " d"
	case h > 0 && m > 0:
		return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
	case h > 0:
		return strconv.Itoa(h) + " h"
	case m > 0:
		return strconv.Itoa(m) + " min"
	}
	return "under a minute"
}
