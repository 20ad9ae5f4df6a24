package monitor

import "time"

// AlertRef is the alert a zoomed chart is about.
type AlertRef struct {
	ID, Rule            string
	FiredAt, ResolvedAt time.Time // ResolvedAt zero: still open
}

// RulesForm is the alert-rules editor on a source's monitoring page, in the
// units people think in (minutes, hours, percentage points). Values are
// kept as typed so a rejected form comes back as it was sent.
type RulesForm struct {
	Values  map[string]string // field name → value
	On      map[string]bool   // rule → enabled
	Errors  map[string]string // field name → message
	Default bool              // the source has no saved rules
}
