// Package deliveries is the webhooks area's read side of its tables:
// deliveries, their duplicate arrivals and dead letters, as the source
// pages and a lead's timeline show them. Every method is scoped by tenant
// and none changes data (the ingest path in package webhooks writes), but
// for the erasure's blanking of a person's payloads (erase.go).
//
// It is a package of its own, not part of package webhooks, because the
// web layer and the leads timeline read through it and package webhooks
// imports both.
package deliveries

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Store reads deliveries, duplicates and dead letters.
type Store struct {
	DB *sqlx.DB
}

// NewStore returns a store on d.
func NewStore(d *sqlx.DB) *Store { return &Store{DB: d} }

// Delivery is one stored delivery with how often it arrived again.
type Delivery struct {
	ID               string     `db:"id"`
	DeliveryID       string     `db:"delivery_id"`
	Origin           string     `db:"origin"`
	ReceivedAt       time.Time  `db:"received_at"`
	ProcessedAt      *time.Time `db:"processed_at"`
	LeadID           *string    `db:"lead_id"`
	Attempts         int        `db:"attempts"`
	LastError        *string    `db:"last_error"`
	Size             int        `db:"size"`
	Duplicates       int        `db:"duplicates"`
	FirstDuplicateAt *time.Time `db:"first_duplicate_at"`
	LastDuplicateAt  *time.Time `db:"last_duplicate_at"`
}

// Recent lists a source's newest deliveries with their duplicate arrivals,
// counted on the row (index ix_deliveries_source_time).
func (s *Store) Recent(ctx context.Context, tenantID, sourceID string, limit int) ([]Delivery, error) {
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.delivery_id, d.origin, d.received_at, d.processed_at, d.lead_id,
			d.attempts, d.last_error, LENGTH(d.payload) AS size,
			d.dup_count AS duplicates, d.dup_first_at AS first_duplicate_at, d.dup_last_at AS last_duplicate_at
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.source_id = ?
		ORDER BY d.received_at DESC, d.id DESC LIMIT ?`, tenantID, sourceID, limit)
	return out, err
}

// DuplicatedBetween lists a source's deliveries that arrived again
// between from and to (their first and last repeat overlap the window),
// however old the original, newest first: a range on
// ix_deliveries_dup_last. DuplicatedSummary counts the same rows.
func (s *Store) DuplicatedBetween(ctx context.Context, tenantID, sourceID string, from, to time.Time, limit int) ([]Delivery, error) {
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.delivery_id, d.origin, d.received_at, d.processed_at, d.lead_id,
			d.attempts, d.last_error, LENGTH(d.payload) AS size,
			d.dup_count AS duplicates, d.dup_first_at AS first_duplicate_at, d.dup_last_at AS last_duplicate_at
		FROM deliveries d FORCE INDEX (ix_deliveries_dup_last)
		WHERE d.tenant_id = ? AND d.source_id = ? AND d.dup_last_at >= ? AND d.dup_first_at < ? AND d.dup_count > 0
		ORDER BY d.received_at DESC, d.id DESC LIMIT ?`, tenantID, sourceID, from, to, limit)
	return out, err
}

// DuplicatedSummary counts what DuplicatedBetween lists, without its
// limit: the deliveries that arrived again in the window and their
// repeats.
func (s *Store) DuplicatedSummary(ctx context.Context, tenantID, sourceID string, from, to time.Time) (deliveries, repeats int64, err error) {
	var row struct {
		N       int64 `db:"n"`
		Repeats int64 `db:"repeats"`
	}
	err = s.DB.GetContext(ctx, &row, `SELECT COUNT(*) AS n, COALESCE(SUM(d.dup_count), 0) AS repeats
		FROM deliveries d FORCE INDEX (ix_deliveries_dup_last)
		WHERE d.tenant_id = ? AND d.source_id = ? AND d.dup_last_at >= ? AND d.dup_first_at < ? AND d.dup_count > 0`,
		tenantID, sourceID, from, to)
	return row.N, row.Repeats, err
}

// LastBySource returns when each of the tenant's sources last received a
// delivery; MAX per group prefix is a loose index scan of
// ix_deliveries_source_time, one index dive per source.
func (s *Store) LastBySource(ctx context.Context, tenantID string) (map[string]time.Time, error) {
	var rows []struct {
		SourceID string    `db:"source_id"`
		Last     time.Time `db:"last"`
	}
	err := s.DB.SelectContext(ctx, &rows, `SELECT source_id, MAX(received_at) AS last FROM deliveries
		WHERE tenant_id = ? GROUP BY tenant_id, source_id`, tenantID)
	out := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		out[r.SourceID] = r.Last
	}
	return out, err
}

// DeadLetter is a signed request that could not be used, with (the start
// of) its raw body.
type DeadLetter struct {
	ID         string    `db:"id"`
	Reason     string    `db:"reason"`
	Headers    []byte    `db:"headers"`
	Body       []byte    `db:"body"`
	Size       int       `db:"size"`
	ReceivedAt time.Time `db:"received_at"`
}

