package leads

import "time"

// QuickDate is one quick due date of the next-step form: a button that
// saves the next step due then, in the reader's zone.
type QuickDate struct{ Value, Label string }

// Quick due date values (QuickDue reads them back at save time).
const (
	QuickToday    = "today"    // today 17:00
	QuickTomorrow = "tomorrow" // tomorrow 09:00
	QuickMonday   = "monday"   // the coming Monday 09:00
)

// QuickDates are the quick due dates offered at now (in the reader's
// zone): "Today 17:00" only while it is still ahead.
func QuickDates(now time.Time) []QuickDate {
	var out []QuickDate
	if t, _ := QuickDue(QuickToday, now); t.After(now) {
		out = append(out, QuickDate{QuickToday, "Today 17:00"})
	}
	return append(out, QuickDate{QuickTomorrow, "Tomorrow 09:00"}, QuickDate{QuickMonday, "Next Monday"})
}

// QuickDue is the time a quick due date stands for at now, in now's zone.
func QuickDue(v string, now time.Time) (time.Time, bool) {
	y, m, d := now.Date()
	at := func(days, hour int) time.Time { return time.Date(y, m, d+days, hour, 0, 0, 0, now.Location()) }
	switch v {
	case QuickToday:
		return at(0, 17), true
	case QuickTomorrow:
		return at(1, 9), true
	case QuickMonday:
		days := (int(time.Monday) - int(now.Weekday()) + 7) % 7
		if days == 0 {
			days = 7
		}
		return at(days, 9), true
	}
	return time.Time{}, false
}
