package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// echoReceiver answers every outbound event with its own body, so the
// attempts' stored responses hold the person's data too.
func echoReceiver(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(200)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// leadByRef is the id of a tenant's lead of a natural key ("" when none).
func leadByRef(t *testing.T, e *apptest.Env, tenantID, ref string) string {
	t.Helper()
	var id []string
	if err := e.App.DB.Select(&id, `SELECT id FROM leads WHERE tenant_id = ? AND source_ref = ?`, tenantID, ref); err != nil {
		t.Fatal(err)
	}
	if len(id) == 0 {
		return ""
	}
	return id[0]
}

func countRows(t *testing.T, e *apptest.Env, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.App.DB.Get(&n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// textColumn is one text, blob or JSON column of a table.
type textColumn struct {
	Table  string `db:"TABLE_NAME"`
	Column string `db:"COLUMN_NAME"`
}

// findEverywhere reads every text, blob and JSON column of every table of
// the test database and returns where any of needles occurs (any case).
func findEverywhere(t *testing.T, d *sqlx.DB, needles ...string) []string {
	t.Helper()
	var cols []textColumn
	if err := d.Select(&cols, `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND DATA_TYPE IN ('char', 'varchar', 'tinytext', 'text', 'mediumtext', 'longtext',
			'binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob', 'json', 'enum', 'set')
		ORDER BY TABLE_NAME, ORDINAL_POSITION`); err != nil {
		t.Fatal(err)
	}
	if len(cols) < 50 {
		t.Fatalf("only %d text columns found: the scan is not reading the schema", len(cols))
	}
	var hits []string
	for _, c := range cols {
		rows, err := d.Query("SELECT `" + c.Column + "` FROM `" + c.Table + "`")
		if err != nil {
			t.Fatalf("%s.%s: %v", c.Table, c.Column, err)
		}
		for rows.Next() {
			var v []byte
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			low := bytes.ToLower(v)
			for _, n := range needles {
				if bytes.Contains(low, []byte(strings.ToLower(n))) {
					hits = append(hits, fmt.Sprintf("%s.%s holds %q: %.200s", c.Table, c.Column, n, v))
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return hits
}

// A person's export and erasure (docs/ARCHITECTURE.md, "Personal data") on the real stack: the
// export holds everything there was (fields, payloads with duplicates,
// dead letters, notes, timeline, outbound events with attempts); another
// tenant's id is 404 and changes nothing; 20 concurrent erasures under one
// Idempotency-Key erase once; a re-delivery of the record afterwards is
// acknowledged and dropped; and then no text, blob or JSON column of any
// table holds the person's email, name or phone.
func TestLeadExportAndErase(t *testing.T) {
	e := apptest.New(t, "web_privacy", apptest.Options{RedisDB: apptest.RedisWeb, Worker: true})
	ctx := context.Background()
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	echo := echoReceiver(t)
	for _, tn := range []apptest.Tenant{acme, beta} {
		res := e.Do("POST", "/api/v1/endpoints", tn.Token, map[string]any{"url": echo.URL,
			"events": []string{events.LeadCreated, events.LeadUpdated, events.LeadStatusChanged}})
		if res.Status != 201 {
			t.Fatalf("endpoint: %d %s", res.Status, res.Body)
		}
	}
	secrets := map[string]string{}
	srcIDs := map[string]string{}
	for _, tn := range []apptest.Tenant{acme, beta} {
		src, secret := e.Source(tn.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: kinds.Standard})
		secrets[tn.Slug], srcIDs[tn.Slug] = secret, src.ID
	}

	const email, name, phone = "Erin.Erasable@example.org", "Erin Erasable", "+15550001234"
	erin := kinds.Lead{Email: email, Name: name, Phone: phone, Company: "Erasure Inc"}
	una := kinds.Lead{Email: "una.related@example.org", Name: "Una Related"}
	bob := kinds.Lead{Email: "bob.beta@example.org", Name: "Bob Beta"}
	now := time.Now()
	postStandard(t, e, "acme", secrets["acme"], "d1", "rec-erin", erin, now)
	postStandard(t, e, "acme", secrets["acme"], "d1", "rec-erin", erin, now) // a duplicate
	postStandard(t, e, "acme", secrets["acme"], "u1", "rec-una", una, now)
	postStandard(t, e, "beta", secrets["beta"], "b1", "rec-bob", bob, now)
	apptest.Eventually(t, 20*time.Second, "the first leads", func() bool {
		return leadByRef(t, e, acme.ID, "rec-erin") != "" && leadByRef(t, e, acme.ID, "rec-una") != "" && leadByRef(t, e, beta.ID, "rec-bob") != ""
	})
	moved := erin
	moved.Company = "Erasure Holdings"
	postStandard(t, e, "acme", secrets["acme"], "d2", "rec-erin", moved, now.Add(time.Second))
	id := leadByRef(t, e, acme.ID, "rec-erin")
	apptest.Eventually(t, 20*time.Second, "the update", func() bool {
		var l leadJSON
		e.Do("GET", "/api/v1/leads/"+id, acme.Token, nil).JSON(t, &l)
		return l.Company == "Erasure Holdings"
	})
	// People's work: a status change, a note (its response stored under its key).
	if st, _, b := patchLead(t, e, acme.Token, id, "*", `{"status":"contacted"}`); st != 200 {
		t.Fatalf("patch: %d %s", st, b)
	}
	if r := e.Do("POST", "/api/v1/leads/"+id+"/notes", acme.Token, map[string]string{"body": "Called Erin Erasable about pricing"},
		"Idempotency-Key", "note-erin"); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
	// A CSV export searched for her email: the audit row holds the search.
	if r := e.Do("GET", "/api/v1/leads/export.csv?q="+url.QueryEscape(strings.ToLower(email)), acme.Token, nil); r.Status != 200 ||
		!strings.Contains(string(r.Body), id) {
		t.Fatalf("csv export: %d %s", r.Status, r.Body)
	}
	// What the ingest tables may hold besides: dead letters of her record
	// (one that maps to her natural key, one that only mentions her email),
	// another person's dead letter, and a delivery that failed to map.
	mapped := kinds.SampleBody(kinds.Standard, "", "rec-erin", erin, now)
	for _, dl := range []struct{ id, body string }{
		{ids.New(), string(mapped)},
		{ids.New(), "not json, but " + strings.ToLower(email)},
		{ids.New(), string(kinds.SampleBody(kinds.Standard, "", "rec-una", una, now))},
	} {
		if _, err := e.App.DB.Exec(`INSERT INTO dead_letters (tenant_id, source_id, id, reason, headers, body, received_at)
			VALUES (?, ?, ?, 'no delivery id', '{}', ?, ?)`, acme.ID, srcIDs["acme"], dl.id, dl.body, now.UTC()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.App.DB.Exec(`INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, payload, received_at, processed_at, state, last_error)
		VALUES (?, ?, ?, 'f1', ?, ?, ?, 'failed', 'no natural key')`, acme.ID, srcIDs["acme"], ids.New(),
		`{"data":{"email":"`+email+`"}}`, now.UTC(), now.UTC()); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 20*time.Second, "the duplicate counted", func() bool {
		return countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND delivery_id = 'd1' AND dup_count = 1`, acme.ID) == 1
	})
	apptest.Eventually(t, 20*time.Second, "the events answered", func() bool {
		return countRows(t, e, `SELECT COUNT(*) FROM event_attempts a JOIN events ev ON ev.tenant_id = a.tenant_id AND ev.id = a.event_id
			WHERE a.tenant_id = ? AND ev.resource_id = ? AND a.response <> ''`, acme.ID, id) >= 3
	})

	// The export: everything there is.
	res := e.Do("GET", "/api/v1/leads/"+id+"/export", acme.Token, nil)
	if res.Status != 200 {
		t.Fatalf("export: %d %s", res.Status, res.Body)
	}
	var ex struct {
		Lead       leadJSON `json:"lead"`
		Notes      []struct{ Body string }
		Timeline   []struct{ Kind string }
		Deliveries []struct {
			DeliveryID string          `json:"delivery_id"`
			Duplicates int             `json:"duplicates"`
			Payload    json.RawMessage `json:"payload"`
		}
		DeadLetters []struct {
			Body any `json:"body"`
		} `json:"dead_letters"`
		Events []struct {
			Type     string          `json:"type"`
			Payload  json.RawMessage `json:"payload"`
			Attempts []struct{ Response string }
		}
	}
	res.JSON(t, &ex)
	if ex.Lead.ID != id || ex.Lead.Email != email || ex.Lead.Name != name || ex.Lead.Company != "Erasure Holdings" {
		t.Fatalf("export lead: %+v", ex.Lead)
	}
	if len(ex.Notes) != 1 || ex.Notes[0].Body != "Called Erin Erasable about pricing" {
		t.Fatalf("export notes: %+v", ex.Notes)
	}
	kindsSeen := map[string]bool{}
	for _, it := range ex.Timeline {
		kindsSeen[it.Kind] = true
	}
	for _, k := range []string{"delivery", "duplicate", "status_changed", "note_added"} {
		if !kindsSeen[k] {
			t.Fatalf("export timeline lacks %s: %s", k, res.Body)
		}
	}
	if len(ex.Deliveries) != 2 || ex.Deliveries[0].DeliveryID != "d1" || ex.Deliveries[0].Duplicates != 1 ||
		!strings.Contains(string(ex.Deliveries[0].Payload), email) || !strings.Contains(string(ex.Deliveries[1].Payload), "Erasure Holdings") {
		t.Fatalf("export deliveries: %+v", ex.Deliveries)
	}
	if len(ex.DeadLetters) != 2 {
		t.Fatalf("export dead letters: %+v", ex.DeadLetters)
	}
	types := map[string]int{}
	for _, ev := range ex.Events {
		types[ev.Type]++
		if !strings.Contains(string(ev.Payload), id) || len(ev.Attempts) == 0 || !strings.Contains(ev.Attempts[0].Response, id) {
			t.Fatalf("export event: %+v", ev)
		}
	}
	if types[events.LeadCreated] != 1 || types[events.LeadUpdated] != 1 || types[events.LeadStatusChanged] != 1 {
		t.Fatalf("export events: %v", types)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'lead.exported' AND target_id = ?`, acme.ID, id); n != 1 {
		t.Fatalf("%d lead.exported audit rows", n)
	}

	// Another tenant: 404 for both, and nothing changed.
	tombstones := func() int { return countRows(t, e, `SELECT COUNT(*) FROM lead_tombstones`) }
	if r := e.Do("GET", "/api/v1/leads/"+id+"/export", beta.Token, nil); r.Status != 404 {
		t.Fatalf("beta exports acme's lead: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/api/v1/leads/"+id+"/erase", beta.Token, nil, "Idempotency-Key", "beta-erase"); r.Status != 404 {
		t.Fatalf("beta erases acme's lead: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/leads/"+id, acme.Token, nil); r.Status != 200 || tombstones() != 0 ||
		countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND lead_id = ? AND payload <> ''`, acme.ID, id) != 2 ||
		countRows(t, e, `SELECT COUNT(*) FROM audit_log WHERE action = 'lead.erased'`) != 0 {
		t.Fatalf("a refused erasure changed something: %d, %d tombstones", r.Status, tombstones())
	}
	if r := e.Do("POST", "/api/v1/leads/"+id+"/erase", acme.Token, nil); r.Status != 400 {
		t.Fatalf("erase without Idempotency-Key: %d %s", r.Status, r.Body)
	}

	// 20 erasures at once under one key: one erasure, one audit row; the
	// others wait for it or are told it is in progress.
	const n = 20
	var wg sync.WaitGroup
	statuses := make([]int, n)
	bodies := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.URL+"/api/v1/leads/"+id+"/erase", nil)
			req.Header.Set("Authorization", "Bearer "+acme.Token)
			req.Header.Set("Idempotency-Key", "erase-erin")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("erase %d: %v", i, err)
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			statuses[i], bodies[i] = res.StatusCode, string(b)
		}(i)
	}
	wg.Wait()
	var first string
	for i, st := range statuses {
		switch st {
		case 200:
			if first == "" {
				first = bodies[i]
			} else if bodies[i] != first {
				t.Fatalf("two different erasure answers: %s and %s", first, bodies[i])
			}
		case 409:
		default:
			t.Fatalf("erase %d: %d %s", i, st, bodies[i])
		}
	}
	var erased struct {
		ID       string    `json:"id"`
		ErasedAt time.Time `json:"erased_at"`
	}
	if err := json.Unmarshal([]byte(first), &erased); err != nil || erased.ID != id || erased.ErasedAt.IsZero() {
		t.Fatalf("erase answer %q: %v", first, err)
	}
	replay := e.Do("POST", "/api/v1/leads/"+id+"/erase", acme.Token, nil, "Idempotency-Key", "erase-erin")
	if replay.Status != 200 || string(replay.Body) != first || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed erase: %d %s %v", replay.Status, replay.Body, replay.Header)
	}
	if c := countRows(t, e, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'lead.erased' AND target_id = ?`, acme.ID, id); c != 1 || tombstones() != 1 {
		t.Fatalf("%d lead.erased audit rows, %d tombstones; want 1 and 1", c, tombstones())
	}
	if r := e.Do("POST", "/api/v1/leads/"+id+"/erase", acme.Token, nil, "Idempotency-Key", "erase-erin-again"); r.Status != 404 {
		t.Fatalf("erase an erased lead: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{"", "/timeline", "/notes", "/export"} {
		if r := e.Do("GET", "/api/v1/leads/"+id+p, acme.Token, nil); r.Status != 404 {
			t.Fatalf("GET %s of an erased lead: %d %s", p, r.Status, r.Body)
		}
	}
	if r := e.Do("POST", "/api/v1/leads/"+id+"/notes", acme.Token, map[string]string{"body": "Called Erin Erasable about pricing"},
		"Idempotency-Key", "note-erin"); r.Status != 410 || strings.Contains(string(r.Body), "Erin") {
		t.Fatalf("the note's stored response after the erasure: %d %s", r.Status, r.Body)
	}

	// A re-delivery of her record (a new delivery, and the first one again)
	// is acknowledged and dropped.
	postStandard(t, e, "acme", secrets["acme"], "d3", "rec-erin", moved, now.Add(2*time.Second))
	postStandard(t, e, "acme", secrets["acme"], "d1", "rec-erin", erin, now)
	apptest.Eventually(t, 20*time.Second, "the re-delivery processed", func() bool {
		return countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND delivery_id = 'd3' AND state = 'processed'`, acme.ID) == 1
	})
	var d3 struct {
		LeadID  *string `db:"lead_id"`
		Outcome *string `db:"outcome"`
		Size    int     `db:"size"`
	}
	if err := e.App.DB.Get(&d3, `SELECT lead_id, outcome, LENGTH(payload) AS size FROM deliveries WHERE tenant_id = ? AND delivery_id = 'd3'`, acme.ID); err != nil {
		t.Fatal(err)
	}
	if d3.LeadID != nil || d3.Outcome == nil || *d3.Outcome != leads.OutcomeErased || d3.Size != 0 || leadByRef(t, e, acme.ID, "rec-erin") != "" {
		t.Fatalf("re-delivery: %+v (lead %q)", d3, leadByRef(t, e, acme.ID, "rec-erin"))
	}
	// The reconcile path (webhooks.Apply) drops it too.
	tx, err := e.App.DB.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := e.App.Sources.Get(ctx, acme.ID, srcIDs["acme"])
	if err != nil {
		t.Fatal(err)
	}
	applied, err := webhooks.Apply(ctx, tx, nil, acme.ID, src, mapped, time.Now())
	if err != nil || applied.Outcome != leads.OutcomeErased || applied.LeadID != "" {
		t.Fatalf("reconcile of an erased record: %+v %v", applied, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the worker settle (sightings of the duplicate)

	// Nowhere in the database.
	if hits := findEverywhere(t, e.App.DB, email, name, phone); len(hits) > 0 {
		t.Fatalf("the erased person is still in the database:\n%s", strings.Join(hits, "\n"))
	}
	// The others are whole: Una in acme, Bob in beta, with payloads and events.
	if hits := findEverywhere(t, e.App.DB, una.Email, bob.Email); len(hits) < 6 {
		t.Fatalf("the other people lost data: %v", hits)
	}
	for _, c := range []struct {
		tenant, ref string
	}{{acme.ID, "rec-una"}, {beta.ID, "rec-bob"}} {
		lid := leadByRef(t, e, c.tenant, c.ref)
		if lid == "" || countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND lead_id = ? AND payload <> ''`, c.tenant, lid) != 1 ||
			countRows(t, e, `SELECT COUNT(*) FROM events WHERE tenant_id = ? AND resource_id = ? AND body <> ''`, c.tenant, lid) != 1 {
			t.Fatalf("%s lost data", c.ref)
		}
	}
	if countRows(t, e, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ? AND body <> ''`, acme.ID) != 1 {
		t.Fatal("another person's dead letter was blanked")
	}
	// The erasure's audit row holds counts, no personal data.
	var detail string
	if err := e.App.DB.Get(&detail, `SELECT detail FROM audit_log WHERE tenant_id = ? AND action = 'lead.erased'`, acme.ID); err != nil {
		t.Fatal(err)
	}
	t.Logf("lead.erased detail: %s", detail)
}

// 20 erasures of one lead at once, each under its own key: exactly one
// erases (200) and writes one audit row and one tombstone; the others find
// no lead (404). The stored response of the request that created the lead
// held its fields: a replay of it answers 410 and creates nothing.
func TestLeadEraseConcurrentDistinctKeys(t *testing.T) {
	e := uiEnv(t, "web_privacy_conc")
	a := e.Tenant("acme")
	create := map[string]any{"name": "Connie Current", "email": "connie.current@example.org"}
	res := e.Do("POST", "/api/v1/leads", a.Token, create, "Idempotency-Key", "create-connie")
	if res.Status != 201 {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var l leadJSON
	res.JSON(t, &l)
	const n = 20
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.URL+"/api/v1/leads/"+l.ID+"/erase", nil)
			req.Header.Set("Authorization", "Bearer "+a.Token)
			req.Header.Set("Idempotency-Key", fmt.Sprintf("erase-%d", i))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("erase %d: %v", i, err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			statuses[i] = res.StatusCode
		}(i)
	}
	wg.Wait()
	count := map[int]int{}
	for _, st := range statuses {
		count[st]++
	}
	if count[200] != 1 || count[404] != n-1 {
		t.Fatalf("statuses: %v, want one 200 and %d 404", count, n-1)
	}
	if c := countRows(t, e, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'lead.erased'`, a.ID); c != 1 {
		t.Fatalf("%d lead.erased audit rows", c)
	}
	if c := countRows(t, e, `SELECT COUNT(*) FROM lead_tombstones WHERE tenant_id = ?`, a.ID); c != 1 {
		t.Fatalf("%d tombstones", c)
	}
	res = e.Do("POST", "/api/v1/leads", a.Token, create, "Idempotency-Key", "create-connie")
	if res.Status != 410 || res.Header.Get("Idempotent-Replayed") != "true" || strings.Contains(string(res.Body), "Connie") {
		t.Fatalf("replayed create after the erasure: %d %s", res.Status, res.Body)
	}
	if c := countLeads(t, e, a.ID); c != 0 {
		t.Fatalf("%d leads after the erasure", c)
	}
	if hits := findEverywhere(t, e.App.DB, "connie.current@example.org", "Connie Current"); len(hits) > 0 {
		t.Fatalf("still in the database:\n%s", strings.Join(hits, "\n"))
	}
}

// An erasure while the sender keeps delivering the same record: whatever
// the interleaving with the worker's batches, no lead is left afterwards,
// every delivery of the record is without payload, and the person is in
// no column of the database.
func TestLeadEraseWhileDeliveriesArrive(t *testing.T) {
	e := apptest.New(t, "web_privacy_race", apptest.Options{RedisDB: apptest.RedisWeb, Worker: true})
	a := e.Tenant("acme")
	_, secret := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: kinds.Standard})
	ray := kinds.Lead{Email: "ray.racing@example.org", Name: "Ray Racing"}
	now := time.Now()
	postStandard(t, e, "acme", secret, "r0", "rec-ray", ray, now)
	apptest.Eventually(t, 20*time.Second, "the lead", func() bool { return leadByRef(t, e, a.ID, "rec-ray") != "" })
	id := leadByRef(t, e, a.ID, "rec-ray")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= 40; i++ {
			body := kinds.SampleBody(kinds.Standard, "", "rec-ray", ray, now.Add(time.Duration(i)*time.Millisecond))
			status, _, err := e.Hook("acme", "web", kinds.Standard, secret).Try(fmt.Sprintf("r%d", i), body, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			if status != 200 && status != 202 {
				t.Errorf("delivery r%d: %d", i, status)
			}
		}
	}()
	time.Sleep(30 * time.Millisecond)
	if r := e.Do("POST", "/api/v1/leads/"+id+"/erase", a.Token, nil, "Idempotency-Key", "erase-ray"); r.Status != 200 {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	wg.Wait()
	apptest.Eventually(t, 30*time.Second, "every delivery processed", func() bool {
		return countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state <> 'processed'`, a.ID) == 0 &&
			countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, a.ID) == 41
	})
	if l := leadByRef(t, e, a.ID, "rec-ray"); l != "" {
		t.Fatalf("the erased lead came back: %s", l)
	}
	if n := countRows(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND payload <> ''`, a.ID); n != 0 {
		t.Fatalf("%d deliveries kept their payload", n)
	}
	if hits := findEverywhere(t, e.App.DB, ray.Email, ray.Name); len(hits) > 0 {
		t.Fatalf("still in the database:\n%s", strings.Join(hits, "\n"))
	}
}
