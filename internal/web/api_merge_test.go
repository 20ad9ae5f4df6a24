package web_test

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

type mergeLead struct {
	ID         string  `json:"id"`
	Email      string  `json:"email"`
	Name       string  `json:"name"`
	Company    string  `json:"company"`
	Status     string  `json:"status"`
	TimesSeen  int     `json:"times_seen"`
	Version    int     `json:"version"`
	MergedInto *string `json:"merged_into"`
}

func getMergeLead(t *testing.T, e *apptest.Env, token, id string) (mergeLead, string) {
	t.Helper()
	r := e.Do("GET", "/api/v1/leads/"+id, token, nil)
	if r.Status != 200 {
		t.Fatalf("GET lead %s: %d %s", id, r.Status, r.Body)
	}
	var l mergeLead
	r.JSON(t, &l)
	return l, r.Header.Get("ETag")
}

// ids of a lead's notes and of the deliveries on its timeline.
func notesAndDeliveries(t *testing.T, e *apptest.Env, token, id string) (notes, dels []string) {
	t.Helper()
	var ns struct{ Items []struct{ ID string } }
	r := e.Do("GET", "/api/v1/leads/"+id+"/notes", token, nil)
	if r.Status != 200 {
		t.Fatalf("notes: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &ns)
	for _, n := range ns.Items {
		notes = append(notes, n.ID)
	}
	var tl struct {
		Items []struct {
			Kind       string `json:"kind"`
			DeliveryID string `json:"delivery_id"`
		}
	}
	r = e.Do("GET", "/api/v1/leads/"+id+"/timeline", token, nil)
	if r.Status != 200 {
		t.Fatalf("timeline: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &tl)
	for _, it := range tl.Items {
		if it.Kind == "delivery" || it.Kind == "stale" {
			dels = append(dels, it.DeliveryID)
		}
	}
	sort.Strings(notes)
	sort.Strings(dels)
	return notes, dels
}

func addNote(t *testing.T, e *apptest.Env, token, id, body string) {
	t.Helper()
	if r := e.Do("POST", "/api/v1/leads/"+id+"/notes", token, map[string]string{"body": body}, "Idempotency-Key", "n-"+body); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
}

func allProcessed(t *testing.T, e *apptest.Env, tenantID string, n int) {
	t.Helper()
	apptest.Eventually(t, 30*time.Second, fmt.Sprintf("%d deliveries processed", n), func() bool {
		return countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, tenantID) == n &&
			countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, tenantID) == n
	})
}

// The round trip over HTTP with the worker running: possible duplicates
// across sources, a merge (Idempotency-Key replayed, stale If-Match → 412,
// missing → 428), the survivor showing both leads' notes and deliveries, a
// delivery and a duplicate of the merged lead's key after the merge
// updating the survivor, then an unmerge that gives the merged lead back
// every delivery and note it had plus the one that arrived since. Every
// new route answers another tenant's ids with 404.
func TestMergeUnmergeRoundTrip(t *testing.T) {
	e := apptest.New(t, "web_merge", apptest.Options{RedisDB: apptest.RedisWeb, Worker: true})
	a, b := e.Tenant("acme"), e.Tenant("bolt")
	_, secret := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: kinds.Standard})
	now := time.Now()
	postStandard(t, e, "acme", secret, "d1", "rec-web", kinds.Lead{Name: "Ada from web", Email: "ADA@example.com ", Company: "Web Inc"}, now)
	postStandard(t, e, "acme", secret, "d2", "rec-web", kinds.Lead{Name: "Ada from web", Email: "ada@example.com", Company: "Web Inc 2"}, now.Add(time.Second))
	apptest.Eventually(t, 20*time.Second, "the web lead", func() bool { return leadByRef(t, e, a.ID, "rec-web") != "" })
	webID := leadByRef(t, e, a.ID, "rec-web")
	hand := createLead(t, e, a.Token, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0000"})
	foreign := createLead(t, e, b.Token, map[string]any{"name": "Ada elsewhere", "email": "ada@example.com"})
	addNote(t, e, a.Token, webID, "web-note")
	addNote(t, e, a.Token, hand.ID, "hand-note")
	allProcessed(t, e, a.ID, 2)
	webNotes, webDels := notesAndDeliveries(t, e, a.Token, webID)
	handNotes, _ := notesAndDeliveries(t, e, a.Token, hand.ID)
	if len(webNotes) != 1 || len(webDels) != 2 || len(handNotes) != 1 {
		t.Fatalf("before: web notes %v deliveries %v, hand notes %v", webNotes, webDels, handNotes)
	}

	var dups struct {
		Items []struct {
			Lead    struct{ ID string } `json:"lead"`
			Reasons []string            `json:"reasons"`
		} `json:"items"`
	}
	r := e.Do("GET", "/api/v1/leads/"+hand.ID+"/duplicates", a.Token, nil)
	r.JSON(t, &dups)
	if r.Status != 200 || len(dups.Items) != 1 || dups.Items[0].Lead.ID != webID || dups.Items[0].Reasons[0] != "email" {
		t.Fatalf("duplicates: %d %s", r.Status, r.Body)
	}

	// Cross-tenant: every new route.
	body := fmt.Sprintf(`{"others":["%s"],"fields":{"company":"%s"}}`, webID, webID)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/leads/" + hand.ID + "/duplicates", ""},
		{"POST", "/api/v1/leads/" + hand.ID + "/merge", body},
		{"POST", "/api/v1/leads/" + foreign.ID + "/merge", fmt.Sprintf(`{"others":["%s"]}`, webID)},
		{"POST", "/api/v1/leads/" + hand.ID + "/unmerge", fmt.Sprintf(`{"lead_id":"%s"}`, webID)},
	} {
		st, _, rb := rawDo(t, e, c.method, c.path, b.Token, c.body, "Idempotency-Key", "x-"+c.path, "If-Match", "*")
		if st != 404 {
			t.Errorf("tenant B %s %s: %d %s", c.method, c.path, st, rb)
		}
	}

	_, tag := getMergeLead(t, e, a.Token, hand.ID)
	if st, _, rb := rawDo(t, e, "POST", "/api/v1/leads/"+hand.ID+"/merge", a.Token, body, "Idempotency-Key", "m-0"); st != 428 {
		t.Fatalf("merge without If-Match: %d %s", st, rb)
	}
	if st, _, rb := rawDo(t, e, "POST", "/api/v1/leads/"+hand.ID+"/merge", a.Token, body, "Idempotency-Key", "m-stale", "If-Match", `"9"`); st != 412 {
		t.Fatalf("merge with a stale If-Match: %d %s", st, rb)
	}
	st, h1, first := rawDo(t, e, "POST", "/api/v1/leads/"+hand.ID+"/merge", a.Token, body, "Idempotency-Key", "m-1", "If-Match", tag)
	if st != 200 {
		t.Fatalf("merge: %d %s", st, first)
	}
	st, h2, again := rawDo(t, e, "POST", "/api/v1/leads/"+hand.ID+"/merge", a.Token, body, "Idempotency-Key", "m-1", "If-Match", tag)
	if st != 200 || !bytes.Equal(first, again) || h2.Get("Idempotent-Replayed") != "true" || h1.Get("ETag") != `"2"` {
		t.Fatalf("replay: %d %q %s", st, h2.Get("Idempotent-Replayed"), again)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM lead_merges WHERE tenant_id = ?`, a.ID); n != 1 {
		t.Fatalf("%d merge records, want 1", n)
	}
	surv, _ := getMergeLead(t, e, a.Token, hand.ID)
	merged, _ := getMergeLead(t, e, a.Token, webID)
	if surv.Company != "Web Inc 2" || surv.Name != "Ada Lovelace" || surv.TimesSeen != 3 || merged.MergedInto == nil || *merged.MergedInto != hand.ID {
		t.Fatalf("after merge: survivor %+v, merged %+v", surv, merged)
	}
	if n, d := notesAndDeliveries(t, e, a.Token, hand.ID); len(n) != 2 || len(d) != 2 {
		t.Fatalf("survivor shows notes %v, deliveries %v", n, d)
	}
	var list struct{ Items []struct{ ID string } }
	e.Do("GET", "/api/v1/leads?q=ada", a.Token, nil).JSON(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != hand.ID {
		t.Fatalf("search after merge: %+v", list.Items)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'lead.merged'`, a.ID); n != 1 {
		t.Fatalf("%d lead.merged audit rows", n)
	}

	// After the merge: a new delivery of the merged key, and a duplicate.
	postStandard(t, e, "acme", secret, "d3", "rec-web", kinds.Lead{Company: "After Merge Ltd"}, now.Add(2*time.Second))
	allProcessed(t, e, a.ID, 3)
	postStandard(t, e, "acme", secret, "d3", "rec-web", kinds.Lead{Company: "After Merge Ltd"}, now.Add(2*time.Second))
	apptest.Eventually(t, 10*time.Second, "the survivor updated", func() bool {
		s, _ := getMergeLead(t, e, a.Token, hand.ID)
		return s.Company == "After Merge Ltd" && s.TimesSeen == 5
	})
	if n := countRows(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, a.ID); n != 2 {
		t.Fatalf("%d leads, want 2", n)
	}

	// Unmerge.
	st, _, rb := rawDo(t, e, "POST", "/api/v1/leads/"+hand.ID+"/unmerge", a.Token, fmt.Sprintf(`{"lead_id":"%s"}`, webID))
	if st != 200 {
		t.Fatalf("unmerge: %d %s", st, rb)
	}
	back, _ := getMergeLead(t, e, a.Token, webID)
	surv, _ = getMergeLead(t, e, a.Token, hand.ID)
	if back.MergedInto != nil || back.Status != "new" || back.Company != "After Merge Ltd" || back.TimesSeen != 4 ||
		surv.TimesSeen != 1 || surv.Email != "ada@example.com" {
		t.Fatalf("after unmerge: restored %+v, survivor %+v", back, surv)
	}
	n, d := notesAndDeliveries(t, e, a.Token, webID)
	if strings.Join(n, ",") != strings.Join(webNotes, ",") || len(d) != 3 || !contains(d, webDels[0]) || !contains(d, webDels[1]) {
		t.Fatalf("restored notes %v (had %v), deliveries %v (had %v + 1)", n, webNotes, d, webDels)
	}
	if n, d := notesAndDeliveries(t, e, a.Token, hand.ID); strings.Join(n, ",") != strings.Join(handNotes, ",") || len(d) != 0 {
		t.Fatalf("survivor keeps notes %v, deliveries %v", n, d)
	}
	if st, _, _ := rawDo(t, e, "POST", "/api/v1/leads/"+hand.ID+"/unmerge", a.Token, fmt.Sprintf(`{"lead_id":"%s"}`, webID)); st != 409 {
		t.Fatalf("second unmerge: %d", st)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'lead.unmerged'`, a.ID); n != 1 {
		t.Fatalf("%d lead.unmerged audit rows", n)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// A merge racing 20 concurrent deliveries of the merged lead's key loses
// nothing: every delivery is processed onto the merged lead's own row, its
// sightings reach the survivor whichever committed first, and one lead is
// visible. 20 identical merge requests with one Idempotency-Key merge once.
func TestMergeRacingDeliveries(t *testing.T) {
	e := apptest.New(t, "web_merge_race", apptest.Options{RedisDB: apptest.RedisWeb, Worker: true})
	a := e.Tenant("acme")
	_, secret := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: kinds.Standard})
	now := time.Now()
	ray := kinds.Lead{Email: "ray@example.org", Name: "Ray"}
	postStandard(t, e, "acme", secret, "r0", "rec-ray", ray, now)
	apptest.Eventually(t, 20*time.Second, "the lead", func() bool { return leadByRef(t, e, a.ID, "rec-ray") != "" })
	rayID := leadByRef(t, e, a.ID, "rec-ray")
	surv := createLead(t, e, a.Token, map[string]any{"name": "Ray (by hand)", "email": "ray@example.org"})

	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 1; i <= 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			body := kinds.SampleBody(kinds.Standard, "", "rec-ray", ray, now.Add(time.Duration(i)*time.Millisecond))
			status, _, err := e.Hook("acme", "web", kinds.Standard, secret).Try(fmt.Sprintf("r%d", i), body, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			if status != 200 {
				t.Errorf("delivery r%d: %d", i, status)
			}
		}(i)
	}
	body := fmt.Sprintf(`{"others":["%s"]}`, rayID)
	statuses := make([]int, 20)
	replays := make([]string, 20)
	for i := range 20 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			st, h, _ := rawDo(t, e, "POST", "/api/v1/leads/"+surv.ID+"/merge", a.Token, body, "Idempotency-Key", "race-merge", "If-Match", `"1"`)
			statuses[i], replays[i] = st, h.Get("Idempotent-Replayed")
		}(i)
	}
	close(start)
	wg.Wait()
	originals := 0
	for i, st := range statuses {
		switch {
		case st == 200 && replays[i] == "":
			originals++
		case st == 200, st == 409:
		default:
			t.Errorf("merge request %d: %d", i, st)
		}
	}
	if originals != 1 {
		t.Fatalf("%d original merges, want 1 (%v)", originals, statuses)
	}
	allProcessed(t, e, a.ID, 21)
	if n := countRows(t, e, `SELECT COUNT(*) FROM lead_merges WHERE tenant_id = ?`, a.ID); n != 1 {
		t.Fatalf("%d merge records", n)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND lead_id = ?`, a.ID, rayID); n != 21 {
		t.Fatalf("%d deliveries on the merged lead, want 21", n)
	}
	s, _ := getMergeLead(t, e, a.Token, surv.ID)
	m, _ := getMergeLead(t, e, a.Token, rayID)
	if m.TimesSeen != 21 || s.TimesSeen != 22 || m.MergedInto == nil {
		t.Fatalf("sightings: merged %d (want 21), survivor %d (want 22)", m.TimesSeen, s.TimesSeen)
	}
	var list struct{ Items []struct{ ID string } }
	e.Do("GET", "/api/v1/leads", a.Token, nil).JSON(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != surv.ID {
		t.Fatalf("visible leads: %+v", list.Items)
	}
}
