package leads

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"leadpipe/internal/db"
)

// Timeline entry kinds that come from the ingest tables rather than
// lead_events.
const (
	EventDelivery  = "delivery"  // a webhook delivery that reached this lead
	EventDuplicate = "duplicate" // a re-delivery of one of those deliveries
	EventReconcile = "reconcile" // a record a reconcile run pulled
	EventStale     = "stale"     // a record older than the lead's data: counted, not applied
)

// timelineCap bounds each part of the timeline: a lead retried thousands of
// times by a broken sender still answers quickly.
const timelineCap = 1000

// TimelineEntry is one thing that happened to a lead, with who and when.
type TimelineEntry struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	At        time.Time `json:"at"`
	ActorID   *string   `json:"actor_id"`   // the user, for people's changes
	ActorName string    `json:"actor_name"` // user or API token name, or the source's name
	// Deliveries and duplicates: the source, Leadpipe's id of the stored
	// delivery and the sender's own delivery id.
	SourceID         string          `json:"source_id,omitempty"`
	DeliveryID       string          `json:"delivery_id,omitempty"`
	SenderDeliveryID string          `json:"sender_delivery_id,omitempty"`
	Detail           json.RawMessage `json:"detail"`
	// Duplicates: how many times the delivery arrived again, first and
	// last time.
	Count   int        `json:"count,omitempty"`
	FirstAt *time.Time `json:"first_at,omitempty"`
	LastAt  *time.Time `json:"last_at,omitempty"`
}

// DeliveryLog is what the timeline reads of the deliveries that reached a
// lead; the webhooks area, which owns those tables, implements it
// (webhooks.Reads).
type DeliveryLog interface {
	ForLead(ctx context.Context, tenantID, leadID string, limit int) ([]LeadDelivery, error)
	DuplicatesForLead(ctx context.Context, tenantID, leadID string, limit int) ([]LeadDuplicate, error)
}

// LeadDelivery is a delivery that reached a lead, with its source's name
// ("" when the source is gone).
type LeadDelivery struct {
	ID         string    `db:"id"`
	SourceID   string    `db:"source_id"`
	DeliveryID string    `db:"delivery_id"`
	Origin     string    `db:"origin"`
	ReceivedAt time.Time `db:"received_at"`
	Outcome    *string   `db:"outcome"` // created | updated | unchanged | stale, once processed
	SourceName string    `db:"-"`
}

// LeadDuplicate is the duplicates of one of a lead's deliveries: counted
// on the delivery, with first and last arrival.
type LeadDuplicate struct {
	DeliveryID string    `db:"id"`          // Leadpipe's id of the original delivery
	SourceID   string    `db:"source_id"`   //
	SenderID   string    `db:"delivery_id"` // the sender's delivery id
	Count      int       `db:"dup_count"`
	FirstAt    time.Time `db:"dup_first_at"`
	LastAt     time.Time `db:"dup_last_at"`
	SourceName string    `db:"-"`
}

