package leads_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
)

// The tenants and the source of the tests that write a few leads by hand.
const (
	tenantA = "01HTENANT0000000000000000A"
	tenantB = "01HTENANT0000000000000000B"
	sourceS = "01HSOURCE0000000000000000S"
)

// The tenant whose seeded leads a test reads, and its neighbour, whose
// leads must never show.
const (
	seedTenant = "01HTENANT00000000000000000"
	seedOther  = "01HTENANT00000000000000001"
)

// seeded opens a fresh database with n seeded leads of seedTenant (random
// seed seed) and otherN of seedOther (seed+1).
func seeded(t *testing.T, name string, n, otherN int, seed uint64) *sqlx.DB {
	t.Helper()
	d, _ := dbtest.New(t, name)
	for i, o := range []leads.SeedOptions{{N: n, RandSeed: seed}, {N: otherN, RandSeed: seed + 1}} {
		if _, err := leads.Seed(context.Background(), d, []string{seedTenant, seedOther}[i], o); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// listAll pages through svc.List from f (its Limit the page size) and
// returns every lead id in order.
func listAll(ctx context.Context, t *testing.T, svc *leads.Service, tenant string, f leads.Filter) []string {
	t.Helper()
	var got []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		p, err := svc.List(ctx, tenant, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range p.Items {
			got = append(got, l.ID)
		}
		if p.NextCursor == "" {
			return got
		}
		f.Cursor = p.NextCursor
	}
}

// upsertBatch writes sender records in one transaction, as the worker's
// batch does, failing the test on an error.
func upsertBatch(ctx context.Context, t *testing.T, d *sqlx.DB, tenant string, recs ...leads.BatchRecord) []leads.UpsertOutcome {
	t.Helper()
	var out []leads.UpsertOutcome
	if err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		var err error
		out, err = leads.UpsertFromSenderBatch(ctx, tx, tenant, recs, time.Now().UTC())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
