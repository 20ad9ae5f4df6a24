package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
)

// Nothing that happens to a stored delivery makes its row longer
// (migration 0471): the bytes of the fields written after the claim, with
// their length bytes, never exceed what they were at the claim, whether it
// is processed (with the longest outcome) or fails (with a short cause),
// before or after its first duplicate, and then more duplicates. A longer
// row in a full page costs InnoDB a page reorganisation: 6× the redo of
// an update in its own space.
func TestADeliveryRowNeverGrows(t *testing.T) {
	x, _ := dbtest.New(t, "spare")
	ctx := context.Background()
	c := &Claimer{DB: x}
	tenant, source := ids.New(), ids.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	claim := func(did string) string {
		d := testDelivery(tenant, source, did, now)
		isNew, orig, err := c.Claim(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if isNew {
			return d.ID
		}
		return orig
	}
	// A NULL field takes no bytes; a VARCHAR one a length byte more.
	const written = `IF(processed_at IS NULL, 0, 8) + IFNULL(LENGTH(lead_id), 0) + IFNULL(LENGTH(outcome) + 1, 0)
		+ LENGTH(state) + 1 + IFNULL(LENGTH(last_error) + 1, 0) + IF(dup_first_at IS NULL, 0, 8) + IF(dup_last_at IS NULL, 0, 8)
		+ IFNULL(LENGTH(spare) + 1, 0)`
	length := func(id string) (n int) {
		if err := x.GetContext(ctx, &n, `SELECT `+written+` FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil {
			t.Fatal(err)
		}
		return n
	}
	longest := ""
	for _, o := range []string{leads.OutcomeCreated, leads.OutcomeUpdated, leads.OutcomeUnchanged, leads.OutcomeStale} {
		if len(o) > len(longest) {
			longest = o
		}
	}
	finish := map[string]func(id string){
		"processed": func(id string) {
			lead := ids.New()
			if err := markProcessed(ctx, x, tenant, []Delivery{{ID: id, LeadID: &lead, Outcome: &longest}}, now); err != nil {
				t.Fatal(err)
			}
		},
		"failed": func(id string) {
			if err := failUnmappable(ctx, x, tenant, id, errors.New("bad json"), now); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, fin := range finish {
		for _, dupFirst := range []bool{false, true} {
			did := name + "-" + map[bool]string{false: "then-dup", true: "dup-first"}[dupFirst]
			id := claim(did)
			at := length(id)
			step := func(what string) {
				if n := length(id); n > at {
					t.Errorf("%s: %s made the row %d bytes longer", did, what, n-at)
				}
			}
			if dupFirst {
				claim(did)
				step("the first duplicate")
			}
			fin(id)
			step(name)
			claim(did)
			claim(did)
			step("later duplicates")
			var dups int
			if err := x.GetContext(ctx, &dups, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 2, true: 3}[dupFirst]; dups != want {
				t.Errorf("%s: dup_count %d, want %d", did, dups, want)
			}
		}
	}
}
