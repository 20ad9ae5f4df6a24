package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"leadpipe/internal/db"
)

// Erased replaces a person's data in an audit row's detail.
const Erased = "[erased]"

// Redact removes a person's data from the tenant's audit rows, in the
// caller's transaction (the erasure's, docs/ARCHITECTURE.md, "Personal data"): every string value
// of a row's detail that contains one of needles, in any
// case, has it replaced with Erased. Rows are never deleted, and what
// happened, by whom and when stays. Detail only holds what callers put
// there (a search string of an export, for instance), so this reads the
// tenant's rows once (a scan: an erasure is rare) and rewrites the few
// that match.
func Redact(ctx context.Context, x db.Ext, tenantID string, needles []string) (int, error) {
	var conds, pats []string
	args := []any{tenantID}
	for _, n := range needles {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		conds = append(conds, "INSTR(LOWER(detail), LOWER(?)) > 0")
		args = append(args, n)
		pats = append(pats, regexp.QuoteMeta(n))
		// A JSON encoder may escape characters of the needle (<, >, &).
		if b, err := json.Marshal(n); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != n {
				conds = append(conds, "INSTR(LOWER(detail), LOWER(?)) > 0")
				args = append(args, esc)
			}
		}
	}
	if len(conds) == 0 {
		return 0, nil
	}
	var rows []struct {
		ID     string `db:"id"`
		Detail string `db:"detail"`
	}
	if err := x.SelectContext(ctx, &rows, `SELECT id, detail FROM audit_log
		WHERE tenant_id = ? AND detail IS NOT NULL AND (`+strings.Join(conds, " OR ")+`) ORDER BY id FOR UPDATE`, args...); err != nil {
		return 0, fmt.Errorf("audit: redact: %w", err)
	}
	re := regexp.MustCompile(`(?i)` + strings.Join(pats, "|"))
	for _, r := range rows {
		var v any
		if err := json.Unmarshal([]byte(r.Detail), &v); err != nil {
			return 0, fmt.Errorf("audit: redact %s: %w", r.ID, err)
		}
		b, err := json.Marshal(redactValue(v, re))
		if err != nil {
			return 0, err
		}
		if _, err := x.ExecContext(ctx, `UPDATE audit_log SET detail = ? WHERE tenant_id = ? AND id = ?`, b, tenantID, r.ID); err != nil {
			return 0, fmt.Errorf("audit: redact %s: %w", r.ID, err)
		}
	}
	return len(rows), nil
}

func redactValue(v any, re *regexp.Regexp) any {
	switch t := v.(type) {
	case string:
		return re.ReplaceAllString(t, Erased)
	case []any:
		for i := range t {
			t[i] = redactValue(t[i], re)
		}
		return t
	case map[string]any:
		for k, e := range t {
			t[k] = redactValue(e, re) // keys are the callers' own words
		}
		return t
	}
	return v
}
