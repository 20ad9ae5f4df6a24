package leads_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/leads"
)

// The first touch is set once; the last follows the newest touch (an
// older one arriving late changes nothing); a consent record is added
// once however often its record is applied; another tenant's lead is
// untouched.
func TestRecordTouches(t *testing.T) {
	d, _ := dbtest.New(t, "leads_touches")
	ctx := context.Background()
	const a, b = tenantA, tenantB
	newLead := func(tenant string) string {
		t.Helper()
		return upsertBatch(ctx, t, d, tenant, leads.BatchRecord{SourceID: sourceS, SenderRecord: leads.SenderRecord{
			SourceRef: "ada@example.com", Email: "ada@example.com", Payload: json.RawMessage(`{}`), Sightings: 1}})[0].LeadID
	}
	la, lb := newLead(a), newLead(b)
	apply := func(tenant string, recs ...leads.TouchRecord) {
		t.Helper()
		if err := db.InTx(ctx, d, func(tx *sqlx.Tx) error { return leads.RecordTouches(ctx, tx, tenant, recs) }); err != nil {
			t.Fatal(err)
		}
	}
	at := func(h int) string { return time.Date(2026, 12, 1, h, 0, 0, 0, time.UTC).Format(time.RFC3339) }
	consent := &leads.Consent{Purpose: "Contact", Text: "ok", TextSHA256: "abc", Granted: true, At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), FormID: "f1"}
	apply(a, leads.TouchRecord{LeadID: la, First: map[string]string{"utm_source": "news", "at": at(1)},
		Last: map[string]string{"utm_source": "ads", "at": at(10)}, Consent: consent})
	apply(a, leads.TouchRecord{LeadID: la, First: map[string]string{"utm_source": "other", "at": at(2)},
		Last: map[string]string{"utm_source": "late", "at": at(5)}, Consent: consent}) // older, and the same consent again
	apply(a, leads.TouchRecord{LeadID: lb, Last: map[string]string{"utm_source": "wrong tenant", "at": at(12)}}) // b's id under a: nothing
	ex, err := leads.LeadExtras(ctx, d, a, la)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Attribution.First["utm_source"] != "news" || ex.Attribution.Last["utm_source"] != "ads" || len(ex.Consents) != 1 {
		t.Fatalf("after a late record: %+v %+v", ex.Attribution, ex.Consents)
	}
	apply(a, leads.TouchRecord{LeadID: la, Last: map[string]string{"utm_source": "retarget", "at": at(11)}})
	ex, _ = leads.LeadExtras(ctx, d, a, la)
	if ex.Attribution.First["utm_source"] != "news" || ex.Attribution.Last["utm_source"] != "retarget" {
		t.Fatalf("after a newer record: %+v", ex.Attribution)
	}
	exb, _ := leads.LeadExtras(ctx, d, b, lb)
	if exb.Attribution != nil || len(exb.Consents) != 0 {
		t.Fatalf("tenant b's lead changed: %+v", exb)
	}
	// A lead with no touch at all takes the record's own as its first.
	apply(b, leads.TouchRecord{LeadID: lb, Last: map[string]string{"utm_campaign": "x", "at": at(3)}})
	exb, _ = leads.LeadExtras(ctx, d, b, lb)
	if exb.Attribution.First["utm_campaign"] != "x" || exb.Attribution.Last["utm_campaign"] != "x" {
		t.Fatalf("first touch from the last: %+v", exb.Attribution)
	}
}
