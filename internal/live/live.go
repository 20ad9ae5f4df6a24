// Package live carries lead events to open browsers (docs/ARCHITECTURE.md,
// "Live inbox"): a Publisher, used after a commit by whichever process made
// the change (worker or server), hands them to Redis pub/sub on one channel
// per tenant without ever blocking its caller; a Hub in each server process
// receives them and streams them to the tenant's signed-in users as
// Server-Sent Events, keeping a small ring of recent events per tenant so a
// reconnect with Last-Event-ID resumes where it stopped.
package live

import (
	"strings"
	"time"
)

// Event types.
const (
	// Created: a new lead (OwnerID set when a rule assigned it at once).
	Created = "lead.created"
	// Reassigned: a person gave a lead a (new) owner.
	Reassigned = "lead.reassigned"
)

// Event is one change a browser hears about. It carries no more of the
// lead than a notification shows: the page fetches the rest itself.
type Event struct {
	ID      string    `json:"id"` // the SSE id (a ULID, given by the publisher)
	Type    string    `json:"type"`
	LeadID  string    `json:"lead_id"`
	OwnerID string    `json:"owner_id,omitempty"`
	Name    string    `json:"name,omitempty"` // the lead's display name, for a notification
	By      string    `json:"by,omitempty"`   // the user who made the change ("" for the ingest or a token)
	At      time.Time `json:"at"`
}

// channelPrefix names a tenant's Redis pub/sub channel. Pub/sub is global
// to a Redis server (not per database number); tenant ids are ULIDs, so
// two installations sharing one server never share a channel.
const channelPrefix = "leadpipe:live:"

// Channel is tenantID's pub/sub channel.
func Channel(tenantID string) string { return channelPrefix + tenantID }

func tenantOf(channel string) (string, bool) {
	return strings.CutPrefix(channel, channelPrefix)
}
