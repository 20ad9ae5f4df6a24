package notify_test

import (
	"context"
	"testing"
)

// Erasing a lead blanks the messages that named it (kept for the preview
// or as sent), in the erasure's transaction; another lead's stay.
func TestEraseBlanksMessages(t *testing.T) {
	ctx := context.Background()
	e, ten := adminOwnsLeads(t, "notify_erase")
	n := e.App.Web.Notify
	gone := createLead(t, e, ten.Token, "Forgetme")
	kept := createLead(t, e, ten.Token, "Keepme")
	for _, r := range rows(t, e, ten.ID) {
		if err := n.Send(ctx, ten.ID, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.Do("POST", "/api/v1/leads/"+gone+"/erase", ten.Token, nil, "Idempotency-Key", "erase-1"); r.Status != 200 {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	rs := rows(t, e, ten.ID)
	if r := rs["assigned:"+gone+":new"]; r.Subject != nil || r.Text != nil || r.HTML != nil {
		t.Fatalf("the erased lead's message kept: %+v", r)
	}
	if r := rs["assigned:"+kept+":new"]; r.Text == nil || r.Subject == nil {
		t.Fatalf("another lead's message blanked: %+v", r)
	}
}
