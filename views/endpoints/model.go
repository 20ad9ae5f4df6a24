// Package endpoints holds the outbound webhook pages: the endpoint list
// with its create form, an endpoint's page (health, settings, secret
// rotation, recover, attempts) and an event's page (payload, attempts,
// replay).
package endpoints

import (
	"net/url"
	"strconv"
	"time"

	"leadpipe/views/components"
	"leadpipe/views/layouts"
)

// EventTypes are the subscribable event types with a line each.
var EventTypes = []struct{ Type, Help string }{
	{"lead.created", "a new lead arrived (webhook, reconcile or by hand)"},
	{"lead.updated", "a sender changed a lead's fields"},
	{"lead.status_changed", "someone moved a lead to another status"},
	{"alert.fired", "an alert fired (duplicate spike, lost webhooks, a disabled endpoint, …)"},
}

// Endpoint is one endpoint as the pages show it.
type Endpoint struct {
	ID, URL, Description string
	Events               []string
	Enabled              bool
	DisabledReason       string
	DisabledAt           *time.Time
	FailingSince         *time.Time
	LastSuccessAt        *time.Time
	LastFailureAt        *time.Time
	LastError            string
	CreatedAt            time.Time
}

// Health is the endpoint's one-word state and its tone.
func (e Endpoint) Health() (string, string) {
	switch {
	case !e.Enabled:
		return "Disabled", components.ToneDanger
	case e.FailingSince != nil:
		return "Failing", components.ToneWarning
	case e.LastSuccessAt == nil:
		return "No deliveries yet", components.ToneNeutral
	}
	return "Healthy", components.ToneSuccess
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Form is the create/edit form's values and errors.
type Form struct {
	URL, Description string
	Events           []string
	Key              string
	Errors           map[string]string
}

// ListView is GET /settings/endpoints.
type ListView struct {
	Page      layouts.Page
	Endpoints []Endpoint
	Form      Form
	NewSecret string // shown once, right after creation
	NewID     string
	Now       time.Time
}

// Attempt is one row of an attempts table.
type Attempt struct {
	ID, EventID, EventType, EndpointID, EndpointURL string
	Attempt                                         int
	At                                              time.Time
	Status                                          *int
	LatencyMS                                       int
	Response, Error, Outcome                        string
}

// StatusText is the HTTP status or a dash.
func (a Attempt) StatusText() string {
	if a.Status == nil {
		return "—"
	}
	return strconv.Itoa(*a.Status)
}

// OutcomeTone colours the outcome badge.
func (a Attempt) OutcomeTone() string {
	switch a.Outcome {
	case "delivered":
		return components.ToneSuccess
	case "refused", "gone":
		return components.ToneDanger
	}
	return components.ToneWarning
}

// DetailView is GET /settings/endpoints/{id}.
type DetailView struct {
	Page         layouts.Page
	Endpoint     Endpoint
	Form         Form
	NewSecret    string // after a rotation
	Attempts     []Attempt
	NextHref     string
	RecoverSince string // datetime-local value offered in "Recover since…"
	RecoverError string
	Now          time.Time
}

// Delivery is one endpoint's delivery of an event.
type Delivery struct {
	EndpointID, EndpointURL, State string
	Attempts                       int
	NextAttemptAt                  time.Time
	LastError                      string
}

// EventView is GET /settings/events/{id}.
type EventView struct {
	Page       layouts.Page
	ID, Type   string
	ResourceID string
	Sequence   int64
	CreatedAt  time.Time
	Payload    string
	Deliveries []Delivery
	Attempts   []Attempt
	Now        time.Time
}

// GraceOptions are the rotation grace periods offered.
func GraceOptions() []components.Option {
	return []components.Option{{Value: "86400", Label: "24 hours (both secrets sign meanwhile)"},
		{Value: "3600", Label: "1 hour"}, {Value: "604800", Label: "7 days"}, {Value: "0", Label: "No: revoke the old secret now"}}
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func latency(ms int) string {
	if ms >= 1000 {
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	}
	return strconv.Itoa(ms) + " ms"
}

// hostOf is the endpoint's host, the page title (a full URL does not wrap
// on a phone).
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "Endpoint"
}

func subtitle(e Endpoint) string {
	if e.Description != "" {
		return e.Description + " · " + e.URL
	}
	return e.URL
}

// triesText is "1 try" / "3 tries".
func triesText(n int) string {
	if n == 1 {
		return "1 try"
	}
	return strconv.Itoa(n) + " tries"
}
