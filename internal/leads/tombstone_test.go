package leads_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
)

// A record of an erased lead writes nothing and comes back as
// OutcomeErased, in a batch with records of known and new leads, which are
// applied as usual; the tombstone is the tenant's only; an erased (or
// another tenant's) lead cannot be erased again.
func TestUpsertDropsRecordsOfErasedLeads(t *testing.T) {
	d, _ := dbtest.New(t, "leads_tombstone")
	ctx := context.Background()
	const a, b, src = tenantA, tenantB, sourceS
	rec := func(ref, name string) leads.BatchRecord {
		return leads.BatchRecord{SourceID: src, SenderRecord: leads.SenderRecord{SourceRef: ref, Name: name, Email: ref + "@example.org",
			Payload: json.RawMessage(`{"n":"` + name + `"}`), Sightings: 1}}
	}
	upsert := func(tenant string, recs ...leads.BatchRecord) []leads.UpsertOutcome {
		t.Helper()
		return upsertBatch(ctx, t, d, tenant, recs...)
	}
	first := upsert(a, rec("r1", "One"), rec("r2", "Two"))
	upsert(b, rec("r1", "One in b"))
	erase := func(tenant, id string) error {
		return db.InTx(ctx, d, func(tx *sqlx.Tx) error {
			_, err := leads.EraseTx(ctx, tx, tenant, id, time.Now().UTC())
			return err
		})
	}
	if err := erase(b, first[0].LeadID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("another tenant's lead: %v", err)
	}
	if err := erase(a, first[0].LeadID); err != nil {
		t.Fatal(err)
	}
	if err := erase(a, first[0].LeadID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("erased twice: %v", err)
	}
	out := upsert(a, rec("r1", "One again"), rec("r2", "Two changed"), rec("r3", "Three"), rec("r1", "One once more"))
	want := []string{leads.OutcomeErased, leads.OutcomeUpdated, leads.OutcomeCreated, leads.OutcomeErased}
	for i, o := range out {
		if o.Kind != want[i] || (o.Kind == leads.OutcomeErased) != (o.LeadID == "") {
			t.Fatalf("record %d: %+v, want %s", i, o, want[i])
		}
	}
	var n int
	if err := d.Get(&n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = 'r1'`, a); err != nil || n != 0 {
		t.Fatalf("erased lead re-created: %d %v", n, err)
	}
	if out := upsert(b, rec("r1", "One in b, changed")); out[0].Kind != leads.OutcomeUpdated {
		t.Fatalf("tenant b's lead of the same key: %+v", out[0])
	}
	if out := upsert(b, rec("r9", "New in b")); out[0].Kind != leads.OutcomeCreated {
		t.Fatalf("tenant b: %+v", out[0])
	}
	var hashes []string
	if err := d.Select(&hashes, `SELECT HEX(key_hash) FROM lead_tombstones WHERE tenant_id = ?`, a); err != nil || len(hashes) != 1 {
		t.Fatalf("tombstones: %v %v", hashes, err)
	}
}
