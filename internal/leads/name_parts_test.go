package leads_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
)

// A record with one part of the name changes that part and keeps the
// other, in whichever order they come and within one batch; a whole name
// written meanwhile (another record's, a merge's pick) is what the next
// part is set against, never parts left from before it; a stale part
// changes nothing.
func TestNameParts(t *testing.T) {
	d, _ := dbtest.New(t, "leads_name_parts")
	ctx := context.Background()
	const ten, src = tenantA, sourceS
	seq := 0
	write := func(recs ...leads.SenderRecord) {
		t.Helper()
		var batch []leads.BatchRecord
		for _, r := range recs {
			seq++
			if r.OrderKey == "" {
				r.OrderKey = leads.OrderKey(time.Date(2026, 12, 1, 0, 0, seq, 0, time.UTC), fmt.Sprintf("%04d", seq))
			}
			r.Payload, r.Sightings = json.RawMessage(`{}`), 1
			batch = append(batch, leads.BatchRecord{SourceID: src, SenderRecord: r})
		}
		upsertBatch(ctx, t, d, ten, batch...)
	}
	nameOf := func(ref string) string {
		t.Helper()
		var n string
		if err := d.GetContext(ctx, &n, `SELECT name FROM leads WHERE tenant_id = ? AND source_ref = ?`, ten, ref); err != nil {
			t.Fatal(err)
		}
		return n
	}
	expect := func(ref, want string) {
		t.Helper()
		if got := nameOf(ref); got != want {
			t.Fatalf("%s: name %q, want %q", ref, got, want)
		}
	}

	write(leads.SenderRecord{SourceRef: "a", FirstName: "Ada"})
	expect("a", "Ada")
	write(leads.SenderRecord{SourceRef: "a", LastName: "Lovelace"})
	expect("a", "Ada Lovelace")
	write(leads.SenderRecord{SourceRef: "a", FirstName: "Augusta Ada"})
	expect("a", "Augusta Ada Lovelace")
	write(leads.SenderRecord{SourceRef: "a", Email: "ada@example.com"})
	expect("a", "Augusta Ada Lovelace")

	// Both parts of a new lead in one batch, last name first.
	write(leads.SenderRecord{SourceRef: "b", LastName: "Hopper"}, leads.SenderRecord{SourceRef: "b", FirstName: "Grace"})
	expect("b", "Grace Hopper")

	// A whole name written meanwhile: the next part is set against it.
	write(leads.SenderRecord{SourceRef: "a", Name: "Ada King"})
	write(leads.SenderRecord{SourceRef: "a", LastName: "Byron"})
	expect("a", "Ada Byron")
	if _, err := d.ExecContext(ctx, `UPDATE leads SET name = 'Grace Murray Hopper' WHERE tenant_id = ? AND source_ref = 'b'`, ten); err != nil {
		t.Fatal(err) // as a merge's pick writes it (store_merge.go)
	}
	write(leads.SenderRecord{SourceRef: "b", FirstName: "Amazing Grace"})
	expect("b", "Amazing Grace Hopper")
	// A one-word name is the part the record does not set.
	write(leads.SenderRecord{SourceRef: "c", Name: "Lovelace"})
	write(leads.SenderRecord{SourceRef: "c", FirstName: "Ada"})
	expect("c", "Ada Lovelace")

	// A stale part changes nothing.
	write(leads.SenderRecord{SourceRef: "a", FirstName: "Old", OrderKey: leads.OrderKey(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "0000")})
	expect("a", "Ada Byron")

	// The two parts' events processed in the other order, by two batches
	// (two workers): "firstname" is older than the lead once "lastname"
	// was applied, but it is the newest record of its part, so it sets it.
	// An older record of the same part still changes nothing.
	at := func(sec int) string {
		return leads.OrderKey(time.Date(2026, 12, 2, 0, 0, sec, 0, time.UTC), fmt.Sprintf("%04d", sec))
	}
	write(leads.SenderRecord{SourceRef: "d", LastName: "Lovelace", Email: "ada@example.com", OrderKey: at(2)})
	write(leads.SenderRecord{SourceRef: "d", FirstName: "Ada", Email: "old@example.com", OrderKey: at(1)})
	expect("d", "Ada Lovelace")
	var email string
	if err := d.GetContext(ctx, &email, `SELECT email FROM leads WHERE tenant_id = ? AND source_ref = 'd'`, ten); err != nil || email != "ada@example.com" {
		t.Fatalf("the older record's email was written: %q %v", email, err) // its other fields stay stale
	}
	write(leads.SenderRecord{SourceRef: "d", FirstName: "Augusta", OrderKey: at(4)})
	write(leads.SenderRecord{SourceRef: "d", FirstName: "Ada", OrderKey: at(3)})
	expect("d", "Augusta Lovelace")
	write(leads.SenderRecord{SourceRef: "d", LastName: "King", OrderKey: at(3)})
	expect("d", "Augusta King")
}