// Timeline merges the lead's events (people's changes, notes, reconcile
// touches), the deliveries that upserted it and their duplicates, newest
// first. Another tenant's lead is 404.
func (s *Service) Timeline(ctx context.Context, tenantID, leadID string) ([]TimelineEntry, error) {
	// A survivor's timeline is its group's (merge.go): its own and that of
	// every lead merged into it, whose entries keep their own rows.
	group, err := s.existingGroup(ctx, tenantID, leadID)
	if err != nil {
		return nil, err
	}
	var events []eventRow
	var dels []LeadDelivery
	var dups []LeadDuplicate
	for _, id := range group {
		ev, err := eventsOf(ctx, s.DB, tenantID, id, timelineCap)
		if err != nil {
			return nil, err
		}
		if id != leadID {
			// The survivor's own "merged" entry says it; the merged lead's
			// "merged into" would say it twice.
			ev = slices.DeleteFunc(ev, func(e eventRow) bool { return e.Kind == EventMergedInto })
		}
		ds, err := s.Deliveries.ForLead(ctx, tenantID, id, timelineCap)
		if err != nil {
			return nil, err
		}
		du, err := s.Deliveries.DuplicatesForLead(ctx, tenantID, id, timelineCap)
		if err != nil {
			return nil, err
		}
		events, dels, dups = append(events, ev...), append(dels, ds...), append(dups, du...)
	}
	assignedEntries, err := assignmentEntries(ctx, s.DB, tenantID, group)
	if err != nil {
		return nil, err
	}

	out := make([]TimelineEntry, 0, len(events)+len(dels)+len(dups)+len(assignedEntries))
	out = append(out, assignedEntries...)
	for _, e := range events {
		t := TimelineEntry{ID: e.ID, Kind: e.Kind, At: e.At, ActorID: e.ActorID, ActorName: e.ActorName, Detail: json.RawMessage("null")}
		if e.Detail != nil {
			t.Detail = json.RawMessage(*e.Detail)
		}
		out = append(out, t)
	}
	for _, d := range dels {
		// Every stored delivery is a webhook's (reconcile and enrichment
		// write lead events, not deliveries).
		kind := EventDelivery
		m := map[string]string{"origin": d.Origin}
		if d.Outcome != nil {
			m["outcome"] = *d.Outcome
			if *d.Outcome == OutcomeStale {
				// Older than the lead's data: counted, not applied.
				kind = EventStale
				m["note"] = "older than the current data, not applied"
			}
		}
		detail, _ := json.Marshal(m)
		out = append(out, TimelineEntry{ID: d.ID, Kind: kind, At: d.ReceivedAt, ActorName: nameOr(d.SourceName, d.Origin),
			SourceID: d.SourceID, DeliveryID: d.ID, SenderDeliveryID: d.DeliveryID, Detail: detail})
	}
	for _, d := range dups {
		first, last := d.FirstAt, d.LastAt
		out = append(out, TimelineEntry{ID: d.DeliveryID + "-dup", Kind: EventDuplicate, At: d.LastAt, ActorName: nameOr(d.SourceName, "webhook"),
			SourceID: d.SourceID, DeliveryID: d.DeliveryID, SenderDeliveryID: d.SenderID, Detail: json.RawMessage("null"),
			Count: d.Count, FirstAt: &first, LastAt: &last})
	}
	// Newest first; ties (same microsecond) by id, which is time-ordered,
	// except that a lead's assignment comes after its creation.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.After(out[j].At)
		}
		if (out[i].Kind == EventAssigned) != (out[j].Kind == EventAssigned) {
			return out[i].Kind == EventAssigned
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// assignmentEntries are the "assigned" entries of leads (a lead and those
// merged into it): whom a rule gave each and which rule, kept on the
// lead's row by the statement that created it (Insert, insertManual), the
// owner's name as it is now.
func assignmentEntries(ctx context.Context, x db.Ext, tenantID string, leadIDs []string) ([]TimelineEntry, error) {
	var rows []struct {
		LeadID   string    `db:"id"`
		At       time.Time `db:"assigned_at"`
		OwnerID  *string   `db:"assigned_owner_id"`
		RuleID   string    `db:"assigned_rule_id"`
		RuleName *string   `db:"assigned_rule_name"`
	}
	if err := db.SelectIn(ctx, x, &rows, `SELECT id, assigned_at, assigned_owner_id, assigned_rule_id, assigned_rule_name FROM leads
		WHERE tenant_id = ? AND id IN (?) AND assigned_rule_id IS NOT NULL AND assigned_at IS NOT NULL`, tenantID, leadIDs); err != nil || len(rows) == 0 {
		return nil, err
	}
	var owners []string
	for _, r := range rows {
		if r.OwnerID != nil {
			owners = append(owners, *r.OwnerID)
		}
	}
	users, err := activeUsers(ctx, x, tenantID, owners)
	if err != nil {
		return nil, err
	}
	out := make([]TimelineEntry, 0, len(rows))
	for _, r := range rows {
		owner, rule := "", ""
		if r.OwnerID != nil {
			owner = *r.OwnerID
		}
		if r.RuleName != nil {
			rule = *r.RuleName
		}
		name := nameOr(users[owner].name, "a former user")
		detail, err := json.Marshal(map[string]string{"owner_id": owner, "owner_name": name, "rule_id": r.RuleID, "rule_name": rule,
			"message": "assigned to " + name + " by rule " + rule})
		if err != nil {
			return nil, err
		}
		out = append(out, TimelineEntry{ID: r.LeadID + "-assigned", Kind: EventAssigned, At: r.At, ActorName: "rule " + rule, Detail: detail})
	}
	return out, nil
}

func nameOr(name string, fallback string) string {
	if name != "" {
		return name
	}
	return fallback
}
