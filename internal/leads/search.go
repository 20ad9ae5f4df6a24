package leads

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
)

// Search (GET /api/v1/leads?q=) matches q as a prefix of the name, the
// name's last word, the email, the email's domain or the company, case-
// and accent-insensitively (the columns' collation): "smi" finds "John
// Smith", "acme" finds "jo@acme.io" and "Acme Corp", "maria g" finds
// "Maria Garcia".
//
// Why not LIKE '%q%': with 1M leads in a tenant it reads every row when q
// is rare (seconds). Why not FULLTEXT: an InnoDB FULLTEXT index cannot
// start with tenant_id, so a common word is looked up across all tenants
// and then sorted by id; it also ignores words under 3 characters and
// stopwords, and MariaDB has no n-gram parser for substrings.
//
// Instead each searched column has an index (tenant_id, status, column)
// (migration 0102). With a status filter one range per column holds
// exactly the candidates; without, six ranges (status IN all). A page is
// then found whichever way is cheap for this q:
//
//  1. Ask the optimizer how many entries those ranges hold (an estimate
//     from index dives; no entries are read).
//  2. Few, at most IndexBudget (rare q): each column's range yields its
//     newest ids below the cursor (the cursor and status are checked
//     inside the index); the union's newest `limit` ids are the page.
//     Cost ∝ candidates.
//  3. Many (common q): matches are dense, so walking the leads in list
//     order from the cursor and testing each row fills the page quickly;
//     at most ScanBudget rows are read. Should the window still not fill
//     the page (q common overall but rare below this cursor or with this
//     owner/source), step 2 finds the rest below the window.
//
// Every path applies the same predicate, so the result does not depend on
// which ran, and the cursor stays the last id of the page.
const (
	defaultIndexBudget = 12000
	defaultScanBudget  = 4000
)

type searchCol struct{ col, index string }

var searchCols = []searchCol{
	{"name", "ix_leads_q_name"},
	{"name_last", "ix_leads_q_name_last"},
	{"email", "ix_leads_q_email"},
	{"email_domain", "ix_leads_q_email_domain"},
	{"company", "ix_leads_q_company"},
}

// likePrefix escapes LIKE's wildcards in q and appends %.
func likePrefix(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(q) + "%"
}

// columnsFor leaves out columns q cannot match: a last word has no space,
// a domain no @.
func columnsFor(q string) []searchCol {
	out := make([]searchCol, 0, len(searchCols))
	for _, c := range searchCols {
		if c.col == "name_last" && strings.ContainsAny(q, " \t") {
			continue
		}
		if c.col == "email_domain" && strings.Contains(q, "@") {
			continue
		}
		out = append(out, c)
	}
	return out
}

// orderedIndex names the index that lists the filter's leads in id order.
func (f Filter) orderedIndex() string {
	switch {
	case f.Status != "":
		return "ix_leads_status"
	case f.OwnerID != "":
		return "ix_leads_owner"
	case f.SourceID != "":
		return "ix_leads_source"
	}
	return "PRIMARY"
}

// statusRange is the status part of a search-index range.
func (f Filter) statusRange() (string, []any) {
	if f.Status != "" {
		return "status = ?", []any{f.Status}
	}
	return "status IN ('" + strings.Join(Statuses, "','") + "')", nil
}

