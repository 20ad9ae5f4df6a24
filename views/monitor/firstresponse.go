package monitor

import (
	"time"

	"leadpipe/views/components"
)

// FirstResponseView is the monitor page's first-response section: the
// median time to first response per day, per owner, and the sla_breach
// rule with its editor.
type FirstResponseView struct {
	Days      int // 14 or 30
	Chart     components.DurationChartData
	Responded int64
	Median    time.Duration
	Overdue   int64
	Owners    []OwnerRow
	Rule      string    // the sla_breach rule in words
	Form      RulesForm // its editor: sla_enabled, sla_min_overdue, sla_for_minutes
	Alerting  bool      // an sla_breach alert is open
	ZoneName  string    // the days are the reader's
}

// OwnerRow is one owner's first responses over the period and their
// overdue leads now.
type OwnerRow struct {
	ID, Name, Href string
	Responded      int64
	Median         time.Duration
	Overdue        int64
}

var frDays = []struct {
	N     int
	Label string
}{{14, "14 days"}, {30, "30 days"}}

func frDaysHref(n int) string {
	if n == 30 {
		return "/monitor#first-response"
	}
	return "/monitor?fr_days=14#first-response"
}
