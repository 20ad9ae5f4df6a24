package web_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
)

// The CSV export: every lead the filter matches, once, newest first, across
// several keyset pages; formulas defused; another tenant's leads never in
// it; bad filters a 422 before any byte of CSV; recorded in the audit log.
func TestLeadsExportCSV(t *testing.T) {
	e := newLeadsEnv(t, "web_export")
	a, b := e.Tenant("acme"), e.Tenant("other")
	const n = 430 // more than two pages of 200
	for i := 0; i < n; i++ {
		createLead(t, e, a.Token, map[string]any{"name": fmt.Sprintf("Lead %03d", i), "email": fmt.Sprintf("l%03d@acme.test", i)})
	}
	evil := createLead(t, e, a.Token, map[string]any{"name": "=HYPERLINK(\"http://x\")", "email": "evil@acme.test",
		"company": "@SUM(1)", "phone": "+1 555 0100", "tags": []string{"vip", "-x"}})
	createLead(t, e, b.Token, map[string]any{"name": "Not yours", "email": "secret@other.test"})

	r := e.Do("GET", "/api/v1/leads/export.csv", a.Token, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(r.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export: %d %v", r.Status, r.Header)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil {
		t.Fatalf("export is not CSV: %v", err)
	}
	if got := strings.Join(rows[0], ","); got != "id,source,email,name,phone,company,status,owner,tags,next_step,due_at,created_at,updated_at" {
		t.Fatalf("header: %s", got)
	}
	if len(rows)-1 != n+1 {
		t.Fatalf("%d rows, want %d", len(rows)-1, n+1)
	}
	seen := map[string]bool{}
	for i, row := range rows[1:] {
		if seen[row[0]] {
			t.Fatalf("lead %s exported twice", row[0])
		}
		seen[row[0]] = true
		if i > 0 && row[0] > rows[i][0] {
			t.Fatalf("not newest first at row %d", i+1)
		}
		if strings.Contains(row[2], "other.test") {
			t.Fatalf("another tenant's lead in the export: %v", row)
		}
	}
	first := rows[1] // the newest: the formula lead
	if first[0] != evil.ID || first[3] != `'=HYPERLINK("http://x")` || first[5] != "'@SUM(1)" || first[4] != "'+1 555 0100" ||
		first[8] != "vip,-x" || first[1] != "manual" || first[6] != "new" {
		t.Fatalf("formula cells not defused or fields wrong: %q", first)
	}

	// The list's filters apply: a search narrows it.
	r = e.Do("GET", "/api/v1/leads/export.csv?q=evil", a.Token, nil)
	rows, _ = csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if r.Status != 200 || len(rows) != 2 || rows[1][0] != evil.ID {
		t.Fatalf("filtered export: %d %q", r.Status, rows)
	}
	// Nothing matches: a header only.
	r = e.Do("GET", "/api/v1/leads/export.csv?status=won", a.Token, nil)
	if r.Status != 200 || strings.TrimSpace(string(r.Body)) != "id,source,email,name,phone,company,status,owner,tags,next_step,due_at,created_at,updated_at" {
		t.Fatalf("empty export: %d %s", r.Status, r.Body)
	}
	// A bad filter is a problem, not a CSV.
	r = e.Do("GET", "/api/v1/leads/export.csv?status=nope", a.Token, nil)
	if r.Status != 422 || !strings.Contains(r.Header.Get("Content-Type"), "problem+json") {
		t.Fatalf("bad filter: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/leads/export.csv", "", nil); r.Status != 401 {
		t.Fatalf("no token: %d", r.Status)
	}

	var audits int
	if err := e.App.DB.Get(&audits, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'leads.exported'`, a.ID); err != nil {
		t.Fatal(err)
	}
	if audits != 3 { // the three exports that produced CSV (the 422 did not export)
		t.Fatalf("audit rows for exports: %d, want 3", audits)
	}
}
