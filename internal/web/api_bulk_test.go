package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
)

type bulkResult struct {
	Items []struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Version *int   `json:"version"`
	} `json:"items"`
}

// TestLeadsBulkConcurrentSameKey: 50 identical bulk requests with one
// Idempotency-Key at once apply once (each lead's version +1, one
// timeline entry per lead), every 200 carries the same body, and another
// tenant's lead in the list is not_found and untouched.
func TestLeadsBulkConcurrentSameKey(t *testing.T) {
	e := newLeadsEnv(t, "leads_bulk")
	a := e.Tenant("bulk-a")
	b := e.Tenant("bulk-b")
	sam, err := e.App.Tenants.CreateUser(context.Background(), a.ID, tenants.CreateUserInput{Email: "sam@bulk-a.test", Name: "Sam Rivera",
		Password: "sam-staff-password", Role: tenants.RoleStaff})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		ids = append(ids, createLead(t, e, a.Token, map[string]any{"name": fmt.Sprintf("Lead %d", i), "tags": []string{"imported"}}).ID)
	}
	foreign := createLead(t, e, b.Token, map[string]any{"name": "Not yours"})
	body := fmt.Sprintf(`{"ids":["%s","%s","%s","%s","%s"],"set":{"owner_id":"%s","status":"contacted","add_tags":["webinar"]}}`,
		ids[0], ids[1], foreign.ID, ids[2], "not-an-id", sam.ID)

	const n = 50
	type result struct {
		status   int
		replayed string
		body     string
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			st, h, rb := rawDo(t, e, "POST", "/api/v1/leads/bulk", a.Token, body, "Idempotency-Key", "bulk-key-1")
			results[i] = result{st, h.Get("Idempotent-Replayed"), string(rb)}
		}(i)
	}
	close(start)
	wg.Wait()
	var ok []result
	originals := 0
	for _, r := range results {
		switch r.status {
		case 200:
			ok = append(ok, r)
			if r.replayed == "" {
				originals++
			}
		case 409: // the original still in progress: retry later
		default:
			t.Errorf("unexpected %d: %s", r.status, r.body)
		}
	}
	if originals != 1 || len(ok) == 0 {
		t.Fatalf("%d originals among %d × 200, want exactly 1", originals, len(ok))
	}
	for _, r := range ok {
		if r.body != ok[0].body {
			t.Fatalf("bodies differ:\n%s\n%s", ok[0].body, r.body)
		}
	}
	var res bulkResult
	if err := json.Unmarshal([]byte(ok[0].body), &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"updated", "updated", "not_found", "updated", "not_found"}
	if len(res.Items) != len(want) {
		t.Fatalf("items %+v", res.Items)
	}
	for i, it := range res.Items {
		if it.Status != want[i] {
			t.Errorf("item %d (%s): %s, want %s", i, it.ID, it.Status, want[i])
		}
		if it.Status == "updated" && (it.Version == nil || *it.Version != 2) {
			t.Errorf("item %d: version %v, want 2", i, it.Version)
		}
	}
	for _, id := range ids {
		var l leadJSON
		e.Do("GET", "/api/v1/leads/"+id, a.Token, nil).JSON(t, &l)
		if l.Version != 2 || l.Status != "contacted" || l.OwnerID == nil || *l.OwnerID != sam.ID || strings.Join(l.Tags, ",") != "imported,webinar" {
			t.Errorf("lead %s after bulk: %+v", id, l)
		}
		var tl struct {
			Items []struct{ Kind string } `json:"items"`
		}
		e.Do("GET", "/api/v1/leads/"+id+"/timeline", a.Token, nil).JSON(t, &tl)
		kinds := map[string]int{}
		for _, it := range tl.Items {
			kinds[it.Kind]++
		}
		if kinds["status_changed"] != 1 || kinds["owner_changed"] != 1 || kinds["tags_changed"] != 1 {
			t.Errorf("lead %s timeline %v: want one entry of each change", id, kinds)
		}
	}
	var fl leadJSON
	e.Do("GET", "/api/v1/leads/"+foreign.ID, b.Token, nil).JSON(t, &fl)
	if fl.Version != 1 || fl.Status != "new" || fl.OwnerID != nil {
		t.Fatalf("another tenant's lead changed: %+v", fl)
	}
	// One audit row for the one bulk request that ran, none for replays.
	if n := countAudit(t, e, a.ID, "leads.bulk_edited"); n != 1 {
		t.Fatalf("%d leads.bulk_edited audit rows after 50 identical requests, want 1", n)
	}

	t.Run("same again: unchanged, no new version", func(t *testing.T) {
		st, _, rb := rawDo(t, e, "POST", "/api/v1/leads/bulk", a.Token, body, "Idempotency-Key", "bulk-key-2")
		var r bulkResult
		_ = json.Unmarshal(rb, &r)
		if st != 200 || r.Items[0].Status != "unchanged" || *r.Items[0].Version != 2 {
			t.Fatalf("%d %s", st, rb)
		}
	})
	t.Run("validation", func(t *testing.T) {
		for _, c := range []struct{ body, field string }{
			{`{"ids":[],"set":{"status":"won"}}`, "ids"},
			{`{"ids":["x"],"set":{}}`, "set"},
			{`{"ids":["x"],"set":{"status":"done"}}`, "set.status"},
			{`{"ids":["x"],"set":{"email":"a@b"}}`, "set.email"},
			{fmt.Sprintf(`{"ids":["%s"],"set":{"owner_id":"%s"}}`, ids[0], foreign.ID), "set.owner_id"},
		} {
			st, _, rb := rawDo(t, e, "POST", "/api/v1/leads/bulk", a.Token, c.body, "Idempotency-Key", "v-"+c.field+fmt.Sprint(time.Now().UnixNano()))
			if st != 422 || !strings.Contains(string(rb), `"`+c.field+`"`) {
				t.Errorf("%s: %d %s", c.body, st, rb)
			}
		}
		if st, _, _ := rawDo(t, e, "POST", "/api/v1/leads/bulk", a.Token, body); st != 400 {
			t.Errorf("without Idempotency-Key: %d, want 400", st)
		}
		big := `{"ids":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 501), ",") + `],"set":{"status":"won"}}`
		if st, _, _ := rawDo(t, e, "POST", "/api/v1/leads/bulk", a.Token, big, "Idempotency-Key", "big"); st != 422 {
			t.Errorf("501 ids: %d, want 422", st)
		}
	})
}

// TestLeadsNextStepAndDue: next_step and due_at are human-owned fields:
// PATCH needs If-Match and bumps version, the timeline records them, a
// webhook never writes them, and GET /api/v1/leads?due_before= filters.
func TestLeadsNextStepAndDue(t *testing.T) {
	e := newLeadsEnv(t, "leads_next")
	a := e.Tenant("next-a")
	b := e.Tenant("next-b")
	l := createLead(t, e, a.Token, map[string]any{"name": "Ada"})
	other := createLead(t, e, a.Token, map[string]any{"name": "Bob"})
	due := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)
	patch := fmt.Sprintf(`{"next_step":"  Call back about pricing  ","due_at":"%s"}`, due.Format(time.RFC3339))
	if st, _, _ := rawDo(t, e, "PATCH", "/api/v1/leads/"+l.ID, a.Token, patch); st != 428 {
		t.Fatalf("without If-Match: %d", st)
	}
	st, h, rb := rawDo(t, e, "PATCH", "/api/v1/leads/"+l.ID, a.Token, patch, "If-Match", `"1"`)
	var got struct {
		NextStep string     `json:"next_step"`
		DueAt    *time.Time `json:"due_at"`
		Version  int        `json:"version"`
	}
	_ = json.Unmarshal(rb, &got)
	if st != 200 || got.NextStep != "Call back about pricing" || got.DueAt == nil || !got.DueAt.Equal(due) || got.Version != 2 || h.Get("ETag") != `"2"` {
		t.Fatalf("patch: %d %s", st, rb)
	}
	if st, _, _ := rawDo(t, e, "PATCH", "/api/v1/leads/"+l.ID, a.Token, `{"next_step":"stale"}`, "If-Match", `"1"`); st != 412 {
		t.Fatalf("stale If-Match: %d", st)
	}
	for _, c := range []string{`{"due_at":"tomorrow"}`, `{"next_step":` + `"` + strings.Repeat("x", 501) + `"}`, `{"next_step":5}`} {
		if st, _, rb := rawDo(t, e, "PATCH", "/api/v1/leads/"+l.ID, a.Token, c, "If-Match", `"2"`); st != 422 {
			t.Errorf("%.40s: %d %s", c, st, rb)
		}
	}
	var tl struct {
		Items []struct {
			Kind   string         `json:"kind"`
			Detail map[string]any `json:"detail"`
		} `json:"items"`
	}
	e.Do("GET", "/api/v1/leads/"+l.ID+"/timeline", a.Token, nil).JSON(t, &tl)
	found := false
	for _, it := range tl.Items {
		if it.Kind == leads.EventNextStepChanged {
			found = true
		}
	}
	if !found {
		t.Fatalf("no next_step_changed in the timeline: %+v", tl.Items)
	}

	var page leadPage
	e.Do("GET", "/api/v1/leads?due_before="+due.Add(time.Minute).Format(time.RFC3339), a.Token, nil).JSON(t, &page)
	if len(page.Items) != 1 || page.Items[0].ID != l.ID {
		t.Fatalf("due_before: %+v", page.Items)
	}
	e.Do("GET", "/api/v1/leads?due_before="+due.Add(-time.Minute).Format(time.RFC3339), a.Token, nil).JSON(t, &page)
	if len(page.Items) != 0 {
		t.Fatalf("due_before earlier than the due date: %+v", page.Items)
	}
	if r := e.Do("GET", "/api/v1/leads?due_before=soon", a.Token, nil); r.Status != 422 {
		t.Fatalf("bad due_before: %d", r.Status)
	}
	// Another tenant sees none of it.
	e.Do("GET", "/api/v1/leads?due_before="+due.Add(time.Hour).Format(time.RFC3339), b.Token, nil).JSON(t, &page)
	if len(page.Items) != 0 {
		t.Fatal("another tenant lists our due leads")
	}
	if r := e.Do("PATCH", "/api/v1/leads/"+other.ID, b.Token, `{"next_step":"x"}`, "If-Match", `"1"`); r.Status != 404 {
		t.Fatalf("another tenant's patch: %d", r.Status)
	}
	// Clearing.
	if st, _, rb := rawDo(t, e, "PATCH", "/api/v1/leads/"+l.ID, a.Token, `{"next_step":null,"due_at":null}`, "If-Match", `"2"`); st != 200 || !strings.Contains(string(rb), `"due_at":null`) {
		t.Fatalf("clear: %d %s", st, rb)
	}
}
