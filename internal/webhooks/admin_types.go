package webhooks

import "time"

// Delivery states (docs/ARCHITECTURE.md, one webhook from route to lead).
const (
	StateReceived   = "received"
	StateProcessed  = "processed"
	StateFailed     = "failed"
	StateDeadLetter = "dead_letter"
)

// DeliveryItem is one delivery (or dead letter) as the API lists it.
type DeliveryItem struct {
	ID          string     `json:"id"`
	State       string     `json:"state"`
	ReceivedAt  time.Time  `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
	Attempts    int        `json:"attempts"`
	LastError   *string    `json:"last_error"`
	LeadID      *string    `json:"lead_id"`
	Duplicates  int        `json:"duplicates"`
	// PayloadRemoved: the retention purge blanked the raw payload.
	PayloadRemoved bool `json:"payload_removed"`
	// Raw is the stored body (the UI's failed list shows it; the API
	// leaves it out), SenderID the sender's delivery id (UI only).
	Raw      []byte `json:"-"`
	SenderID string `json:"-"`
}

// DeliveryPage is one page of a source's deliveries, newest first.
type DeliveryPage struct {
	Items      []DeliveryItem `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// PreviewItem is how one stored delivery or dead letter maps under a
// proposed config.
type PreviewItem struct {
	DeliveryID string            `json:"delivery_id"`
	State      string            `json:"state"`
	NaturalKey *string           `json:"natural_key"`
	Fields     map[string]string `json:"fields"`
	// EventTime is the sender's time of the record (the kind's event time,
	// a generic source's event_time_path): a newer record wins, an older
	// one changes nothing (docs/ARCHITECTURE.md, record order). null: none, the
	// order of receipt decides.
	EventTime *time.Time `json:"event_time"`
	Error     *string    `json:"error"`
	// SenderID is the sender's own delivery id (the source page shows it;
	// the API's delivery_id is Leadpipe's).
	SenderID string `json:"-"`
}
