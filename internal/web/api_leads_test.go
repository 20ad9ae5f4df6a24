package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
)

type leadJSON struct {
	ID        string          `json:"id"`
	SourceID  string          `json:"source_id"`
	SourceRef string          `json:"source_ref"`
	Email     string          `json:"email"`
	Name      string          `json:"name"`
	Company   string          `json:"company"`
	Status    string          `json:"status"`
	OwnerID   *string         `json:"owner_id"`
	Tags      []string        `json:"tags"`
	Version   int             `json:"version"`
	TimesSeen int             `json:"times_seen"`
	Payload   json.RawMessage `json:"payload"`
}

type leadPage struct {
	Items      []leadJSON `json:"items"`
	NextCursor *string    `json:"next_cursor"`
}

func newLeadsEnv(t *testing.T, prefix string) *apptest.Env {
	return apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisLeads})
}

// createLead posts a manual lead with a fresh key.
func createLead(t *testing.T, e *apptest.Env, token string, body any) leadJSON {
	t.Helper()
	r := e.Do("POST", "/api/v1/leads", token, body, "Idempotency-Key", fmt.Sprintf("k-%d", time.Now().UnixNano()))
	if r.Status != 201 {
		t.Fatalf("create lead: %d %s", r.Status, r.Body)
	}
	var l leadJSON
	r.JSON(t, &l)
	if r.Header.Get("Location") != "/api/v1/leads/"+l.ID || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("create headers: %v", r.Header)
	}
	return l
}

// rawPost sends a request with a raw body and returns status, headers, body.
func rawDo(t *testing.T, e *apptest.Env, method, path, token, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func countLeads(t *testing.T, e *apptest.Env, tenantID string) int {
	t.Helper()
	var n int
	if err := e.App.DB.Get(&n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, tenantID); err != nil {
		t.Fatal(err)
	}
	return n
}

// 50 concurrent POSTs with one key and one body: exactly one lead; every
// answer is the 201 (first or replayed, byte-identical) or a 409 with
// Retry-After.
func TestLeadsCreateConcurrentSameKey(t *testing.T) {
	e := newLeadsEnv(t, "leads_conc")
	a := e.Tenant("conc-a")
	const n = 50
	body := `{"name":"Grace Hopper","email":"grace@navy.test","company":"US Navy","tags":["vip"]}`
	type result struct {
		status int
		header http.Header
		body   []byte
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			st, h, b := rawDo(t, e, "POST", "/api/v1/leads", a.Token, body, "Idempotency-Key", "same-key-1")
			results[i] = result{st, h, b}
		}(i)
	}
	close(start)
	wg.Wait()

	var created []result
	originals, conflicts := 0, 0
	for _, r := range results {
		switch r.status {
		case 201:
			created = append(created, r)
			if r.header.Get("Idempotent-Replayed") == "" {
				originals++
			} else if r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("Idempotent-Replayed: %q", r.header.Get("Idempotent-Replayed"))
			}
		case 409:
			conflicts++
			if r.header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After: %s", r.body)
			}
		default:
			t.Errorf("unexpected %d: %s", r.status, r.body)
		}
	}
	if originals != 1 {
		t.Errorf("%d responses claim to be the original, want exactly 1", originals)
	}
	for _, r := range created[1:] {
		if string(r.body) != string(created[0].body) || r.header.Get("Location") != created[0].header.Get("Location") ||
			r.header.Get("ETag") != created[0].header.Get("ETag") {
			t.Fatalf("responses differ:\n%s\n%s", created[0].body, r.body)
		}
	}
	if got := countLeads(t, e, a.ID); got != 1 {
		t.Fatalf("%d leads, want exactly 1", got)
	}
	t.Logf("50 concurrent: %d × 201 (1 original), %d × 409", len(created), conflicts)
	// Once settled, every retry is a replay.
	st, h, b := rawDo(t, e, "POST", "/api/v1/leads", a.Token, body, "Idempotency-Key", "same-key-1")
	if st != 201 || h.Get("Idempotent-Replayed") != "true" || string(b) != string(created[0].body) {
		t.Fatalf("late retry: %d %v %s", st, h, b)
	}
}

