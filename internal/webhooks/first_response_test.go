package webhooks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// first_responded_at is set only by a person's first status change, note
// or next step (docs/ARCHITECTURE.md, "Assignment and first response"), each path on a lead of its own: the
// webhook creation with its assignment, a webhook re-delivery, reconcile
// (a new lead and an update), an owner or tags change (API and bulk), a
// patch that changes nothing leave it NULL; a status change (API and
// bulk), a note and a next step set it, once: a later action does not
// move it.
func TestFirstResponseOnlyByAPersonsAction(t *testing.T) {
	e := apptest.New(t, "hooks_first_response", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("fr")
	ctx := context.Background()
	ada, bob := newUser(t, e, ten.ID, "Ada"), newUser(t, e, ten.ID, "Bob")
	if r := putRules(t, e, ten.Token, map[string]any{"rules": []any{
		map[string]any{"name": "Everyone", "strategy": "round_robin", "members": []string{ada.ID, bob.ID}},
	}}); r.Status != 200 {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
	s := newSource(t, e, ten.ID, "std", kinds.Standard)
	const n = 12
	for i := 0; i < n; i++ {
		h, body := signed(t, s, fmt.Sprintf("d%d", i), fmt.Sprintf("r%d", i), kinds.Lead{Email: fmt.Sprintf("l%d@example.com", i), Name: "L"}, time.Now())
		if r := send(t, s.URL, h, body); r.Ack.Status != "accepted" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	apptest.Eventually(t, 30*time.Second, "leads", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID) == n
	})
	ls := ownedLeads(t, e, ten.ID)
	id := func(i int) string { return ls[fmt.Sprintf("r%d", i)].ID }
	responded := func(id string) *time.Time {
		t.Helper()
		l, err := leads.Get(ctx, e.App.DB, ten.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return l.FirstRespondedAt
	}
	not := func(what, id string) {
		t.Helper()
		if at := responded(id); at != nil {
			t.Fatalf("%s set first_responded_at (%s)", what, at)
		}
	}
	must := func(what, id string) time.Time {
		t.Helper()
		at := responded(id)
		if at == nil {
			t.Fatalf("%s did not set first_responded_at", what)
		}
		return *at
	}
	patch := func(id, body string) {
		t.Helper()
		if r := e.Do("PATCH", "/api/v1/leads/"+id, ten.Token, body, "If-Match", "*", "Content-Type", "application/merge-patch+json"); r.Status != 200 {
			t.Fatalf("patch %s: %d %s", body, r.Status, r.Body)
		}
	}
	bulk := func(key string, set map[string]any, ids ...string) {
		t.Helper()
		if r := e.Do("POST", "/api/v1/leads/bulk", ten.Token, map[string]any{"ids": ids, "set": set}, "Idempotency-Key", key); r.Status != 200 {
			t.Fatalf("bulk %v: %d %s", set, r.Status, r.Body)
		}
	}
	for i := 0; i < n; i++ {
		if ls[fmt.Sprintf("r%d", i)].OwnerID == nil {
			t.Fatalf("lead r%d not assigned", i)
		}
		not("the webhook creation and its assignment", id(i))
	}

	// Must not.
	h, body := signed(t, s, "d0-again", "r0", kinds.Lead{Email: "l0-new@example.com", Name: "L"}, time.Now())
	if r := send(t, s.URL, h, body); r.Ack.Status != "accepted" {
		t.Fatalf("%s", r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "re-delivery applied", func() bool {
		l, err := leads.Get(ctx, e.App.DB, ten.ID, id(0))
		return err == nil && l.Email == "l0-new@example.com"
	})
	not("a webhook re-delivery", id(0))
	var recNew string
	if err := sqlxTx(ctx, e, func(tx *sqlx.Tx) error {
		raw := kinds.SampleBody(s.Kind, "rec-1", "r1", kinds.Lead{Email: "l1-rec@example.com", Name: "L"}, time.Now().Add(time.Second))
		if _, err := webhooks.Apply(ctx, tx, nil, ten.ID, s.Source, raw, time.Now()); err != nil {
			return err
		}
		raw = kinds.SampleBody(s.Kind, "rec-2", "r-rec-new", kinds.Lead{Email: "rec@example.com", Name: "R"}, time.Now())
		res, err := webhooks.Apply(ctx, tx, nil, ten.ID, s.Source, raw, time.Now())
		recNew = res.LeadID
		if err == nil && res.OwnerID == "" {
			err = fmt.Errorf("reconciled lead not assigned: %+v", res)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	not("a reconcile update", id(1))
	not("a reconcile creation and its assignment", recNew)
	patch(id(2), fmt.Sprintf(`{"owner_id":%q}`, ada.ID))
	patch(id(2), fmt.Sprintf(`{"owner_id":%q}`, bob.ID))
	not("an owner change", id(2))
	patch(id(3), `{"tags":["vip"]}`)
	not("a tags change", id(3))
	patch(id(4), `{"status":"new"}`) // the status it has: no change
	not("a patch that changes nothing", id(4))
	bulk("fr-bulk-owner", map[string]any{"owner_id": ada.ID}, id(5), id(6))
	bulk("fr-bulk-tags", map[string]any{"add_tags": []string{"hot"}}, id(5), id(6))
	not("a bulk owner change", id(5))
	not("a bulk tags change", id(6))

	// Must, once.
	patch(id(7), `{"status":"contacted"}`)
	first := must("a status change", id(7))
	if r := e.Do("POST", "/api/v1/leads/"+id(8)+"/notes", ten.Token, map[string]any{"body": "called"}, "Idempotency-Key", "fr-note-1"); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
	must("a note", id(8))
	patch(id(9), `{"next_step":"call back"}`)
	must("a next step", id(9))
	bulk("fr-bulk-status", map[string]any{"status": "qualified"}, id(10), id(11))
	must("a bulk status change", id(10))
	must("a bulk status change", id(11))
	// A later status change, note and next step leave the first one.
	time.Sleep(5 * time.Millisecond)
	patch(id(7), `{"status":"qualified","next_step":"send offer"}`)
	if r := e.Do("POST", "/api/v1/leads/"+id(7)+"/notes", ten.Token, map[string]any{"body": "again"}, "Idempotency-Key", "fr-note-2"); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
	bulk("fr-bulk-status-2", map[string]any{"status": "won"}, id(7))
	if again := must("a status change", id(7)); !again.Equal(first) {
		t.Fatalf("a later action moved first_responded_at: %s → %s", first, again)
	}
	// And the leads that were not answered still are not.
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6} {
		not("nothing", id(i))
	}
}
