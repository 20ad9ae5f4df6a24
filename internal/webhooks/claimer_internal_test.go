package webhooks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
)

// testDelivery is a new webhook delivery of the source, received at.
func testDelivery(tenant, source, deliveryID string, at time.Time) Delivery {
	return Delivery{TenantID: tenant, SourceID: source, ID: ids.New(), DeliveryID: deliveryID, Origin: "webhook",
		Payload: []byte(`{}`), ReceivedAt: at}
}

// One row MariaDB refuses (here a delivery id that is not valid UTF-8 for
// the utf8mb4 column, which INSERT IGNORE would have stored mangled) fails
// only its own request: the rest of the batch is stored and answered, the
// duplicates in it counted.
func TestOneBadRowNeverFailsItsBatch(t *testing.T) {
	x, _ := dbtest.New(t, "claim_badrow")
	ctx := context.Background()
	c := &Claimer{DB: x}
	c.start()
	tenant, source := ids.New(), ids.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	mk := func(did string) *claimReq {
		return &claimReq{d: testDelivery(tenant, source, did, now), done: make(chan claimRes, 1)}
	}
	// An earlier delivery, so the batch holds a duplicate too.
	first := mk("d-dup")
	c.run([]*claimReq{first})
	if r := <-first.done; r.err != nil || !r.isNew {
		t.Fatalf("first claim: %+v", r)
	}
	c.known.init(DefaultDuplicateMemory) // forget it: the batch must find the original itself

	var batch []*claimReq
	for i := 0; i < 5; i++ {
		batch = append(batch, mk(fmt.Sprintf("d-%d", i)))
	}
	bad := mk("d-\xff\xfe-bad")
	dup := mk("d-dup")
	batch = append(batch, bad, dup)
	c.run(append([]*claimReq(nil), batch...))
	for _, r := range batch {
		res := <-r.done
		switch r {
		case bad:
			if res.err == nil || !apperr.Is(res.err, apperr.Invalid) {
				t.Fatalf("bad row: %+v, want an Invalid (422) error", res)
			}
		case dup:
			if res.err != nil || res.isNew || res.originalID != first.d.ID {
				t.Fatalf("duplicate in the batch: %+v, want the original %s", res, first.d.ID)
			}
		default:
			if res.err != nil || !res.isNew {
				t.Fatalf("good row %s: %+v", r.d.DeliveryID, res)
			}
		}
	}
	var n, dups int
	if err := x.GetContext(ctx, &n, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, tenant); err != nil || n != 6 {
		t.Fatalf("%d rows stored (%v), want 6", n, err)
	}
	if err := x.GetContext(ctx, &dups, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, first.d.ID); err != nil || dups != 1 {
		t.Fatalf("dup_count %d (%v), want 1", dups, err)
	}
}

// A duplicate the claimer remembers is counted through the primary key
// without its payload; one it does not is found by the lookup. Both add
// to the same count, exactly.
func TestKnownAndUnknownDuplicatesCountAlike(t *testing.T) {
	x, _ := dbtest.New(t, "claim_known")
	ctx := context.Background()
	c := &Claimer{DB: x}
	tenant, source := ids.New(), ids.New()
	claim := func(did string) (bool, string) {
		t.Helper()
		d := testDelivery(tenant, source, did, time.Now().UTC().Truncate(time.Microsecond))
		isNew, orig, err := c.Claim(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if isNew {
			return true, d.ID
		}
		return false, orig
	}
	isNew, orig := claim("k")
	if !isNew {
		t.Fatal("first claim not new")
	}
	if id, ok := c.Known(tenant, source, "k"); !ok || id != orig {
		t.Fatalf("Known = %q %v, want %s", id, ok, orig)
	}
	for i := 0; i < 3; i++ {
		if isNew, id := claim("k"); isNew || id != orig {
			t.Fatalf("known duplicate: new=%v id=%s", isNew, id)
		}
	}
	c.known.init(DefaultDuplicateMemory)
	if isNew, id := claim("k"); isNew || id != orig {
		t.Fatalf("unknown duplicate: new=%v id=%s", isNew, id)
	}
	var n int
	if err := x.GetContext(ctx, &n, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, orig); err != nil || n != 4 {
		t.Fatalf("dup_count %d (%v), want 4", n, err)
	}
	if err := x.GetContext(ctx, &n, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, tenant); err != nil || n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}
