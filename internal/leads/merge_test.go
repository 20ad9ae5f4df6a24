package leads_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks"
)

// Possible duplicates by normalized email and phone; a merge folds B into
// A; a later record of B's natural key updates A through the single
// upsert and through the batch upsert (with A's own key in the same
// batch); B leaves the lists; an unmerge restores B with what arrived for
// it since and gives A back its own fields and sightings. Another tenant's
// ids are not found; a stale version is refused.
func TestMergeResolvesPointersAndUnmerges(t *testing.T) {
	d, _ := dbtest.New(t, "leads_merge")
	ctx := context.Background()
	s := leads.NewService(d, webhooks.NewReads(d), nil)
	const ta, tb, src = tenantA, tenantB, sourceS
	actor := tenants.Principal{TenantID: ta, Name: "API token test"}
	at := time.Now().UTC()
	key := func(dt time.Duration, tie string) string { return leads.OrderKey(at.Add(dt), tie) }
	rec := func(ref string, dt time.Duration, tie string, f leads.SenderRecord) leads.BatchRecord {
		f.SourceRef, f.Sightings, f.OrderKey = ref, 1, key(dt, tie)
		f.Payload = json.RawMessage(`{"ref":"` + ref + `"}`)
		return leads.BatchRecord{SourceID: src, SenderRecord: f}
	}
	batch := func(tenant string, recs ...leads.BatchRecord) []leads.UpsertOutcome {
		t.Helper()
		return upsertBatch(ctx, t, d, tenant, recs...)
	}
	get := func(id string) leads.Lead {
		t.Helper()
		l, err := s.Get(ctx, ta, id)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := batch(ta,
		rec("ra", 0, "1", leads.SenderRecord{Name: "Ada", Email: "ada@example.com", Phone: "+1 555 000 1111", Company: "Acme"}),
		rec("rb", 0, "2", leads.SenderRecord{Name: "Ada L.", Email: "  ADA@Example.com ", Company: "Beta"}),
		rec("rc", 0, "3", leads.SenderRecord{Name: "Caller", Phone: "+1 (555) 000-1111"}))
	batch(tb, rec("ra", 0, "1", leads.SenderRecord{Name: "Other tenant", Email: "ada@example.com"}))
	a, b, c := first[0].LeadID, first[1].LeadID, first[2].LeadID

	dups, err := s.Duplicates(ctx, ta, a)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string][]string{}
	for _, du := range dups {
		reasons[du.Lead.ID] = du.Reasons
	}
	if len(dups) != 2 || !slices.Equal(reasons[b], []string{"email"}) || !slices.Equal(reasons[c], []string{"phone"}) {
		t.Fatalf("duplicates of A: %+v", reasons)
	}
	if _, err := s.Duplicates(ctx, tb, a); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("another tenant's duplicates: %v", err)
	}
	page, err := s.List(ctx, ta, leads.Filter{Duplicates: true})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("duplicates view: %d leads, %v", len(page.Items), err)
	}

	// Merge B into A, the name from B.
	in := leads.MergeInput{Others: []string{b}, Fields: map[string]string{"name": b}}
	if _, err := s.Merge(ctx, ta, a, actor, 7, in, idempotency.Once[leads.Lead]{}); !apperr.Is(err, apperr.PreconditionFailed) {
		t.Fatalf("stale version: %v", err)
	}
	if _, err := s.Merge(ctx, tb, a, tenants.Principal{TenantID: tb}, leads.AnyVersion, in, idempotency.Once[leads.Lead]{}); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("another tenant's merge: %v", err)
	}
	m, err := s.Merge(ctx, ta, a, actor, 1, in, idempotency.Once[leads.Lead]{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "Ada L." || m.Email != "ada@example.com" || m.TimesSeen != 2 || m.Version != 2 {
		t.Fatalf("survivor after merge: %+v", m)
	}
	if gb := get(b); gb.MergedInto == nil || *gb.MergedInto != a || gb.Status != leads.StatusMerged {
		t.Fatalf("merged lead: %+v", gb)
	}
	if _, err := s.Merge(ctx, ta, c, actor, leads.AnyVersion, leads.MergeInput{Others: []string{b}}, idempotency.Once[leads.Lead]{}); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("merging a merged lead again: %v", err)
	}
	all, err := s.List(ctx, ta, leads.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all.Items {
		if l.ID == b {
			t.Fatal("the merged lead is still listed")
		}
	}
	if page, _ := s.List(ctx, ta, leads.Filter{Q: "ada"}); len(page.Items) != 1 || page.Items[0].ID != a {
		t.Fatalf("search after merge: %d", len(page.Items))
	}

	// The single path (reconcile, webhooks.Apply): a newer record of B.
	id, created, err := leads.UpsertFromSender(ctx, d, ta, src, rec("rb", time.Second, "4",
		leads.SenderRecord{Company: "NewCo"}).SenderRecord, time.Now().UTC())
	if err != nil || created || id != b {
		t.Fatalf("single upsert: %s %v %v", id, created, err)
	}
	if ga := get(a); ga.Company != "NewCo" || ga.TimesSeen != 3 {
		t.Fatalf("survivor after a single record of B: company %q, seen %d", ga.Company, ga.TimesSeen)
	}
	// The batch path, with A's own key in the same batch.
	out := batch(ta,
		rec("rb", 3*time.Second, "5", leads.SenderRecord{Company: "Batch Co"}),
		rec("ra", 2*time.Second, "6", leads.SenderRecord{Phone: "+1 555 000 2222"}),
		rec("rb", -time.Hour, "7", leads.SenderRecord{Company: "Stale Inc"}))
	if out[0].LeadID != b || out[0].SurvivorID != a || out[0].Kind != leads.OutcomeUpdated || out[2].Kind != leads.OutcomeStale || out[1].SurvivorID != "" {
		t.Fatalf("batch outcomes: %+v", out)
	}
	ga := get(a)
	if ga.Company != "Batch Co" || ga.Phone != "+1 555 000 2222" || ga.TimesSeen != 6 {
		t.Fatalf("survivor after the batch: %+v", ga)
	}
	if gb := get(b); gb.Company != "Batch Co" || gb.TimesSeen != 4 {
		t.Fatalf("merged lead's own row: %+v", gb)
	}
	// Duplicates counted later (webhooks.SyncSightings) reach the survivor.
	if err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		return leads.AddSightings(ctx, tx, ta, []string{b}, map[string]int{b: 2})
	}); err != nil {
		t.Fatal(err)
	}
	if ga := get(a); ga.TimesSeen != 8 {
		t.Fatalf("survivor after 2 late duplicates of B: seen %d", ga.TimesSeen)
	}

	// Unmerge.
	if _, err := s.Unmerge(ctx, tb, a, tenants.Principal{TenantID: tb}, b); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("another tenant's unmerge: %v", err)
	}
	rb, err := s.Unmerge(ctx, ta, a, actor, b)
	if err != nil {
		t.Fatal(err)
	}
	if rb.MergedInto != nil || rb.Status != "new" || rb.Name != "Ada L." || rb.Company != "Batch Co" || rb.TimesSeen != 6 {
		t.Fatalf("restored lead: %+v", rb)
	}
	ga = get(a)
	if ga.Name != "Ada" || ga.TimesSeen != 2 || ga.Version != 3 {
		t.Fatalf("survivor after unmerge: %+v", ga)
	}
	if _, err := s.Unmerge(ctx, ta, a, actor, b); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("second unmerge: %v", err)
	}
	// A record of B now updates B alone.
	out = batch(ta, rec("rb", 4*time.Second, "8", leads.SenderRecord{Company: "Own again"}))
	if out[0].SurvivorID != "" || get(a).Company == "Own again" {
		t.Fatalf("after unmerge: %+v", out[0])
	}
}

