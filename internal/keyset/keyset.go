// Package keyset builds the newest-first lists that page by id: a SELECT
// with optional filters, `id < ?` from the previous page's last id, and
// ORDER BY id DESC LIMIT n. ULID ids sort by time, so this is the
// listing's order and its cursor at once.
package keyset

// Query is one such list's SQL and its arguments, built in order.
type Query struct {
	sql  string
	args []any
}

// New starts from a SELECT whose WHERE clause filters by the owner (the
// tenant) with its arguments.
func New(sql string, args ...any) *Query {
	return &Query{sql: sql, args: args}
}

// And adds " AND cond" with its one argument when on (an optional filter
// the caller left empty is not added).
func (q *Query) And(on bool, cond string, arg any) *Query {
	if on {
		q.sql += " AND " + cond
		q.args = append(q.args, arg)
	}
	return q
}

// Cut ends a page read with limit+1 rows: its first limit rows and, when
// there were more, the next page's cursor (the last row's id; "" on the
// last page).
func Cut[T any](rows []T, limit int, id func(T) string) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, id(rows[limit-1])
}

// Page ends the query: ids below before (the previous page's last id;
// empty for the first page), newest first, at most limit rows.
func (q *Query) Page(before string, limit int) (string, []any) {
	q.And(before != "", "id < ?", before)
	return q.sql + " ORDER BY id DESC LIMIT ?", append(q.args, limit)
}
