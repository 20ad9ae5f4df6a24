// Package leads holds leads: the sender-owned fields refreshed by every
// webhook delivery and reconcile, and the human-owned fields (status,
// owner, notes, tags, version) that only people change.
package leads

import (
	"encoding/json"
	"time"
)

// Statuses a human can set.
var Statuses = []string{"new", "contacted", "qualified", "unqualified", "won", "lost"}

// ValidStatus reports whether s is a status.
func ValidStatus(s string) bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Lead is one lead row.
type Lead struct {
	TenantID        string          `db:"tenant_id" json:"-"`
	ID              string          `db:"id" json:"id"`
	SourceID        string          `db:"source_id" json:"source_id"`
	SourceRef       string          `db:"source_ref" json:"source_ref"`
	Payload         json.RawMessage `db:"payload" json:"payload"`
	Email           string          `db:"email" json:"email"`
	Name            string          `db:"name" json:"name"`
	Phone           string          `db:"phone" json:"phone"`
	Company         string          `db:"company" json:"company"`
	SourceCreatedAt *time.Time      `db:"source_created_at" json:"source_created_at"`
	LastSeenAt      time.Time       `db:"last_seen_at" json:"last_seen_at"`
	TimesSeen       int             `db:"times_seen" json:"times_seen"`
	Status          string          `db:"status" json:"status"`
	OwnerID         *string         `db:"owner_id" json:"owner_id"`
	Tags            Tags            `db:"tags" json:"tags"`
	NextStep        string          `db:"next_step" json:"next_step"`
	DueAt           *time.Time      `db:"due_at" json:"due_at"`
	Version         int             `db:"version" json:"version"`
	CreatedAt       time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at" json:"updated_at"`
	// The first-response clock (docs/ARCHITECTURE.md, "Assignment and first response"): when a rule assigned the
	// lead, when a first response is due, when a person first responded.
	AssignedAt         *time.Time `db:"assigned_at" json:"assigned_at"`
	FirstResponseDueAt *time.Time `db:"first_response_due_at" json:"first_response_due_at"`
	FirstRespondedAt   *time.Time `db:"first_responded_at" json:"first_responded_at"`
	// MergedInto is the survivor a merged lead was merged into
	// (docs/ARCHITECTURE.md, "Merged leads"); a merged lead has status
	// StatusMerged and is in no list.
	MergedInto *string `db:"merged_into" json:"merged_into,omitempty"`
}

// StatusMerged is the status of a merged lead: no person sets it, and no
// list's status range holds it (merge.go keeps the lead's own status in
// its merge record for an unmerge).
const StatusMerged = "merged"

// statusNew is the status every lead is created with.
const statusNew = "new"

// SenderRecord is what a sender (webhook or reconcile) says about a lead:
// only sender-owned fields.
type SenderRecord struct {
	SourceRef string
	Email     string
	Name      string
	// FirstName and LastName are the parts of the name where the sender
	// sends them apart (HubSpot's firstname and lastname, one event each):
	// a record with a part changes that part of the lead's name and keeps
	// the other (senderState.apply); Name is then not read.
	FirstName string
	LastName  string
	Phone     string
	Company   string
	CreatedAt *time.Time
	Tags      []string // initial tags of a new lead only (e.g. "test")
	Payload   json.RawMessage
	// Sightings is what the record adds to times_seen: a webhook delivery 1
	// plus its duplicates, reconcile and enrichment 0.
	Sightings int
	// OrderKey orders records of one lead (see OrderKey); "" means now.
	OrderKey string
}