// A merged lead is not_found to a bulk edit (it is edited through its
// survivor) and refuses a PATCH; erasing the survivor deletes the merge
// records and lets the merged lead stand alone with its own status.
func TestMergedLeadEditsAndErasure(t *testing.T) {
	d, _ := dbtest.New(t, "leads_merge_erase")
	ctx := context.Background()
	s := leads.NewService(d, webhooks.NewReads(d), nil)
	const ta = tenantA
	actor := tenants.Principal{TenantID: ta, Name: "API token test"}
	out := upsertBatch(ctx, t, d, ta,
		leads.BatchRecord{SourceID: sourceS, SenderRecord: leads.SenderRecord{SourceRef: "a", Email: "x@example.com", Sightings: 1}},
		leads.BatchRecord{SourceID: sourceS, SenderRecord: leads.SenderRecord{SourceRef: "b", Email: "x@example.com", Sightings: 1}})
	a, b := out[0].LeadID, out[1].LeadID
	st := "won"
	if _, err := s.Patch(ctx, ta, b, actor, leads.AnyVersion, leads.PatchInput{Status: &st}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Merge(ctx, ta, a, actor, leads.AnyVersion, leads.MergeInput{Others: []string{b}}, idempotency.Once[leads.Lead]{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Bulk(ctx, ta, actor, leads.BulkInput{IDs: []string{b, a}, Set: leads.BulkSet{Status: &st}}, idempotency.Once[leads.BulkResult]{})
	if err != nil || res.Items[0].Status != leads.BulkNotFound || res.Items[1].Status != leads.BulkUpdated {
		t.Fatalf("bulk: %+v %v", res.Items, err)
	}
	if _, err := s.Patch(ctx, ta, b, actor, leads.AnyVersion, leads.PatchInput{Status: &st}); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("PATCH of a merged lead: %v", err)
	}
	if err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		_, err := leads.EraseTx(ctx, tx, ta, a, time.Now().UTC())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	gb, err := s.Get(ctx, ta, b)
	if err != nil || gb.MergedInto != nil || gb.Status != "won" {
		t.Fatalf("after the survivor's erasure: %+v %v", gb, err)
	}
	var n int
	if err := d.Get(&n, `SELECT COUNT(*) FROM lead_merges WHERE tenant_id = ?`, ta); err != nil || n != 0 {
		t.Fatalf("%d merge records left (%v)", n, err)
	}
}