func TestLeadsIdempotencyRules(t *testing.T) {
	e := newLeadsEnv(t, "leads_idem")
	a, b := e.Tenant("idem-a"), e.Tenant("idem-b")
	body := map[string]any{"name": "Alan Turing", "email": "alan@bletchley.test"}

	first := e.Do("POST", "/api/v1/leads", a.Token, body, "Idempotency-Key", "k1")
	if first.Status != 201 {
		t.Fatalf("%d %s", first.Status, first.Body)
	}
	t.Run("same key, different body: 422", func(t *testing.T) {
		r := e.Do("POST", "/api/v1/leads", a.Token, map[string]any{"name": "Alan M. Turing"}, "Idempotency-Key", "k1")
		if r.Status != 422 || !strings.Contains(string(r.Body), "Idempotency-Key") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("same key in another tenant is independent", func(t *testing.T) {
		r := e.Do("POST", "/api/v1/leads", b.Token, body, "Idempotency-Key", "k1")
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || string(r.Body) == string(first.Body) {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
		}
		if countLeads(t, e, b.ID) != 1 || countLeads(t, e, a.ID) != 1 {
			t.Fatal("each tenant has exactly one lead")
		}
	})
	t.Run("expired key makes a new lead", func(t *testing.T) {
		e.App.Web.Idem.Store.SetClock(func() time.Time { return time.Now().Add(25 * time.Hour) })
		defer e.App.Web.Idem.Store.SetClock(nil)
		r := e.Do("POST", "/api/v1/leads", a.Token, body, "Idempotency-Key", "k1")
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || string(r.Body) == string(first.Body) {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
		}
		if countLeads(t, e, a.ID) != 2 {
			t.Fatal("the expired key must create a second lead")
		}
	})
	t.Run("missing or malformed key: 400", func(t *testing.T) {
		for _, k := range []string{"", strings.Repeat("a", 256), "héllo", `"unterminated`} {
			headers := []string{}
			if k != "" {
				headers = []string{"Idempotency-Key", k}
			}
			r := e.Do("POST", "/api/v1/leads", a.Token, body, headers...)
			if r.Status != 400 || r.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("key %q: %d %s", k, r.Status, r.Body)
			}
		}
	})
	t.Run("validation errors name the fields", func(t *testing.T) {
		r := e.Do("POST", "/api/v1/leads", a.Token, map[string]any{"email": "nope", "status": "won", "colour": "red"}, "Idempotency-Key", "k-val")
		if r.Status != 422 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		for _, f := range []string{"email", "status", "colour"} {
			if !strings.Contains(string(r.Body), `"`+f+`"`) {
				t.Errorf("422 does not name %s: %s", f, r.Body)
			}
		}
		if r := e.Do("POST", "/api/v1/leads", a.Token, `{"name":`, "Idempotency-Key", "k-bad"); r.Status != 400 {
			t.Errorf("malformed JSON: %d", r.Status)
		}
	})
	t.Run("notes need a key and replay", func(t *testing.T) {
		var l leadJSON
		first.JSON(t, &l)
		if r := e.Do("POST", "/api/v1/leads/"+l.ID+"/notes", a.Token, map[string]string{"body": "hi"}); r.Status != 400 {
			t.Fatalf("note without key: %d", r.Status)
		}
		n1 := e.Do("POST", "/api/v1/leads/"+l.ID+"/notes", a.Token, map[string]string{"body": "Called, wants a demo"}, "Idempotency-Key", "note-1")
		n2 := e.Do("POST", "/api/v1/leads/"+l.ID+"/notes", a.Token, map[string]string{"body": "Called, wants a demo"}, "Idempotency-Key", "note-1")
		if n1.Status != 201 || n2.Status != 201 || string(n1.Body) != string(n2.Body) || n2.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%d %s / %d %s", n1.Status, n1.Body, n2.Status, n2.Body)
		}
		// The same key on another path is another request: 422.
		if r := e.Do("POST", "/api/v1/leads", a.Token, map[string]string{"body": "Called, wants a demo"}, "Idempotency-Key", "note-1"); r.Status != 422 {
			t.Fatalf("key reused on another endpoint: %d %s", r.Status, r.Body)
		}
		var list struct {
			Items []leads.Note `json:"items"`
		}
		e.Do("GET", "/api/v1/leads/"+l.ID+"/notes", a.Token, nil).JSON(t, &list)
		if len(list.Items) != 1 || list.Items[0].Body != "Called, wants a demo" || list.Items[0].AuthorName == "" {
			t.Fatalf("notes: %+v", list.Items)
		}
		if r := e.Do("POST", "/api/v1/leads/01ARZ3NDEKTSV4RRFFQ69G5FAV/notes", a.Token, map[string]string{"body": "x"}, "Idempotency-Key", "note-404"); r.Status != 404 {
			t.Fatalf("note on unknown lead: %d", r.Status)
		}
	})
}

