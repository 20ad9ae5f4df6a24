package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// TestHubSpotNameParts: HubSpot sends firstname and lastname as separate
// contact.propertyChange events, in any order; the lead's name is
// assembled from both and a later change of one part keeps the other.
// Concurrent deliveries of the two parts make the whole name, whichever
// commits first. A person's work on the lead (status, tags, next step:
// the human-owned fields) and its version are never touched by them.
func TestHubSpotNameParts(t *testing.T) {
	e := apptest.New(t, "hooks_hubspot_names", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	s := newSource(t, e, ten.ID, "hubspot-names", kinds.HubSpot)
	ctx := context.Background()
	eventSeq := 0
	deliver := func(objectID string, props ...string) {
		t.Helper()
		var events []any
		for i := 0; i+1 < len(props); i += 2 {
			eventSeq++
			events = append(events, kinds.HubSpotEvent(fmt.Sprintf("ev-%d", eventSeq), objectID, "contact.propertyChange", props[i], props[i+1], time.Now()))
		}
		body, _ := json.Marshal(events)
		h, b := signBody(t, s, "", body, time.Now())
		if r := send(t, s.URL, h, b); r.Status != 200 || r.Ack.Status != "accepted" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	nameIs := func(objectID, want string) {
		t.Helper()
		apptest.Eventually(t, 15*time.Second, objectID+" named "+want, func() bool {
			return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ? AND name = ?`,
				ten.ID, s.ID, objectID, want) == 1
		})
	}
	processed := func(n int) {
		t.Helper()
		apptest.Eventually(t, 15*time.Second, fmt.Sprintf("%d deliveries processed", n), func() bool {
			return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ? AND state = 'processed'`, ten.ID, s.ID) == n
		})
	}

	// First name, then last name, in two deliveries.
	deliver("601", "firstname", "Ada")
	nameIs("601", "Ada")
	deliver("601", "lastname", "Lovelace")
	nameIs("601", "Ada Lovelace")
	// The other order, and both in one POST.
	deliver("602", "lastname", "Lovelace")
	nameIs("602", "Lovelace")
	deliver("602", "firstname", "Ada")
	nameIs("602", "Ada Lovelace")
	deliver("603", "lastname", "Hopper", "firstname", "Grace")
	nameIs("603", "Grace Hopper")
	// A later change of one part keeps the other; other properties leave
	// the name alone.
	deliver("601", "firstname", "Augusta Ada")
	nameIs("601", "Augusta Ada Lovelace")
	deliver("601", "email", "ada@example.com", "lastname", "King")
	nameIs("601", "Augusta Ada King")

	// Concurrent: each part in its own POST, all at once, for ten leads.
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 10 {
		for _, part := range [][2]string{{"firstname", "Ada"}, {"lastname", "Lovelace"}} {
			body, _ := json.Marshal([]any{kinds.HubSpotEvent(fmt.Sprintf("conc-%d-%s", i, part[0]), fmt.Sprintf("70%d", i),
				"contact.propertyChange", part[0], part[1], time.Now())})
			h, b := signBody(t, s, "", body, time.Now())
			wg.Add(1)
			go func(h http.Header, b []byte) {
				defer wg.Done()
				<-start
				if r := send(t, s.URL, h, b); r.Status != 200 {
					t.Errorf("%d %s", r.Status, r.Body)
				}
			}(h, b)
		}
	}
	close(start)
	wg.Wait()
	apptest.Eventually(t, 20*time.Second, "ten leads named Ada Lovelace", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref LIKE '70%' AND name = 'Ada Lovelace'`,
			ten.ID, s.ID) == 10
	})

	// A person's work on the lead survives the name's parts.
	var leadID string
	if err := e.App.DB.GetContext(ctx, &leadID, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = '602'`, ten.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	ls := leads.NewService(e.App.DB, webhooks.NewReads(e.App.DB), nil)
	actor := tenants.Principal{TenantID: ten.ID, Name: "Test", Role: tenants.RoleAdmin}
	status, tags, step := "qualified", []string{"vip"}, "call Tuesday"
	edited, err := ls.Patch(ctx, ten.ID, leadID, actor, leads.AnyVersion, leads.PatchInput{Status: &status, Tags: &tags, NextStep: &step})
	if err != nil {
		t.Fatal(err)
	}
	before := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ? AND state = 'processed'`, ten.ID, s.ID)
	deliver("602", "firstname", "Augusta")
	deliver("602", "lastname", "Byron")
	processed(before + 2)
	nameIs("602", "Augusta Byron")
	l, err := leads.Get(ctx, e.App.DB, ten.ID, leadID)
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != status || !slices.Equal([]string(l.Tags), tags) || l.NextStep != step || l.Version != edited.Version {
		t.Fatalf("human-owned fields changed: status %q tags %v next step %q version %d (was %d)", l.Status, l.Tags, l.NextStep, l.Version, edited.Version)
	}
}
