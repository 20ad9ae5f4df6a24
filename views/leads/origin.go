package leads

import "time"

// Origin is where a lead came from and what its person agreed to
// (web forms: docs/FORMS.md), for the lead page's "Where this lead came
// from" card. Nil: nothing known.
type Origin struct {
	Campaign    string // the last touch's campaign, else the first's
	First, Last []TouchItem
	FirstAt     *time.Time
	LastAt      *time.Time
	Consents    []ConsentItem
}

// TouchItem is one attribution value with the words a salesperson reads.
type TouchItem struct{ Label, Value string }

// ConsentItem is one consent record.
type ConsentItem struct {
	Purpose, Text string
	Granted       bool
	At            time.Time
}

// touchLabels are the attribution keys in the order shown, with labels.
var touchLabels = []TouchItem{
	{"Source", "utm_source"}, {"Medium", "utm_medium"}, {"Campaign", "utm_campaign"}, {"Keyword", "utm_term"},
	{"Ad content", "utm_content"}, {"Google click", "gclid"}, {"Facebook click", "fbclid"}, {"LinkedIn click", "li_fat_id"},
	{"Came from", "referrer"}, {"Landing page", "landing_page"},
}

// Touch turns a stored touch into the rows shown and its time.
func Touch(t map[string]string) ([]TouchItem, *time.Time) {
	var out []TouchItem
	for _, l := range touchLabels {
		if v := t[l.Value]; v != "" {
			out = append(out, TouchItem{Label: l.Label, Value: v})
		}
	}
	var at *time.Time
	if ts, err := time.Parse(time.RFC3339Nano, t["at"]); err == nil {
		at = &ts
	}
	return out, at
}