func patchLead(t *testing.T, e *apptest.Env, token, id, ifMatch string, body string, contentType ...string) (int, http.Header, []byte) {
	t.Helper()
	h := []string{}
	if ifMatch != "" {
		h = append(h, "If-Match", ifMatch)
	}
	if len(contentType) > 0 {
		h = append(h, "Content-Type", contentType[0])
	}
	return rawDo(t, e, "PATCH", "/api/v1/leads/"+id, token, body, h...)
}

func TestLeadsOptimisticConcurrency(t *testing.T) {
	e := newLeadsEnv(t, "leads_occ")
	a := e.Tenant("occ-a")
	l := createLead(t, e, a.Token, map[string]any{"name": "Katherine Johnson", "email": "kj@nasa.test"})

	// Two human edits bring it to version 3.
	if st, h, b := patchLead(t, e, a.Token, l.ID, `"1"`, `{"status":"contacted"}`); st != 200 || h.Get("ETag") != `"2"` {
		t.Fatalf("%d %v %s", st, h, b)
	}
	if st, h, b := patchLead(t, e, a.Token, l.ID, `"2"`, `{"tags":["hot","q3"]}`, "application/merge-patch+json"); st != 200 || h.Get("ETag") != `"3"` {
		t.Fatalf("%d %v %s", st, h, b)
	}

	// Two staff clients read the same version and both PATCH from it.
	for _, c := range []string{"client1", "client2"} {
		if r := e.Do("GET", "/api/v1/leads/"+l.ID, a.Token, nil); r.Header.Get("ETag") != `"3"` {
			t.Fatalf("%s GET: %d %v", c, r.Status, r.Header)
		}
	}
	type out struct {
		status int
		etag   string
	}
	results := make([]out, 2)
	bodies := []string{`{"status":"qualified"}`, `{"status":"lost"}`}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			st, h, _ := patchLead(t, e, a.Token, l.ID, `"3"`, bodies[i])
			results[i] = out{st, h.Get("ETag")}
		}(i)
	}
	close(start)
	wg.Wait()
	ok, stale := 0, 0
	for _, r := range results {
		switch {
		case r.status == 200 && r.etag == `"4"`:
			ok++
		case r.status == 412:
			stale++
		default:
			t.Errorf("unexpected %+v", r)
		}
	}
	if ok != 1 || stale != 1 {
		t.Fatalf("want one 200 (ETag \"4\") and one 412, got %+v", results)
	}

	t.Run("If-Match required and checked", func(t *testing.T) {
		if st, _, b := patchLead(t, e, a.Token, l.ID, "", `{"status":"won"}`); st != 428 {
			t.Fatalf("missing If-Match: %d %s", st, b)
		}
		if st, _, _ := patchLead(t, e, a.Token, l.ID, `"1"`, `{"status":"won"}`); st != 412 {
			t.Fatalf("stale If-Match: %d", st)
		}
		if st, _, _ := patchLead(t, e, a.Token, l.ID, `W/"4"`, `{"status":"won"}`); st != 412 {
			t.Fatalf("weak tags never match If-Match: %d", st)
		}
		if st, h, _ := patchLead(t, e, a.Token, l.ID, `"2", "4"`, `{"status":"won"}`); st != 200 || h.Get("ETag") != `"5"` {
			t.Fatalf("list with the current tag: %d %v", st, h)
		}
		if st, h, _ := patchLead(t, e, a.Token, l.ID, `*`, `{"status":"contacted"}`); st != 200 || h.Get("ETag") != `"6"` {
			t.Fatalf("If-Match *: %d %v", st, h)
		}
		if st, h, _ := patchLead(t, e, a.Token, l.ID, `"6"`, `{"status":"contacted"}`); st != 200 || h.Get("ETag") != `"6"` {
			t.Fatalf("a no-op patch keeps the version: %d %v", st, h)
		}
		r := e.Do("GET", "/api/v1/leads/"+l.ID, a.Token, nil, "If-None-Match", `"6"`)
		if r.Status != 304 {
			t.Fatalf("If-None-Match: %d", r.Status)
		}
	})
	t.Run("only human-owned fields", func(t *testing.T) {
		st, _, b := patchLead(t, e, a.Token, l.ID, `"6"`, `{"email":"x@y.test","name":"X","payload":{},"version":9,"status":"bogus"}`)
		if st != 422 {
			t.Fatalf("%d %s", st, b)
		}
		for _, f := range []string{"email", "name", "payload", "version", "status"} {
			if !strings.Contains(string(b), `"`+f+`"`) {
				t.Errorf("422 does not name %s: %s", f, b)
			}
		}
		if !strings.Contains(string(b), "sender-owned") {
			t.Errorf("the message should say why: %s", b)
		}
	})
	t.Run("owner must be a user of the tenant", func(t *testing.T) {
		other := e.Tenant("occ-b")
		if st, _, b := patchLead(t, e, a.Token, l.ID, `"6"`, fmt.Sprintf(`{"owner_id":%q}`, other.Admin.ID)); st != 422 || !strings.Contains(string(b), "owner_id") {
			t.Fatalf("other tenant's user: %d %s", st, b)
		}
		st, h, b := patchLead(t, e, a.Token, l.ID, `"6"`, fmt.Sprintf(`{"owner_id":%q}`, a.Admin.ID))
		var got leadJSON
		_ = json.Unmarshal(b, &got)
		if st != 200 || got.OwnerID == nil || *got.OwnerID != a.Admin.ID || h.Get("ETag") != `"7"` {
			t.Fatalf("assign: %d %s", st, b)
		}
		st, _, b = patchLead(t, e, a.Token, l.ID, `"7"`, `{"owner_id":null}`)
		_ = json.Unmarshal(b, &got)
		if st != 200 || got.OwnerID != nil {
			t.Fatalf("unassign: %d %s", st, b)
		}
	})
}

