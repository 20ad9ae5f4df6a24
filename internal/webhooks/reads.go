package webhooks

// The read side of the area's tables: deliveries, their duplicate
// arrivals and dead letters, as the source pages and a lead's timeline
// show them. Every method is scoped by tenant and none changes data.

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
)

// Reads reads deliveries, duplicates and dead letters.
type Reads struct {
	DB *sqlx.DB
}

// NewReads returns the read side on d.
func NewReads(d *sqlx.DB) *Reads { return &Reads{DB: d} }

// Recent lists a source's newest deliveries with their duplicate arrivals,
// counted on the row (index ix_deliveries_source_time).
func (s *Reads) Recent(ctx context.Context, tenantID, sourceID string, limit int) ([]Delivery, error) {
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT `+summaryCols+`
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.source_id = ?
		ORDER BY d.received_at DESC, d.id DESC LIMIT ?`, tenantID, sourceID, limit)
	return out, err
}

// Delivery filters of RecentFiltered.
const (
	FilterAll        = ""           // every delivery
	FilterDuplicates = "duplicates" // arrived more than once
	FilterFailing    = "failing"    // processing reported an error
)

// RecentFiltered is Recent narrowed by filter (FilterAll, FilterDuplicates
// or FilterFailing; anything else is FilterAll).
func (s *Reads) RecentFiltered(ctx context.Context, tenantID, sourceID, filter string, limit int) ([]Delivery, error) {
	cond := ""
	switch filter {
	case FilterDuplicates:
		cond = " AND d.dup_count > 0"
	case FilterFailing:
		cond = " AND d.last_error IS NOT NULL"
	default:
		return s.Recent(ctx, tenantID, sourceID, limit)
	}
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT `+summaryCols+`
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.source_id = ?`+cond+`
		ORDER BY d.received_at DESC, d.id DESC LIMIT ?`, tenantID, sourceID, limit)
	return out, err
}

// DuplicatedBetween lists a source's deliveries that arrived again
// between from and to (their first and last repeat overlap the window),
// however old the original, newest first: a range on
// ix_deliveries_dup_last. DuplicatedSummary counts the same rows.
func (s *Reads) DuplicatedBetween(ctx context.Context, tenantID, sourceID string, from, to time.Time, limit int) ([]Delivery, error) {
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT `+summaryCols+`
		FROM deliveries d FORCE INDEX (ix_deliveries_dup_last)
		WHERE d.tenant_id = ? AND d.source_id = ? AND d.dup_last_at >= ? AND d.dup_first_at < ? AND d.dup_count > 0
		ORDER BY d.received_at DESC, d.id DESC LIMIT ?`, tenantID, sourceID, from, to, limit)
	return out, err
}

// DuplicatedSummary counts what DuplicatedBetween lists, without its
// limit: the deliveries that arrived again in the window and their
// repeats.
func (s *Reads) DuplicatedSummary(ctx context.Context, tenantID, sourceID string, from, to time.Time) (deliveries, repeats int64, err error) {
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
func (s *Reads) LastBySource(ctx context.Context, tenantID string) (map[string]time.Time, error) {
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

// DeadLetterShown is a signed request that could not be used, with (the
// start of) its raw body, as a source page shows it.
type DeadLetterShown struct {
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
func (s *Reads) DeadLetters(ctx context.Context, tenantID, sourceID string, limit int) ([]DeadLetterShown, error) {
	var out []DeadLetterShown
	err := s.DB.SelectContext(ctx, &out, `SELECT id, reason, IFNULL(headers, '{}') AS headers,
			SUBSTRING(body, 1, ?) AS body, LENGTH(body) AS size, received_at
		FROM dead_letters WHERE tenant_id = ? AND source_id = ?
		ORDER BY received_at DESC, id DESC LIMIT ?`, MaxDeadLetterBody, tenantID, sourceID, limit)
	return out, err
}

// DeadLetterCount counts a source's dead letters since a time.
func (s *Reads) DeadLetterCount(ctx context.Context, tenantID, sourceID string, since time.Time) (int, error) {
	var n int
	err := s.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ? AND source_id = ? AND received_at >= ?`,
		tenantID, sourceID, since)
	return n, err
}

