package components

import (
	"strconv"
	"time"
)

// relText is the server-side relative time ("5 min ago", "in 2 hours",
// "yesterday", "Mar 3"); app.js recomputes the same words in the browser.
// Dates a week or more away are shown as dates in UTC.
func relText(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 45*time.Second:
		return "just now"
	case d < 90*time.Second:
		s = "1 min"
	case d < 45*time.Minute:
		s = strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 90*time.Minute:
		s = "1 hour"
	case d < 24*time.Hour:
		s = strconv.Itoa(int((d+30*time.Minute)/time.Hour)) + " hours" // 90 min and up: 2 hours
	case d < 48*time.Hour:
		if future {
			return "tomorrow"
		}
		return "yesterday"
	case d < 7*24*time.Hour:
		s = strconv.Itoa(int(d/(24*time.Hour))) + " days"
	default:
		u := t.UTC()
		if u.Year() == now.UTC().Year() {
			return u.Format("Jan 2")
		}
		return u.Format("Jan 2, 2006")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// exactUTC is the unambiguous timestamp shown on hover.
func exactUTC(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ExactTime is an absolute time for people: "Mar 02, 14:05 UTC".
func ExactTime(t time.Time) string {
	return t.UTC().Format("Jan 02, 15:04 MST")
}
