package components

import (
	"context"
	"strconv"
	"time"
)

type zoneKey struct{}

// WithZone makes loc the reader's time zone for everything rendered with
// ctx: relative times, their exact hover text and dates (the web layer sets
// the signed-in user's own zone).
func WithZone(ctx context.Context, loc *time.Location) context.Context {
	return context.WithValue(ctx, zoneKey{}, loc)
}

// Zone is the reader's time zone, UTC when none was set.
func Zone(ctx context.Context) *time.Location {
	if loc, ok := ctx.Value(zoneKey{}).(*time.Location); ok && loc != nil {
		return loc
	}
	return time.UTC
}

// ExactIn is the unambiguous time in the reader's zone: "2026-03-02 09:05 EST".
func ExactIn(ctx context.Context, t time.Time) string {
	return t.In(Zone(ctx)).Format("2006-01-02 15:04 MST")
}

// relText is the server-side relative time ("5 min ago", "in 2 hours",
// "yesterday", "Mar 3"); app.js recomputes the same words in the browser.
// Dates a week or more away are shown as dates in t's location.
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
		u := t
		if u.Year() == now.In(t.Location()).Year() {
			return u.Format("Jan 2")
		}
		return u.Format("Jan 2, 2006")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// ExactTime is an absolute time for people, in the reader's zone:
// "Mar 02, 09:05 EST".
func ExactTime(ctx context.Context, t time.Time) string {
	return t.In(Zone(ctx)).Format("Jan 02, 15:04 MST")
}