func (s *Service) search(ctx context.Context, tenantID string, f Filter, before string, n int) ([]Lead, error) {
	pat := likePrefix(f.Q)
	cols := columnsFor(f.Q)

	indexBudget, scanBudget := s.IndexBudget, s.ScanBudget
	if indexBudget <= 0 {
		indexBudget = defaultIndexBudget
	}
	if scanBudget <= 0 {
		scanBudget = defaultScanBudget
	}
	if f.Status == "" {
		// Without a status filter the window walks the primary key (no
		// lookups) over all statuses, and the break-even between the two
		// paths grows with √(leads in the filter): measured about 2×.
		indexBudget *= 2
	}
	few, err := s.fewCandidates(ctx, tenantID, f, cols, pat, indexBudget)
	if err != nil {
		return nil, err
	}
	if few {
		return s.searchIndexes(ctx, tenantID, f, cols, pat, before, n)
	}

	// Common q: a window of at most scanBudget leads below the cursor, in
	// list order on the filter's own index.
	base, baseArgs := f.where(tenantID)
	cond, args := base, append([]any(nil), baseArgs...)
	if before != "" {
		cond += " AND id < ?"
		args = append(args, before)
	}
	hint := " FORCE INDEX (" + f.orderedIndex() + ")"
	var floor string
	err = s.DB.GetContext(ctx, &floor, `SELECT id FROM leads`+hint+` WHERE `+cond+` ORDER BY id DESC LIMIT 1 OFFSET ?`,
		append(args[:len(args):len(args)], scanBudget-1)...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	preds := make([]string, len(cols))
	for i, c := range cols {
		preds[i] = c.col + " LIKE ?"
		args = append(args, pat)
	}
	cond += " AND (" + strings.Join(preds, " OR ") + ")"
	if floor != "" {
		cond += " AND id >= ?"
		args = append(args, floor)
	}
	var items []Lead
	if err := s.DB.SelectContext(ctx, &items, `SELECT `+LeadCols+` FROM leads`+hint+` WHERE `+cond+` ORDER BY id DESC LIMIT ?`,
		append(args, n)...); err != nil {
		return nil, err
	}
	if len(items) >= n || floor == "" {
		return items, nil // page full, or the window reached the oldest lead
	}
	more, err := s.searchIndexes(ctx, tenantID, f, cols, pat, floor, n-len(items))
	return append(items, more...), err
}

// fewCandidates reports whether the search-index ranges of q are estimated
// to hold at most budget entries. The estimate is the optimizer's own
// (EXPLAIN's rows: B-tree dives at both ends of each range, exact for small
// ranges and within about 2× for large ones), so deciding costs one round
// trip and no index reads however common q is; counting entries up to the
// budget measured 20–40 ms for a common prefix on 1M leads.
func (s *Service) fewCandidates(ctx context.Context, tenantID string, f Filter, cols []searchCol, pat string, budget int) (bool, error) {
	st, stArgs := f.statusRange()
	parts := make([]string, len(cols))
	var args []any
	for i, c := range cols {
		parts[i] = `SELECT 1 FROM leads FORCE INDEX (` + c.index + `) WHERE tenant_id = ? AND ` + st + ` AND ` + c.col + ` LIKE ?`
		args = append(args, tenantID)
		args = append(args, stArgs...)
		args = append(args, pat)
	}
	rows, err := s.DB.QueryxContext(ctx, `EXPLAIN `+strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		m := map[string]any{}
		if err := rows.MapScan(m); err != nil {
			return false, err
		}
		total += explainRows(m["rows"])
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	return total <= int64(budget), nil
}

// explainRows reads EXPLAIN's rows column (NULL for a union's result row).
func explainRows(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case []byte:
		n, _ := strconv.ParseInt(string(x), 10, 64)
		return n
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// searchIndexes returns the newest n leads below before (all when "")
// matching q, from the union of each column's index range. Status and the
// cursor are checked inside the index; owner and source need the row.
func (s *Service) searchIndexes(ctx context.Context, tenantID string, f Filter, cols []searchCol, pat, before string, n int) ([]Lead, error) {
	base, baseArgs := f.where(tenantID)
	if f.Status == "" {
		st, _ := f.statusRange()
		base += " AND " + st
	}
	branches := make([]string, len(cols))
	var args []any
	for i, c := range cols {
		b := `(SELECT id FROM leads FORCE INDEX (` + c.index + `) WHERE ` + base + ` AND ` + c.col + ` LIKE ?`
		args = append(args, baseArgs...)
		args = append(args, pat)
		if before != "" {
			b += ` AND id < ?`
			args = append(args, before)
		}
		branches[i] = b + ` ORDER BY id DESC LIMIT ?)`
		args = append(args, n)
	}
	// One statement: the union's newest n ids, joined back to their rows.
	var out []Lead
	err := s.DB.SelectContext(ctx, &out, `SELECT `+leadColsL+` FROM (SELECT id FROM (`+strings.Join(branches, " UNION ")+
		`) u ORDER BY id DESC LIMIT ?) t JOIN leads l ON l.tenant_id = ? AND l.id = t.id ORDER BY l.id DESC`,
		append(args, n, tenantID)...)
	return out, err
}

// leadColsL is LeadCols qualified with the alias l.
var leadColsL = func() string {
	cols := strings.Split(LeadCols, ",")
	for i, c := range cols {
		cols[i] = "l." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()