// MaxDeadLetterBody is how much of a dead letter's body a page shows.
const MaxDeadLetterBody = 64 << 10

// DeadLetters lists a source's newest dead letters.
func (s *Store) DeadLetters(ctx context.Context, tenantID, sourceID string, limit int) ([]DeadLetter, error) {
	var out []DeadLetter
	err := s.DB.SelectContext(ctx, &out, `SELECT id, reason, IFNULL(headers, '{}') AS headers,
			SUBSTRING(body, 1, ?) AS body, LENGTH(body) AS size, received_at
		FROM dead_letters WHERE tenant_id = ? AND source_id = ?
		ORDER BY received_at DESC, id DESC LIMIT ?`, MaxDeadLetterBody, tenantID, sourceID, limit)
	return out, err
}

// DeadLetterCount counts a source's dead letters since a time.
func (s *Store) DeadLetterCount(ctx context.Context, tenantID, sourceID string, since time.Time) (int, error) {
	var n int
	err := s.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ? AND source_id = ? AND received_at >= ?`,
		tenantID, sourceID, since)
	return n, err
}

// LeadDelivery is a delivery that reached a lead, with its source's name
// (nil when the source is gone).
type LeadDelivery struct {
	ID         string    `db:"id"`
	SourceID   string    `db:"source_id"`
	DeliveryID string    `db:"delivery_id"`
	Origin     string    `db:"origin"`
	ReceivedAt time.Time `db:"received_at"`
	Outcome    *string   `db:"outcome"` // created | updated | unchanged | stale, once processed
	SourceName *string   `db:"source_name"`
}

// ForLead lists the newest deliveries that upserted a lead. The source's
// name is joined here (one query) rather than looked up per row.
func (s *Store) ForLead(ctx context.Context, tenantID, leadID string, limit int) ([]LeadDelivery, error) {
	var out []LeadDelivery
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.source_id, d.delivery_id, d.origin, d.received_at, d.outcome,
			s.name AS source_name
		FROM deliveries d LEFT JOIN sources s ON s.tenant_id = d.tenant_id AND s.id = d.source_id
		WHERE d.tenant_id = ? AND d.lead_id = ? ORDER BY d.received_at DESC LIMIT ?`, tenantID, leadID, limit)
	return out, err
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
	SourceName *string   `db:"source_name"`
}

// DuplicatesForLead lists a lead's deliveries that arrived again, the
// most recently repeated first.
func (s *Store) DuplicatesForLead(ctx context.Context, tenantID, leadID string, limit int) ([]LeadDuplicate, error) {
	var out []LeadDuplicate
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.source_id, d.delivery_id, d.dup_count, d.dup_first_at, d.dup_last_at,
			s.name AS source_name
		FROM deliveries d
		LEFT JOIN sources s ON s.tenant_id = d.tenant_id AND s.id = d.source_id
		WHERE d.tenant_id = ? AND d.lead_id = ? AND d.dup_count > 0 AND d.dup_first_at IS NOT NULL AND d.dup_last_at IS NOT NULL
		ORDER BY d.dup_last_at DESC LIMIT ?`, tenantID, leadID, limit)
	return out, err
}

// ProcessedSince lists a source's deliveries processed into a lead since a
// time, newest first (index ix_deliveries_pending): what a reprocess made.
func (s *Store) ProcessedSince(ctx context.Context, tenantID, sourceID string, since time.Time, limit int) ([]Delivery, error) {
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.delivery_id, d.origin, d.received_at, d.processed_at, d.lead_id,
			d.attempts, d.last_error, LENGTH(d.payload) AS size,
			d.dup_count AS duplicates, d.dup_first_at AS first_duplicate_at, d.dup_last_at AS last_duplicate_at
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.processed_at >= ? AND d.source_id = ? AND d.lead_id IS NOT NULL AND d.last_error IS NULL
		ORDER BY d.processed_at DESC, d.id DESC LIMIT ?`, tenantID, since.UTC(), sourceID, limit)
	return out, err
}

// RepeatsByLead sums, per lead, the repeats of its deliveries that the
// lead's times_seen already holds (dups_counted), so a lead's sightings
// split as times_seen = deliveries + repeats on every page that shows
// them (components.SightingsText). One query for a page of leads, on
// ix_deliveries_lead; leads without repeats are absent.
func (s *Store) RepeatsByLead(ctx context.Context, tenantID string, leadIDs []string) (map[string]int, error) {
	out := map[string]int{}
	if len(leadIDs) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT lead_id, SUM(dups_counted) AS n FROM deliveries
		WHERE tenant_id = ? AND lead_id IN (?) AND dups_counted > 0 GROUP BY lead_id`, tenantID, leadIDs)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		LeadID string `db:"lead_id"`
		N      int    `db:"n"`
	}
	if err := s.DB.SelectContext(ctx, &rows, s.DB.Rebind(q), args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.LeadID] = r.N
	}
	return out, nil
}
