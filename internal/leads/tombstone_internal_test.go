package leads

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
)

// What the tombstone check adds to a batch that creates leads: the batch
// of 128 new leads in its transaction (the check included), and the
// check's statement alone, in the same run. Numbers: docs/BENCHMARKS.md.
func BenchmarkTombstoneCheck(b *testing.B) {
	d, _ := dbtest.New(b, "leads_tombstone_bench")
	ctx := context.Background()
	const tenant, src = "01HTENANT0000000000000000A", "01HSOURCE0000000000000000S"
	// Some tombstones of the tenant, none of the batch's keys.
	for i := 0; i < 1000; i++ {
		if err := insertTombstone(ctx, d, tenant, TombstoneKey(src, fmt.Sprintf("gone-%d", i)), time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	batch := func() []BatchRecord {
		recs := make([]BatchRecord, 128)
		for i := range recs {
			ref := ids.New()
			recs[i] = BatchRecord{SourceID: src, SenderRecord: SenderRecord{SourceRef: ref, Email: ref + "@example.org", Name: "N " + ref,
				Payload: json.RawMessage(`{"id":"` + ref + `"}`), Sightings: 1}}
		}
		return recs
	}
	b.Run("batch-128-new", func(b *testing.B) {
		for b.Loop() {
			recs := batch()
			if err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
				_, err := UpsertFromSenderBatch(ctx, tx, tenant, recs, time.Now().UTC())
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("round-trip-select-1", func(b *testing.B) {
		for b.Loop() {
			var one int
			if err := d.GetContext(ctx, &one, `SELECT 1`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tenant-has-any", func(b *testing.B) {
		for b.Loop() {
			var one []int
			if err := d.SelectContext(ctx, &one, `SELECT 1 FROM lead_tombstones WHERE tenant_id = ? LIMIT 1`, tenant); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tombstone-statement-128", func(b *testing.B) {
		for b.Loop() {
			recs := batch()
			keys := make([][]byte, len(recs))
			for i, r := range recs {
				keys[i] = TombstoneKey(r.SourceID, r.SourceRef)
			}
			if _, err := erasedKeys(ctx, d, tenant, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
}