// ForLead lists the newest deliveries that upserted a lead, each labelled
// with its source's name (sources.Names: one query for the page).
func (s *Reads) ForLead(ctx context.Context, tenantID, leadID string, limit int) ([]leads.LeadDelivery, error) {
	var out []leads.LeadDelivery
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.source_id, d.delivery_id, d.origin, d.received_at, d.outcome
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.lead_id = ? ORDER BY d.received_at DESC LIMIT ?`, tenantID, leadID, limit)
	if err != nil {
		return nil, err
	}
	return out, s.nameSources(ctx, tenantID, len(out), func(i int) (string, *string) { return out[i].SourceID, &out[i].SourceName })
}

// DuplicatesForLead lists a lead's deliveries that arrived again, the
// most recently repeated first.
func (s *Reads) DuplicatesForLead(ctx context.Context, tenantID, leadID string, limit int) ([]leads.LeadDuplicate, error) {
	var out []leads.LeadDuplicate
	err := s.DB.SelectContext(ctx, &out, `SELECT d.id, d.source_id, d.delivery_id, d.dup_count, d.dup_first_at, d.dup_last_at
		FROM deliveries d
		WHERE d.tenant_id = ? AND d.lead_id = ? AND d.dup_count > 0 AND d.dup_first_at IS NOT NULL AND d.dup_last_at IS NOT NULL
		ORDER BY d.dup_last_at DESC LIMIT ?`, tenantID, leadID, limit)
	if err != nil {
		return nil, err
	}
	return out, s.nameSources(ctx, tenantID, len(out), func(i int) (string, *string) { return out[i].SourceID, &out[i].SourceName })
}

// nameSources asks the sources area for the names of n rows' sources and
// sets each row's name; row i gives its source id and where its name goes.
// A row keeps an empty name when the names cannot be read (the error).
func (s *Reads) nameSources(ctx context.Context, tenantID string, n int, row func(int) (string, *string)) error {
	seen := map[string]bool{}
	var ids []string
	for i := 0; i < n; i++ {
		if k, _ := row(i); !seen[k] {
			seen[k] = true
			ids = append(ids, k)
		}
	}
	names, err := sources.Names(ctx, s.DB, tenantID, ids)
	for i := 0; i < n; i++ {
		id, name := row(i)
		*name = names[id]
	}
	return err
}

// ProcessedSince lists a source's deliveries processed into a lead since a
// time, newest first (index ix_deliveries_pending): what a reprocess made.
func (s *Reads) ProcessedSince(ctx context.Context, tenantID, sourceID string, since time.Time, limit int) ([]Delivery, error) {
	var out []Delivery
	err := s.DB.SelectContext(ctx, &out, `SELECT `+summaryCols+`
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
func (s *Reads) RepeatsByLead(ctx context.Context, tenantID string, leadIDs []string) (map[string]int, error) {
	if len(leadIDs) == 0 {
		return map[string]int{}, nil
	}
	return db.KeyValuesIn[int](ctx, s.DB, `SELECT lead_id AS k, SUM(dups_counted) AS v FROM deliveries
		WHERE tenant_id = ? AND lead_id IN (?) AND dups_counted > 0 GROUP BY lead_id`, tenantID, leadIDs)
}

// PendingRefs maps the source's deliveries not yet turned into a lead
// (received: queued or in a backlog; failed) to their natural keys, so
// reconcile never counts a record the webhooks did bring as webhook loss.
// mapRef maps a stored payload to its natural key ("" when it has none).
func PendingRefs(ctx context.Context, x db.Ext, tenantID, sourceID string, mapRef func([]byte) string) (map[string]string, error) {
	var rows []struct {
		State   string `db:"state"`
		Payload []byte `db:"payload"`
	}
	if err := x.SelectContext(ctx, &rows, `SELECT state, payload FROM deliveries
		WHERE tenant_id = ? AND state IN ('received', 'failed') AND source_id = ? LIMIT 20000`, tenantID, sourceID); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		if ref := mapRef(r.Payload); ref != "" {
			if out[ref] != StateReceived {
				out[ref] = r.State
			}
		}
	}
	return out, nil
}
