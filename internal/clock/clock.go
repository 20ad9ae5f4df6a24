// Package clock is Leadpipe's one notion of "now". The app injects one
// clock (time.Now in production) into every service's Now field; tests
// inject a fake one. Every service reads it through Read, so all of them
// agree on the zone and the precision the database keeps.
package clock

import "time"

// Read returns now (the wall clock when now is nil) in UTC, truncated to
// the microseconds a DATETIME(6) column holds, so a time written and read
// back compares equal to the one in memory.
func Read(now func() time.Time) time.Time {
	t := time.Now()
	if now != nil {
		t = now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Earlier returns the earlier of a and b.
func Earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Later returns the later of a and b.
func Later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