// A webhook refresh between a person's GET and PATCH does not make the
// PATCH stale: sender refreshes never touch version.
func TestLeadsWebhookRefreshDoesNotCause412(t *testing.T) {
	e := newLeadsEnv(t, "leads_refresh")
	a := e.Tenant("refresh-a")
	ctx := context.Background()
	const source = "01HSOURCE0000000000000000A" // a webhook source's id (the ingest path is not needed here)
	rec := leads.SenderRecord{SourceRef: "fb-lead-77", Email: "ops@acme.test", Name: "Ada Ops", Payload: json.RawMessage(`{"v":1}`), Sightings: 1}
	id, created, err := leads.UpsertFromSender(ctx, e.App.DB, a.ID, source, rec, time.Now().UTC())
	if err != nil || !created {
		t.Fatal(err, created)
	}
	get := e.Do("GET", "/api/v1/leads/"+id, a.Token, nil)
	if get.Status != 200 || get.Header.Get("ETag") != `"1"` {
		t.Fatalf("%d %v", get.Status, get.Header)
	}
	// The sender re-delivers with a new name and company.
	rec.Name, rec.Company, rec.Payload = "Ada Operations", "Acme", json.RawMessage(`{"v":2}`)
	if _, created, err := leads.UpsertFromSender(ctx, e.App.DB, a.ID, source, rec, time.Now().UTC()); err != nil || created {
		t.Fatal(err, created)
	}
	st, h, b := patchLead(t, e, a.Token, id, get.Header.Get("ETag"), `{"status":"qualified"}`)
	if st != 200 || h.Get("ETag") != `"2"` {
		t.Fatalf("PATCH after a refresh: %d %s", st, b)
	}
	var l leadJSON
	_ = json.Unmarshal(b, &l)
	if l.Status != "qualified" || l.Name != "Ada Operations" || l.Company != "Acme" || l.TimesSeen != 2 || string(l.Payload) != `{"v": 2}` && string(l.Payload) != `{"v":2}` {
		t.Fatalf("lead after refresh + patch: %+v", l)
	}
	// And a refresh after the PATCH keeps the human's status.
	if _, _, err := leads.UpsertFromSender(ctx, e.App.DB, a.ID, source, rec, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	var after leadJSON
	e.Do("GET", "/api/v1/leads/"+id, a.Token, nil).JSON(t, &after)
	if after.Status != "qualified" || after.Version != 2 {
		t.Fatalf("refresh overwrote human fields: %+v", after)
	}
}

func TestLeadsTenantIsolation(t *testing.T) {
	e := newLeadsEnv(t, "leads_iso")
	a, b := e.Tenant("iso-a"), e.Tenant("iso-b")
	l := createLead(t, e, a.Token, map[string]any{"name": "Private Person"})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/leads/" + l.ID, ""},
		{"PATCH", "/api/v1/leads/" + l.ID, `{"status":"won"}`},
		{"GET", "/api/v1/leads/" + l.ID + "/timeline", ""},
		{"GET", "/api/v1/leads/" + l.ID + "/notes", ""},
		{"POST", "/api/v1/leads/" + l.ID + "/notes", `{"body":"x"}`},
		{"GET", "/api/v1/leads/not-an-id", ""},
	} {
		st, _, body := rawDo(t, e, c.method, c.path, b.Token, c.body, "If-Match", `"1"`, "Idempotency-Key", "iso-"+c.method+c.path)
		if st != 404 {
			t.Errorf("%s %s as another tenant: %d %s", c.method, c.path, st, body)
		}
	}
	var page leadPage
	e.Do("GET", "/api/v1/leads", b.Token, nil).JSON(t, &page)
	if len(page.Items) != 0 {
		t.Fatalf("tenant b sees %d leads", len(page.Items))
	}
	if r := e.Do("GET", "/api/v1/leads", "", nil); r.Status != 401 {
		t.Fatalf("no token: %d", r.Status)
	}
}

