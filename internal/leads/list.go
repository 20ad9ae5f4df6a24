package leads

import (
	"context"
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/ids"
)

// Page sizes of GET /api/v1/leads.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// OwnerNone as Filter.OwnerID lists unassigned leads.
const OwnerNone = "none"

// SourceManual as Filter.SourceID lists leads people created.
const SourceManual = "manual"

// Filter selects leads; every field is optional.
type Filter struct {
	Status   string
	SourceID string // a source id, or SourceManual
	OwnerID  string // a user id, or OwnerNone
	Q        string // search: word prefixes of name, email, company
	// AnyStatus narrows to these statuses when Status is empty (the open
	// statuses of "My open leads").
	AnyStatus []string
	DueBefore *time.Time // only leads with a due date before this
	// ByDue lists by due date, earliest first, instead of newest first (a
	// to-do list of follow-ups; leads without a due date are left out). A
	// search (Q) ignores it and lists newest first.
	ByDue bool
	// SLA narrows to unanswered assigned leads: SLAOverdue (first response
	// due before now) or SLADueSoon (due within the next 15 minutes).
	SLA    string
	Limit  int    // 1..200, default 50 (larger values are capped)
	Cursor string // next_cursor of the previous page

	// Duplicates narrows to leads with a possible duplicate: another lead
	// of the tenant with the same normalized email or phone (docs/ARCHITECTURE.md, "Merged leads").
	Duplicates bool

	slaNow time.Time // "now" of SLA (the service's clock)
}

// SLA filters (docs/ARCHITECTURE.md, "Assignment and first response").
const (
	SLAOverdue = "overdue"
	SLADueSoon = "due_soon"
	// DueSoonWindow is how far ahead due_soon looks.
	DueSoonWindow = 15 * time.Minute
)

// Page is one page of leads, newest first.
type Page struct {
	Items      []Lead
	NextCursor string // "" on the last page
}

// Cursors are opaque to clients: the last id of the page, base64url (with
// its due date when the list is ByDue). Keyset pagination on the primary
// key (ULIDs sort by creation time) never repeats or skips a lead when
// leads arrive between page fetches, and a deep page costs the same as the
// first.
type cursor struct {
	id  string    // "" from the start
	due time.Time // ByDue lists: the last lead's due date
}

func encodeCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func encodeDueCursor(due time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(due.UTC().Format(time.RFC3339Nano) + "|" + id))
}

// CursorFor returns the cursor of the page that follows the lead id (links
// and benchmarks that start mid-list).
func CursorFor(id string) string { return encodeCursor(id) }

func decodeCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !ids.Valid(string(b)) {
		return "", false
	}
	return string(b), true
}

func decodeDueCursor(c string) (cursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return cursor{}, false
	}
	at, id, ok := strings.Cut(string(b), "|")
	if !ok || !ids.Valid(id) {
		return cursor{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	return cursor{id: id, due: t}, err == nil
}

// normalize validates f (422 naming the bad parameters) and returns where
// the page starts.
func (f *Filter) normalize() (after cursor, err error) {
	bad := map[string]string{}
	if f.Status != "" && !ValidStatus(f.Status) {
		bad["status"] = "must be one of " + strings.Join(Statuses, ", ")
	}
	for _, st := range f.AnyStatus {
		if !ValidStatus(st) {
			bad["status"] = "must be one of " + strings.Join(Statuses, ", ")
		}
	}
	if f.SourceID != "" && f.SourceID != SourceManual && !ids.Valid(f.SourceID) {
		bad["source"] = "must be a source id or \"manual\""
	}
	if f.OwnerID != "" && f.OwnerID != OwnerNone && !ids.Valid(f.OwnerID) {
		bad["owner"] = "must be a user id or \"none\""
	}
	if f.SLA != "" && f.SLA != SLAOverdue && f.SLA != SLADueSoon {
		bad["sla"] = "must be overdue or due_soon"
	}
	if f.SLA != "" && f.slaNow.IsZero() {
		f.slaNow = time.Now()
	}
	f.Q = strings.TrimSpace(f.Q)
	if f.Q != "" {
		f.ByDue = false // a search lists newest first
	}
	if utf8.RuneCountInString(f.Q) > maxQLen {
		bad["q"] = "is too long (at most 100 characters)"
	}
	switch {
	case f.Limit == 0:
		f.Limit = defaultLimit
	case f.Limit < 0:
		bad["limit"] = "must be between 1 and 200"
	case f.Limit > maxLimit:
		f.Limit = maxLimit
	}
	if f.Cursor != "" {
		var ok bool
		if f.ByDue {
			after, ok = decodeDueCursor(f.Cursor)
		} else {
			after.id, ok = decodeCursor(f.Cursor)
		}
		if !ok {
			bad["cursor"] = "is not a cursor this API returned"
		}
	}
	if len(bad) > 0 {
		return cursor{}, apperr.InvalidFields(bad)
	}
	return after, nil
}

// List returns one page of the tenant's leads, newest first.
func (s *Service) List(ctx context.Context, tenantID string, f Filter) (Page, error) {
	if f.slaNow.IsZero() {
		f.slaNow = s.now()
	}
	after, err := f.normalize()
	if err != nil {
		return Page{}, err
	}
	n := f.Limit + 1 // one more tells whether there is a next page
	var items []Lead
	err = s.lagged(ctx, func(x *sqlx.DB) error {
		var err error
		switch {
		case f.Q != "":
			items, err = search(ctx, x, tenantID, f, after.id, n, searchBudgets{index: s.IndexBudget, scan: s.ScanBudget})
		case f.ByDue:
			items, err = listByDue(ctx, x, tenantID, f, after, n)
		case len(f.AnyStatus) > 0:
			items, err = listAnyStatus(ctx, x, tenantID, f, after.id, n)
		default:
			items, err = listPage(ctx, x, tenantID, f, after.id, n)
		}
		return err
	})
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: items}
	if len(items) > f.Limit {
		p.Items = items[:f.Limit]
		last := p.Items[f.Limit-1]
		if f.ByDue && last.DueAt != nil {
			p.NextCursor = encodeDueCursor(*last.DueAt, last.ID)
		} else {
			p.NextCursor = encodeCursor(last.ID)
		}
	}
	if p.Items == nil {
		p.Items = []Lead{}
	}
	return p, nil
}
