package leads_test

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
)

// BenchmarkSourceReport: the "Sources and campaigns" report for 30 days of
// a tenant of 1,000,000 leads over a year in 8 sources (about 82,000 in
// the period), 85 % of them with a first-touch campaign out of 40, beside
// a neighbour of 100,000. Per grouping (source, campaign) it checks the
// plan (a range of ix_leads_report read from the index alone) and reports
// the p95 of the page's report (its figures and leads per day, Report) as
// p95-ms (target ≤ 200 ms; docs/MONITORING.md).
func BenchmarkSourceReport(b *testing.B) {
	d, _ := dbtest.New(b, "leads_reportbench")
	ctx := context.Background()
	const tenant, other = "01HTENANT00000000000000000", "01HTENANT00000000000000001"
	now := time.Now().UTC().Truncate(time.Second)
	for i, tn := range []string{tenant, other} {
		n := 1_000_000
		if tn == other {
			n = 100_000
		}
		if _, err := leads.Seed(ctx, d, tn, leads.SeedOptions{N: n, RandSeed: uint64(30 + i), Batch: 3000}); err != nil {
			b.Fatal(err)
		}
		// In primary-key ranges of 10,000: one statement over 1M rows
		// outlasts the driver's read timeout on a loaded machine.
		for after, done := "", false; !done; {
			var upto string
			err := d.Get(&upto, `SELECT id FROM leads WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT 1 OFFSET 9999`, tn, after)
			if errors.Is(err, sql.ErrNoRows) {
				upto, done = "~", true // after every ULID
			} else if err != nil {
				b.Fatal(err)
			}
			if _, err := d.Exec(`UPDATE leads SET source_id = CONCAT('01HSOURCE000000000000000', LPAD(CRC32(id) % 8, 2, '0')),
			created_at = ? - INTERVAL (CRC32(id) % 31536000) SECOND,
			assigned_at = ? - INTERVAL (CRC32(id) % 31536000) SECOND + INTERVAL 1 MINUTE,
			first_responded_at = IF(CRC32(CONCAT(id, 'r')) % 10 < 7, ? - INTERVAL (CRC32(id) % 31536000) SECOND + INTERVAL (60 + CRC32(CONCAT(id, 'w')) % 7200) SECOND, NULL),
			attribution = IF(CRC32(CONCAT(id, 'c')) % 100 < 85, JSON_OBJECT('first', JSON_OBJECT('utm_source', 'newsletter', 'utm_campaign', CONCAT('spring-', CRC32(CONCAT(id, 'n')) % 40))), NULL)
			WHERE tenant_id = ? AND id > ? AND id <= ?`, now, now, now, tn, after, upto); err != nil {
				b.Fatal(err)
			}
			after = upto
		}
	}
	if _, err := d.Exec(`ANALYZE TABLE leads`); err != nil {
		b.Fatal(err)
	}
	from, to := now.Add(-30*24*time.Hour), now
	svc := leads.NewService(d, webhooks.NewReads(d), nil)
	for _, c := range []struct {
		by      leads.ReportBy
		group   string
		minRows int
	}{{leads.BySource, "source_id", 8}, {leads.ByCampaign, "report_campaign, source_id", 8 * 41}} {
		b.Run(string(c.by), func(b *testing.B) {
			// The plan, without the query's FORCE INDEX: the optimizer picks
			// the index by itself and reads it alone.
			rows, err := d.Queryx(`EXPLAIN SELECT `+c.group+`, COUNT(*) FROM leads WHERE tenant_id = ? AND created_at >= ? AND created_at < ? GROUP BY `+c.group, tenant, from, to)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				m := map[string]any{}
				if err := rows.MapScan(m); err != nil {
					b.Fatal(err)
				}
				key, extra := asString(m["key"]), asString(m["Extra"])
				b.Logf("plan: key=%s rows=%v extra=%s", key, asString(m["rows"]), extra)
				if key != "ix_leads_report" || !strings.Contains(extra, "Using index") {
					b.Fatalf("the report does not read ix_leads_report alone: key=%s extra=%s", key, extra)
				}
			}
			rows.Close()
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				figs, err := svc.Report(ctx, tenant, c.by, from, to, time.UTC)
				took = append(took, time.Since(t0))
				if err != nil || len(figs) < c.minRows || len(figs[0].Daily) < 30 {
					b.Fatal(err, len(figs))
				}
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[(len(took)*95+99)/100-1].Microseconds())/1000, "p95-ms")
		})
	}
}

func asString(v any) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}