func TestLeadsTimeline(t *testing.T) {
	e := newLeadsEnv(t, "leads_tl")
	a := e.Tenant("tl-a")
	ctx := context.Background()
	src := e.Do("POST", "/api/v1/sources", a.Token, map[string]any{"slug": "fb", "name": "Facebook Lead Ads", "kind": "standard"})
	var s struct{ ID string }
	src.JSON(t, &s)
	id, _, err := leads.UpsertFromSender(ctx, e.App.DB, a.ID, s.ID, leads.SenderRecord{SourceRef: "lead-1", Name: "Tim Line"}, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	// What the ingest path writes: a processed delivery and two duplicates.
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	// (Duplicates are a count on the delivery with first and last arrival.)
	if _, err := e.App.DB.Exec(`INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at, processed_at, lead_id,
			dup_count, dup_first_at, dup_last_at)
		VALUES (?, ?, '01HDELIVERY000000000000001', 'msg_1', 'webhook', '{}', ?, ?, ?, 2, ?, ?)`,
		a.ID, s.ID, t0, t0, id, t0.Add(time.Second), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st, _, b := patchLead(t, e, a.Token, id, `"1"`, `{"status":"contacted"}`); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	if r := e.Do("POST", "/api/v1/leads/"+id+"/notes", a.Token, map[string]string{"body": "Left a voicemail"}, "Idempotency-Key", "tl-note"); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var tl struct {
		Items []leads.TimelineEntry `json:"items"`
	}
	r := e.Do("GET", "/api/v1/leads/"+id+"/timeline", a.Token, nil)
	r.JSON(t, &tl)
	var kinds []string
	for _, it := range tl.Items {
		kinds = append(kinds, it.Kind)
	}
	want := []string{"note_added", "status_changed", "duplicate", "delivery"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("timeline kinds %v, want %v\n%s", kinds, want, r.Body)
	}
	for i := 1; i < len(tl.Items); i++ {
		if tl.Items[i].At.After(tl.Items[i-1].At) {
			t.Fatalf("not newest first: %v", tl.Items)
		}
	}
	if it := tl.Items[1]; !strings.HasPrefix(it.ActorName, "API token") || string(it.Detail) != `{"from": "new", "to": "contacted"}` && string(it.Detail) != `{"from":"new","to":"contacted"}` {
		t.Fatalf("status change entry: %+v %s", it, it.Detail)
	}
	if it := tl.Items[3]; it.ActorName != "Facebook Lead Ads" || it.SenderDeliveryID != "msg_1" || it.SourceID != s.ID {
		t.Fatalf("delivery entry: %+v", it)
	}
	if it := tl.Items[2]; it.DeliveryID != "01HDELIVERY000000000000001" || it.SenderDeliveryID != "msg_1" || it.Count != 2 ||
		it.FirstAt == nil || !it.FirstAt.Equal(t0.Add(time.Second)) || it.LastAt == nil || !it.LastAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("duplicate entry: %+v", it)
	}
}

func TestLeadsListFiltersAndValidation(t *testing.T) {
	e := newLeadsEnv(t, "leads_filters")
	a := e.Tenant("flt-a")
	mk := func(name, email, company string) leadJSON {
		return createLead(t, e, a.Token, map[string]any{"name": name, "email": email, "company": company})
	}
	smith := mk("John Smith", "john@acme.test", "Acme Corp")
	mk("Jane Doe", "jane@globex.test", "Globex")
	garcia := mk("María García", "maria.g@initech.test", "Initech")
	pct := mk("100% Lead", "pct@x.test", "")
	if st, _, b := patchLead(t, e, a.Token, garcia.ID, `"1"`, fmt.Sprintf(`{"status":"won","owner_id":%q}`, a.Admin.ID)); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	list := func(q string) leadPage {
		t.Helper()
		r := e.Do("GET", "/api/v1/leads?"+q, a.Token, nil)
		if r.Status != 200 {
			t.Fatalf("GET ?%s: %d %s", q, r.Status, r.Body)
		}
		var p leadPage
		r.JSON(t, &p)
		return p
	}
	ids := func(p leadPage) string {
		var s []string
		for _, l := range p.Items {
			s = append(s, l.Name)
		}
		return strings.Join(s, "|")
	}
	cases := map[string]string{
		"":                         "100% Lead|María García|Jane Doe|John Smith",
		"q=smi":                    "John Smith",   // last word of the name
		"q=ACME":                   "John Smith",   // email domain and company, any case
		"q=maria":                  "María García", // accents ignored
		"q=garcia":                 "María García", // accents ignored, last word
		"q=john+s":                 "John Smith",   // a prefix of the whole name
		"q=jane%40glob":            "Jane Doe",     // a prefix of the email
		"q=100%25":                 "100% Lead",    // % is literal
		"q=1_0":                    "",             // _ is literal
		"status=won":               "María García", // status
		"owner=" + a.Admin.ID:      "María García", // owner
		"owner=none&q=j":           "Jane Doe|John Smith",
		"source=manual&status=new": "100% Lead|Jane Doe|John Smith",
		"q=zzz":                    "",
	}
	for q, want := range cases {
		if got := ids(list(q)); got != want {
			t.Errorf("?%s → %q, want %q", q, got, want)
		}
	}
	// Pages of one.
	p1 := list("limit=1")
	if len(p1.Items) != 1 || p1.Items[0].ID != pct.ID || p1.NextCursor == nil {
		t.Fatalf("first page: %+v", p1)
	}
	p2 := list("limit=3&cursor=" + url.QueryEscape(*p1.NextCursor))
	if len(p2.Items) != 3 || p2.Items[2].ID != smith.ID || p2.NextCursor != nil {
		t.Fatalf("last page: %s next=%v", ids(p2), p2.NextCursor)
	}
	if p := list("limit=500"); len(p.Items) != 4 {
		t.Fatalf("limit above 200 is capped, not an error: %d", len(p.Items))
	}
	for _, bad := range []string{"status=open", "limit=0", "limit=x", "cursor=garbage", "owner=bob", "source=nope", "q=" + strings.Repeat("a", 101)} {
		r := e.Do("GET", "/api/v1/leads?"+bad, a.Token, nil)
		if r.Status != 422 {
			t.Errorf("?%s: %d %s", bad, r.Status, r.Body)
		}
	}
}

// 100k leads in one tenant and 10k in another: paging through the first
// tenant while new leads arrive never repeats or skips a lead.
func TestLeadsListPagesStableUnderInserts(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 110k leads")
	}
	e := newLeadsEnv(t, "leads_pages")
	a, b := e.Tenant("pages-a"), e.Tenant("pages-b")
	ctx := context.Background()
	const na, nb = 100_000, 10_000
	start := time.Now()
	if _, err := leads.Seed(ctx, e.App.DB, a.ID, leads.SeedOptions{N: na, RandSeed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := leads.Seed(ctx, e.App.DB, b.ID, leads.SeedOptions{N: nb, RandSeed: 2, SourceID: "01HSOURCE0000000000000000B"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d + %d leads in %s", na, nb, time.Since(start).Round(time.Millisecond))
	var seeded []string
	if err := e.App.DB.Select(&seeded, `SELECT id FROM leads WHERE tenant_id = ?`, a.ID); err != nil {
		t.Fatal(err)
	}
	bIDs := map[string]bool{}
	var bl []string
	_ = e.App.DB.Select(&bl, `SELECT id FROM leads WHERE tenant_id = ?`, b.ID)
	for _, id := range bl {
		bIDs[id] = true
	}

	walk := func(query string, insert bool) (seen map[string]int, pages int) {
		seen = map[string]int{}
		cursor, last := "", ""
		for {
			q := query
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := e.Do("GET", "/api/v1/leads?"+q, a.Token, nil)
			if r.Status != 200 {
				t.Fatalf("page %d: %d %s", pages, r.Status, r.Body)
			}
			var p leadPage
			r.JSON(t, &p)
			pages++
			for _, l := range p.Items {
				if last != "" && l.ID >= last {
					t.Fatalf("page %d: ids not strictly descending (%s after %s)", pages, l.ID, last)
				}
				last = l.ID
				seen[l.ID]++
				if bIDs[l.ID] {
					t.Fatalf("tenant b's lead %s listed for tenant a", l.ID)
				}
			}
			if insert && pages%20 == 0 {
				// New leads arrive between page fetches, through the API and
				// through a webhook upsert.
				createLead(t, e, a.Token, map[string]any{"name": fmt.Sprintf("New Arrival %d", pages)})
				if _, _, err := leads.UpsertFromSender(ctx, e.App.DB, a.ID, "01HSOURCE0000000000000000A",
					leads.SenderRecord{SourceRef: fmt.Sprintf("late-%d", pages), Name: "Late Webhook"}, time.Now().UTC()); err != nil {
					t.Fatal(err)
				}
			}
			if p.NextCursor == nil {
				return seen, pages
			}
			cursor = *p.NextCursor
		}
	}
	seen, pages := walk("limit=200", true)
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("lead %s listed %d times", id, n)
		}
	}
	for _, id := range seeded {
		if seen[id] != 1 {
			t.Fatalf("lead %s skipped", id)
		}
	}
	t.Logf("%d pages, %d leads listed (%d seeded)", pages, len(seen), len(seeded))

	// A filtered search pages the same way: exactly the matching leads.
	var want []string
	if err := e.App.DB.Select(&want, `SELECT id FROM leads WHERE tenant_id = ? AND status = 'qualified'
		AND (name LIKE 'ma%' OR name_last LIKE 'ma%' OR email LIKE 'ma%' OR email_domain LIKE 'ma%' OR company LIKE 'ma%')`, a.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := walk("status=qualified&q=ma&limit=50", false)
	if len(got) != len(want) {
		t.Fatalf("search listed %d leads, want %d", len(got), len(want))
	}
	for _, id := range want {
		if got[id] != 1 {
			t.Fatalf("search skipped %s", id)
		}
	}
}
