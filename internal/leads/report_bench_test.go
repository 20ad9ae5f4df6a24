package leads_test

import (
	"context"
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
// the period), beside a neighbour of 100,000. It checks the plan (a range
// of ix_leads_report read from the index alone) and reports the p95 of
// the runs as p95-ms (target ≤ 200 ms; docs/MONITORING.md).
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
		for k := range 20 { // in parts: one statement over 1M rows outlasts the driver's read timeout
			if _, err := d.Exec(`UPDATE leads SET source_id = CONCAT('01HSOURCE000000000000000', LPAD(CRC32(id) % 8, 2, '0')),
			created_at = ? - INTERVAL (CRC32(id) % 31536000) SECOND,
			assigned_at = ? - INTERVAL (CRC32(id) % 31536000) SECOND + INTERVAL 1 MINUTE,
			first_responded_at = IF(CRC32(CONCAT(id, 'r')) % 10 < 7, ? - INTERVAL (CRC32(id) % 31536000) SECOND + INTERVAL (60 + CRC32(CONCAT(id, 'w')) % 7200) SECOND, NULL)
			WHERE tenant_id = ? AND CRC32(CONCAT(id, 'k')) % 20 = ?`, now, now, now, tn, k); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := d.Exec(`ANALYZE TABLE leads`); err != nil {
		b.Fatal(err)
	}
	from, to := now.Add(-30*24*time.Hour), now
	// The plan, without the query's FORCE INDEX: the optimizer picks the
	// index by itself and reads it alone.
	rows, err := d.Queryx(`EXPLAIN SELECT source_id, COUNT(*) FROM leads WHERE tenant_id = ? AND created_at >= ? AND created_at < ? GROUP BY source_id`, tenant, from, to)
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
	svc := leads.NewService(d, webhooks.NewReads(d), nil)
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		figs, err := svc.SourceReport(ctx, tenant, from, to)
		took = append(took, time.Since(t0))
		if err != nil || len(figs) != 8 {
			b.Fatal(err, len(figs))
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p95 := took[(len(took)*95+99)/100-1]
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
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
