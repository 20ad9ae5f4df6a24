package leads_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
)

// Every search path (index ranges, window scan, window then indexes) must
// return exactly what a brute-force LIKE over the five columns returns, in
// the same order, page after page.
func TestSearchPathsAgreeWithBruteForce(t *testing.T) {
	d := seeded(t, "leads_search", 6000, 1000, 3)
	ctx := context.Background()
	const tenant = seedTenant
	// A few leads with LIKE wildcards in them.
	if _, err := d.Exec(`UPDATE leads SET company = '100% Real_Co' WHERE tenant_id = ? ORDER BY id LIMIT 3`, tenant); err != nil {
		t.Fatal(err)
	}
	var owner string
	_ = d.Get(&owner, `SELECT id FROM leads WHERE tenant_id = ? LIMIT 1`, tenant) // any id-shaped string will do
	if _, err := d.Exec(`UPDATE leads SET owner_id = ? WHERE tenant_id = ? AND MOD(CRC32(id), 3) = 0`, owner, tenant); err != nil {
		t.Fatal(err)
	}

	brute := func(f leads.Filter) []string {
		cond := "tenant_id = ?"
		args := []any{tenant}
		if f.Status != "" {
			cond += " AND status = ?"
			args = append(args, f.Status)
		}
		if f.OwnerID != "" {
			cond += " AND owner_id = ?"
			args = append(args, f.OwnerID)
		}
		p := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(f.Q) + "%"
		cond += " AND (name LIKE ? OR name_last LIKE ? OR email LIKE ? OR email_domain LIKE ? OR company LIKE ?)"
		args = append(args, p, p, p, p, p)
		var ids []string
		if err := d.Select(&ids, `SELECT id FROM leads WHERE `+cond+` ORDER BY id DESC`, args...); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	paths := map[string]*leads.Service{
		"indexes":        {DB: d, IndexBudget: 1 << 30, ScanBudget: 1 << 30},
		"window":         {DB: d, IndexBudget: 1, ScanBudget: 1 << 30},
		"window+indexes": {DB: d, IndexBudget: 1, ScanBudget: 37},
		"default":        leads.NewService(d, webhooks.NewReads(d), nil),
	}
	var filters []leads.Filter
	for _, q := range []string{"a", "ma", "smith", "garcia", "acme", "Acme G", "maria ", "gmail.com", "zoë", "ZOE", "100%", "100% real_", "_", "zzz", "james.smith1"} {
		filters = append(filters, leads.Filter{Q: q}, leads.Filter{Q: q, Status: "qualified"}, leads.Filter{Q: q, Status: "won", OwnerID: owner})
	}
	for _, f := range filters {
		want := brute(f)
		for name, svc := range paths {
			t.Run(fmt.Sprintf("%s/q=%q status=%s owner=%v", name, f.Q, f.Status, f.OwnerID != ""), func(t *testing.T) {
				page := f
				page.Limit = 23
				got := listAll(ctx, t, svc, tenant, page)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("got %d leads, brute force %d", len(got), len(want))
				}
			})
		}
	}
}
