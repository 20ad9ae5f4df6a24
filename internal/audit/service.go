package audit

import (
	"context"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/ids"
)

// Service reads the audit log (the API and the admin page). Rows are
// written by the areas themselves with Record, in their own transactions.
type Service struct {
	DB *sqlx.DB
}

// Filter selects a page of the log: Action and ActorID narrow it (empty:
// any), Cursor is the NextCursor of the page before, Limit 1–200
// (0: DefaultLimit).
type Filter struct {
	Action  string
	ActorID string
	Cursor  string
	Limit   int
}

// Page limits.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Page is one page of entries, newest first; NextCursor is empty on the last.
type Page struct {
	Items      []Entry
	NextCursor string
}

// List returns the tenant's entries matching f, newest first, by keyset on
// id (ids sort by creation).
func (s *Service) List(ctx context.Context, tenantID string, f Filter) (Page, error) {
	bad := map[string]string{}
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	if f.Limit < 1 || f.Limit > MaxLimit {
		bad["limit"] = "must be a whole number from 1 to 200"
	}
	if f.Cursor != "" && !ids.Valid(f.Cursor) {
		bad["cursor"] = "is not a cursor this API returned"
	}
	if len(f.Action) > 64 {
		bad["action"] = "at most 64 characters"
	}
	if len(f.ActorID) > 64 {
		bad["actor"] = "at most 64 characters"
	}
	if len(bad) > 0 {
		return Page{}, apperr.InvalidFields(bad)
	}
	rows, err := listEntries(ctx, s.DB, tenantID, f.Action, f.ActorID, f.Cursor, f.Limit+1)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: make([]Entry, 0, min(len(rows), f.Limit))}
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		p.NextCursor = rows[len(rows)-1].ID
	}
	for _, r := range rows {
		e, err := r.entry()
		if err != nil {
			return Page{}, err
		}
		p.Items = append(p.Items, e)
	}
	return p, nil
}

// Actions lists the actions recorded for the tenant so far.
func (s *Service) Actions(ctx context.Context, tenantID string) ([]string, error) {
	return listActions(ctx, s.DB, tenantID)
}
