package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
)

// The backlog gauges follow the log: empty, two tenants' flushes waiting,
// folded again; a database that does not answer sets the error gauge.
func TestDupLogMetricsFollowTheLog(t *testing.T) {
	x, _ := dbtest.New(t, "dup_metrics")
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewDupLogCollector(x, 5*time.Second, nil))

	empty := `
# HELP leadpipe_duplicate_log_oldest_seconds Age of the oldest row of the duplicate log waiting to be folded (0 when it is empty).
# TYPE leadpipe_duplicate_log_oldest_seconds gauge
leadpipe_duplicate_log_oldest_seconds 0
# HELP leadpipe_duplicate_log_rows Rows of the duplicate log waiting for the worker to fold them into deliveries.
# TYPE leadpipe_duplicate_log_rows gauge
leadpipe_duplicate_log_rows 0
# HELP leadpipe_duplicate_log_scrape_error 1 when this scrape could not read the duplicate log from MySQL in time.
# TYPE leadpipe_duplicate_log_scrape_error gauge
leadpipe_duplicate_log_scrape_error 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(empty)); err != nil {
		t.Fatalf("empty log: %v", err)
	}

	// Two tenants' duplicates answered from memory, then flushed: one log
	// row per tenant and flush, two flushes.
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := &Claimer{DB: x, FlushEvery: time.Hour}
	for _, tenant := range []string{ids.New(), ids.New()} {
		source := ids.New()
		orig := testDelivery(tenant, source, "d1", now)
		if isNew, _, err := c.Claim(ctx, orig); err != nil || !isNew {
			t.Fatalf("claim: %v %v", isNew, err)
		}
		for range 2 {
			if _, ok := c.Answer(tenant, source, "d1", time.Now()); !ok {
				t.Fatal("the duplicate was not tallied")
			}
			if err := c.flushTally(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := scrapeGauges(t, reg)
	if got["leadpipe_duplicate_log_rows"] != 4 || got["leadpipe_duplicate_log_oldest_seconds"] <= 0 ||
		got["leadpipe_duplicate_log_scrape_error"] != 0 {
		t.Fatalf("after two tenants' flushes: %v, want 4 rows, an age above 0 and no error", got)
	}

	if err := (&DupFolder{DB: x}).Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(empty)); err != nil {
		t.Fatalf("after the fold: %v", err)
	}

	y, _ := dbtest.New(t, "dup_metrics_closed")
	y.Close()
	gone := prometheus.NewPedanticRegistry()
	gone.MustRegister(NewDupLogCollector(y, 5*time.Second, nil))
	if got := scrapeGauges(t, gone); got["leadpipe_duplicate_log_scrape_error"] != 1 || len(got) != 1 {
		t.Fatalf("on a closed database: %v, want only the error gauge at 1", got)
	}
}

// scrapeGauges gathers reg and returns each unlabelled gauge's value.
func scrapeGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	return got
}
