package db_test

import (
	"sort"
	"strings"
	"testing"
)

// tableOwners names the one package whose SQL may name each table
// (docs/ARCHITECTURE.md, "Areas"). Another area that needs the rows asks
// the owner through an exported function.
var tableOwners = map[string]string{
	"tenants": "internal/tenants", "users": "internal/tenants", "user_logins": "internal/tenants",
	"api_tokens": "internal/tenants", "sessions": "internal/tenants", "user_links": "internal/tenants",
	"sources": "internal/sources", "source_secrets": "internal/sources",
	"deliveries": "internal/webhooks", "dead_letters": "internal/webhooks", "delivery_dup_log": "internal/webhooks",
	"leads": "internal/leads", "lead_notes": "internal/leads", "lead_events": "internal/leads", "lead_tombstones": "internal/leads",
	"lead_merges":      "internal/leads",
	"assignment_rules": "internal/leads", "assignment_counters": "internal/leads", "assignment_settings": "internal/leads", "assignment_reservations": "internal/leads",
	"reconcile_runs":   "internal/reconcile",
	"idempotency_keys": "internal/idempotency",
	"event_endpoints":  "internal/events", "event_endpoint_secrets": "internal/events", "events": "internal/events",
	"event_sequences": "internal/events", "event_deliveries": "internal/events", "event_attempts": "internal/events",
	"source_stats_minute": "internal/monitor", "source_stats_hour": "internal/monitor", "source_stats_day": "internal/monitor",
	"alert_rules": "internal/monitor", "alerts": "internal/monitor", "alert_events": "internal/monitor", "alert_tenant_rules": "internal/monitor",
	"audit_log":          "internal/audit",
	"retention_settings": "internal/retention", "retention_cursors": "internal/retention",
	"rejections": "internal/rejections",
	"imports":    "internal/imports", "import_chunks": "internal/imports", "import_errors": "internal/imports",
	"installation": "internal/db", "migrate_lock": "internal/db",
	"forms":         "internal/forms",
	"notifications": "internal/notify", "notification_prefs": "internal/notify",
	// goose's own bookkeeping.
	"goose_db_version": "internal/db",
}

// crossAreaSQL lists statements allowed to name another area's table, by
// the function holding them and the table, each with why. It is empty:
// another area asks the owner through an exported function. An entry that
// matches nothing fails too.
var crossAreaSQL = map[string]string{}

// Every table named in the Go code's SQL is named by its owning package
// only, but for the listed departures.
func TestEveryTableIsQueriedByItsOwner(t *testing.T) {
	root := moduleRoot(t)
	schema := loadSchema(t)
	used := map[string]bool{}
	var missing []string
	for _, s := range walkSQL(t, root) {
		if !strings.HasPrefix(s.owner, "internal/") {
			continue // cmd/ tools (benchmarks, seeding) read whatever they measure
		}
		pkg := s.owner[:strings.Index(s.owner, ".")]
		for _, ref := range referencedTables(s.sql, schema) {
			if ref.table == opaqueMark {
				continue
			}
			owner, ok := tableOwners[ref.table]
			if !ok {
				missing = append(missing, ref.table)
				continue
			}
			if pkg == owner || strings.HasPrefix(pkg, owner+"/") {
				continue // an area's own sub-packages (webhooks/deliveries) share its tables
			}
			key := s.owner + " → " + ref.table
			if _, ok := crossAreaSQL[key]; ok {
				used[key] = true
				continue
			}
			t.Errorf("%s: %s names table %s, which %s owns: ask %s through an exported function (or, with a reason, add %q to crossAreaSQL)",
				s.pos, s.owner, ref.table, owner, owner, key)
		}
	}
	sort.Strings(missing)
	for i, m := range missing {
		if i == 0 || missing[i-1] != m {
			t.Errorf("table %s has no owner: add it to tableOwners (internal/db/owners_test.go) and to docs/ARCHITECTURE.md", m)
		}
	}
	for key := range crossAreaSQL {
		if !used[key] {
			t.Errorf("crossAreaSQL lists %s, which no statement needs any more: remove it", key)
		}
	}
	for table := range schema.tenantKey {
		if _, ok := tableOwners[table]; !ok {
			t.Errorf("migrated table %s has no owner: add it to tableOwners (internal/db/owners_test.go) and to docs/ARCHITECTURE.md", table)
		}
	}
}
