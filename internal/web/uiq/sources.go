// Package uiq holds the web UI's read-only queries over tables other areas
// write (deliveries, dead letters): what admin pages list, scoped by tenant
// like every store method, and nothing that changes data.
package uiq

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Delivery is one stored delivery with how often it arrived again.
type Delivery struct {
	ID              string     `db:"id"`
	DeliveryID      string     `db:"delivery_id"`
	Origin          string     `db:"origin"`
	ReceivedAt      time.Time  `db:"received_at"`
	ProcessedAt     *time.Time `db:"processed_at"`
	LeadID          *string    `db:"lead_id"`
	Attempts        int        `db:"attempts"`
	LastError       *string    `db:"last_error"`
	Size            int        `db:"size"`
	Duplicates      int        `db:"duplicates"`
	LastDuplicateAt *time.Time `db:"last_duplicate_at"`
}

// RecentDeliveries lists a source's newest deliveries with their duplicate
// arrivals (index ix_deliveries_source_time, then ix_dups_delivery).
func RecentDeliveries(ctx context.Context, x sqlx.QueryerContext, tenantID, sourceID string, limit int) ([]Delivery, error) {
	var out []Delivery
	err := sqlx.SelectContext(ctx, x, &out, `SELECT d.id, d.delivery_id, d.origin, d.received_at, d.processed_at, d.lead_id,
			d.attempts, d.last_error, LENGTH(d.payload) AS size,
			(SELECT COUNT(*) FROM delivery_duplicates x WHERE x.tenant_id = d.tenant_id AND x.delivery_row_id = d.id) AS duplicates,
			(SELECT MAX(x.received_at) FROM delivery_duplicates x WHERE x.tenant_id = d.tenant_id AND x.delivery_row_id = d.id) AS last_duplicate_at
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.source_id = ?
		ORDER BY d.received_at DESC, d.id DESC LIMIT ?`, tenantID, sourceID, limit)
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
func DeadLetters(ctx context.Context, x sqlx.QueryerContext, tenantID, sourceID string, limit int) ([]DeadLetter, error) {
	var out []DeadLetter
	err := sqlx.SelectContext(ctx, x, &out, `SELECT id, reason, IFNULL(headers, '{}') AS headers,
			SUBSTRING(body, 1, ?) AS body, LENGTH(body) AS size, received_at
		FROM dead_letters WHERE tenant_id = ? AND source_id = ?
		ORDER BY received_at DESC, id DESC LIMIT ?`, MaxDeadLetterBody, tenantID, sourceID, limit)
	return out, err
}

// LastDeliveries returns when each of the tenant's sources last received a
// delivery; MAX per group prefix is a loose index scan of
// ix_deliveries_source_time, one index dive per source.
func LastDeliveries(ctx context.Context, x sqlx.QueryerContext, tenantID string) (map[string]time.Time, error) {
	var rows []struct {
		SourceID string    `db:"source_id"`
		Last     time.Time `db:"last"`
	}
	err := sqlx.SelectContext(ctx, x, &rows, `SELECT source_id, MAX(received_at) AS last FROM deliveries
		WHERE tenant_id = ? GROUP BY tenant_id, source_id`, tenantID)
	out := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		out[r.SourceID] = r.Last
	}
	return out, err
}

// DeadLetterCount counts a source's dead letters since a time.
func DeadLetterCount(ctx context.Context, x sqlx.QueryerContext, tenantID, sourceID string, since time.Time) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, x, &n, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ? AND source_id = ? AND received_at >= ?`,
		tenantID, sourceID, since)
	return n, err
}
