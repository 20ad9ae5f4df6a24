package webhooks

import (
	"context"
	"time"

	"leadpipe/internal/db"
)

// The deliveries table's one row type and its named projections: the
// column lists the reads select into Delivery.

// Delivery is one stored delivery (a row of deliveries). A read fills the
// columns of its projection; the JSON is the person's export of the
// deliveries that reached their lead (internal/privacy).
type Delivery struct {
	TenantID    string     `db:"tenant_id" json:"-"`
	SourceID    string     `db:"source_id" json:"source_id"`
	ID          string     `db:"id" json:"id"`
	DeliveryID  string     `db:"delivery_id" json:"delivery_id"` // the sender's
	Origin      string     `db:"origin" json:"origin"`
	Payload     []byte     `db:"payload" json:"-"`
	ReceivedAt  time.Time  `db:"received_at" json:"received_at"`
	ProcessedAt *time.Time `db:"processed_at" json:"processed_at"`
	LeadID      *string    `db:"lead_id" json:"-"`
	Outcome     *string    `db:"outcome" json:"outcome"` // leads.OutcomeCreated, …, once processed
	Attempts    int        `db:"attempts" json:"-"`
	LastError   *string    `db:"last_error" json:"-"`
	State       string     `db:"state" json:"state"` // StateReceived, StateProcessed, StateFailed
	// Duplicates: arrivals of the same delivery id after this one.
	DupCount    int        `db:"dup_count" json:"duplicates"`
	DupFirstAt  *time.Time `db:"dup_first_at" json:"first_duplicate_at"`
	DupLastAt   *time.Time `db:"dup_last_at" json:"last_duplicate_at"`
	DupsCounted int        `db:"dups_counted" json:"-"` // how many of them leads.times_seen holds
	// PayloadBytes is the payload's length, read where the payload itself
	// is not (summaryCols) or beside it (leadPayloadCols).
	PayloadBytes int `db:"payload_bytes" json:"payload_bytes"`
}

// Projections of Delivery.
const (
	// deliveryCols: the whole row (the worker locks and maps it).
	deliveryCols = `tenant_id, source_id, id, delivery_id, origin, payload, received_at, processed_at, lead_id, attempts, last_error, state,
	dup_count, dup_first_at, dup_last_at, dups_counted`
	// summaryCols (alias d): a delivery as the source pages list it, its
	// payload's size instead of the payload.
	summaryCols = `d.id, d.delivery_id, d.origin, d.received_at, d.processed_at, d.lead_id, d.attempts, d.last_error,
	LENGTH(d.payload) AS payload_bytes, d.dup_count, d.dup_first_at, d.dup_last_at`
	// leadPayloadCols: a delivery that reached a lead, with its payload.
	leadPayloadCols = `id, source_id, delivery_id, origin, state, outcome, received_at, processed_at,
	dup_count, dup_first_at, dup_last_at, payload, LENGTH(payload) AS payload_bytes`
	// listCols: a delivery as the API pages it (ListDeliveries).
	listCols = `id, delivery_id, state, received_at, processed_at, attempts, last_error, lead_id, payload`
	// pendingCols: a delivery the sweeper re-queues.
	pendingCols = `id, received_at, attempts`
)

// PayloadsForLead lists every delivery that reached a lead, oldest first,
// with its payload (index ix_deliveries_lead).
func PayloadsForLead(ctx context.Context, x db.Ext, tenantID, leadID string) ([]Delivery, error) {
	out := []Delivery{}
	err := x.SelectContext(ctx, &out, `SELECT `+leadPayloadCols+`
		FROM deliveries WHERE tenant_id = ? AND lead_id = ? ORDER BY received_at, id`, tenantID, leadID)
	return out, err
}
