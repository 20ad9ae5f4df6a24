package leads

import (
	"testing"
	"time"
)

func TestQuickDue(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	fri := time.Date(2026, 12, 4, 10, 30, 0, 0, ny) // a Friday morning in New York
	for _, c := range []struct {
		v    string
		want time.Time
	}{
		{QuickToday, time.Date(2026, 12, 4, 17, 0, 0, 0, ny)},
		{QuickTomorrow, time.Date(2026, 12, 5, 9, 0, 0, 0, ny)},
		{QuickMonday, time.Date(2026, 12, 7, 9, 0, 0, 0, ny)},
	} {
		if got, ok := QuickDue(c.v, fri); !ok || !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.v, got, c.want)
		}
	}
	mon := time.Date(2026, 12, 7, 18, 0, 0, 0, ny)
	if got, _ := QuickDue(QuickMonday, mon); !got.Equal(time.Date(2026, 12, 14, 9, 0, 0, 0, ny)) {
		t.Errorf("next Monday on a Monday: %v", got)
	}
	if qs := QuickDates(mon); len(qs) != 2 || qs[0].Value != QuickTomorrow {
		t.Errorf("after 17:00 today is not offered: %v", qs)
	}
	if qs := QuickDates(fri); len(qs) != 3 || qs[0].Label != "Today 17:00" {
		t.Errorf("quick dates on a Friday morning: %v", qs)
	}
	if _, ok := QuickDue("someday", fri); ok {
		t.Error("an unknown quick date")
	}
}
