package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/app"
	"leadpipe/internal/apptest"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
	"leadpipe/internal/retention"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

type source struct {
	sources.Source
	Secret, URL string
}

func newSource(t *testing.T, e *apptest.Env, ten apptest.Tenant, slug string) source {
	t.Helper()
	src, secret := e.Source(ten.ID, sources.CreateInput{Slug: slug, Name: slug, Kind: kinds.Standard})
	return source{Source: src, Secret: secret, URL: e.URL + "/hooks/" + ten.Slug + "/" + slug}
}

// deliver posts one signed delivery and returns the acknowledgement's status.
func deliver(t *testing.T, s source, deliveryID string) string {
	t.Helper()
	now := time.Now()
	ref := "ref-" + deliveryID
	body := kinds.SampleBody(kinds.Standard, deliveryID, ref, kinds.Lead{SourceRef: ref, Email: deliveryID + "@example.test", Name: "N " + deliveryID}, now)
	h, b, err := kinds.Sign(kinds.Standard, nil, s.Secret, deliveryID, body, now)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", s.URL, bytes.NewReader(b))
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("deliver %s: %d %s", deliveryID, res.StatusCode, rb)
	}
	var ack struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(rb, &ack); err != nil {
		t.Fatalf("ack %s: %v", rb, err)
	}
	return ack.Status
}

func count(t *testing.T, d *sqlx.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := d.GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func putRetention(t *testing.T, e *apptest.Env, ten apptest.Tenant, body string) apptest.Response {
	t.Helper()
	return e.Do("PUT", "/api/v1/settings/retention", ten.Token, body)
}

// state is what the purge must leave unchanged or change, per tenant.
type state struct {
	rows, dups, withPayload, deadLetters, events, eventDeliveries, attempts int
}

func snapshot(t *testing.T, d *sqlx.DB, tenantID string) state {
	return state{
		rows:            count(t, d, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, tenantID),
		dups:            count(t, d, `SELECT COALESCE(SUM(dup_count), 0) FROM deliveries WHERE tenant_id = ?`, tenantID),
		withPayload:     count(t, d, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND LENGTH(payload) > 0`, tenantID),
		deadLetters:     count(t, d, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ?`, tenantID),
		events:          count(t, d, `SELECT COUNT(*) FROM events WHERE tenant_id = ?`, tenantID),
		eventDeliveries: count(t, d, `SELECT COUNT(*) FROM event_deliveries WHERE tenant_id = ?`, tenantID),
		attempts:        count(t, d, `SELECT COUNT(*) FROM event_attempts WHERE tenant_id = ?`, tenantID),
	}
}

// TestPurge: two tenants with different settings; the old payloads, dead
// letters and events of one go, its young ones and the other tenant stay;
// counts and duplicate detection do not change; a stopped purge resumes
// from its cursor; a purged delivery cannot be reprocessed.
func TestPurge(t *testing.T) {
	// Duplicates answered through the database's unique key, not from the
	// process's memory of committed ids.
	e := apptest.New(t, "retention", apptest.Options{RedisDB: apptest.RedisRetention, Worker: true,
		Env: map[string]string{"LEADPIPE_DUPLICATE_MEMORY": "0"}})
	ctx := context.Background()
	d := e.App.DB
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	if res := putRetention(t, e, acme, `{"delivery_payload_days":10,"dead_letter_days":10,"event_days":10}`); res.Status != 200 {
		t.Fatalf("PUT acme: %d %s", res.Status, res.Body)
	}
	// beta keeps the defaults (90/30/30).

	// An endpoint per tenant, so events get deliveries and attempts.
	var hits atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(200)
	}))
	defer sink.Close()
	for _, ten := range []apptest.Tenant{acme, beta} {
		if _, err := e.App.Events.Create(ctx, ten.ID, events.CreateInput{URL: sink.URL, Events: []string{"lead.created"}}); err != nil {
			t.Fatal(err)
		}
	}

	sa, sb := newSource(t, e, acme, "landing"), newSource(t, e, beta, "landing")
	const old, young = 12, 3
	for i := 0; i < old; i++ {
		for _, s := range []source{sa, sb} {
			if st := deliver(t, s, fmt.Sprintf("old-%d", i)); st != "accepted" {
				t.Fatalf("old-%d: %s", i, st)
			}
		}
	}
	// A duplicate of an old one, counted on its row before the purge.
	if st := deliver(t, sa, "old-0"); st != "duplicate" {
		t.Fatalf("duplicate before purge: %s", st)
	}
	processed := func(tenantID string, n int) {
		apptest.Eventually(t, 20*time.Second, "deliveries processed and events delivered", func() bool {
			return count(t, d, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, tenantID) == n &&
				count(t, d, `SELECT COUNT(*) FROM event_deliveries WHERE tenant_id = ? AND state = 'delivered'`, tenantID) == n
		})
	}
	processed(acme.ID, old)
	processed(beta.ID, old)
	// Dead letters, made as the ingest path does (a signed body it cannot use).
	for _, ten := range []apptest.Tenant{acme, beta} {
		src := sa
		if ten.ID == beta.ID {
			src = sb
		}
		for i := 0; i < 3; i++ {
			if _, err := d.ExecContext(ctx, `INSERT INTO dead_letters (tenant_id, source_id, id, reason, headers, body, received_at)
				VALUES (?, ?, ?, 'test', NULL, 'junk', ?)`, ten.ID, src.ID, ids.New(), time.Now().UTC()); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The purge's clock: ten days after this moment, so what came before
	// is older than acme's 10 days and what comes after is younger.
	time.Sleep(5 * time.Millisecond)
	cut := time.Now()
	time.Sleep(5 * time.Millisecond)
	for i := 0; i < young; i++ {
		if st := deliver(t, sa, fmt.Sprintf("young-%d", i)); st != "accepted" {
			t.Fatalf("young-%d: %s", i, st)
		}
	}
	processed(acme.ID, old+young)
	beforeA, beforeB := snapshot(t, d, acme.ID), snapshot(t, d, beta.ID)
	if beforeA.withPayload != old+young || beforeA.deadLetters != 3 || beforeA.events != old+young || beforeA.attempts < old+young {
		t.Fatalf("acme before: %+v", beforeA)
	}

	// A purge of its own, with small batches, stopped after two batches.
	var calls atomic.Int64
	var scanned atomic.Int64
	purgers := app.RetentionPurgers()
	inner := purgers.Payloads
	runCtx, stop := context.WithCancel(ctx)
	purgers.Payloads = func(ctx context.Context, db *sqlx.DB, tenantID, after, bound string, before time.Time, n int) (retention.Batch, error) {
		b, err := inner(ctx, db, tenantID, after, bound, before, n)
		if tenantID == acme.ID {
			scanned.Add(int64(b.Scanned))
			if calls.Add(1) == 2 {
				stop() // between the second batch and the third
			}
		}
		return b, err
	}
	svc := retention.NewService(d, e.App.Tenants.ForEach, purgers, nil, func() time.Time { return cut.Add(10 * 24 * time.Hour) })
	svc.Batch, svc.Pause = 5, 0
	if _, err := svc.Purge(runCtx); err == nil {
		t.Fatal("a cancelled purge reported success")
	}
	mid := snapshot(t, d, acme.ID)
	if mid.withPayload != old+young-10 {
		t.Fatalf("after two batches of 5: %d payloads left, want %d", mid.withPayload, old+young-10)
	}

	rep, err := svc.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Resumed after the cursor: 12 old rows walked once in all (5 + 5 + 2).
	if got := scanned.Load(); got != old {
		t.Fatalf("rows walked over both runs: %d, want %d (the second run did not resume)", got, old)
	}
	if rep.PayloadsRemoved != 2 || rep.DeadLettersDeleted != 3 || rep.EventsDeleted != old {
		t.Fatalf("report: %+v", rep)
	}
	afterA, afterB := snapshot(t, d, acme.ID), snapshot(t, d, beta.ID)
	want := beforeA
	want.withPayload, want.deadLetters, want.events, want.eventDeliveries = young, 0, young, young
	want.attempts = count(t, d, `SELECT COUNT(*) FROM event_attempts WHERE tenant_id = ?`, acme.ID)
	if afterA != want {
		t.Fatalf("acme after: %+v, want %+v", afterA, want)
	}
	if want.attempts < young || count(t, d, `SELECT COUNT(*) FROM event_attempts a WHERE a.tenant_id = ? AND NOT EXISTS
		(SELECT 1 FROM events e WHERE e.tenant_id = a.tenant_id AND e.id = a.event_id)`, acme.ID) != 0 {
		t.Fatal("attempts of deleted events are left")
	}
	if afterB != beforeB {
		t.Fatalf("beta changed: %+v → %+v", beforeB, afterB)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND delivery_id LIKE 'young-%' AND LENGTH(payload) > 0`, acme.ID); n != young {
		t.Fatalf("young payloads kept: %d of %d", n, young)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, acme.ID); n != old+young {
		t.Fatalf("leads: %d", n)
	}

	// A third run finds nothing to do.
	if rep, err := svc.Purge(ctx); err != nil || rep.PayloadsRemoved+rep.DeadLettersDeleted+rep.EventsDeleted != 0 {
		t.Fatalf("third run: %+v %v", rep, err)
	}

	// A duplicate of a purged delivery is still a duplicate, counted on it.
	if st := deliver(t, sa, "old-1"); st != "duplicate" {
		t.Fatalf("duplicate of a purged delivery: %s", st)
	}
	// (A duplicate's count reaches its row after a short in-memory linger.)
	apptest.Eventually(t, 10*time.Second, "the duplicate counted on the purged delivery", func() bool {
		return count(t, d, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND delivery_id = 'old-1'`, acme.ID) == 1
	})

	// The deliveries API says which payloads were removed.
	var page struct {
		Items []struct {
			ID             string `json:"id"`
			PayloadRemoved bool   `json:"payload_removed"`
		} `json:"items"`
	}
	if res := e.Do("GET", "/api/v1/sources/"+sa.ID+"/deliveries?limit=200", acme.Token, nil); res.Status != 200 {
		t.Fatalf("list deliveries: %d %s", res.Status, res.Body)
	} else {
		res.JSON(t, &page)
	}
	removed := 0
	for _, it := range page.Items {
		if it.PayloadRemoved {
			removed++
		}
	}
	if len(page.Items) != old+young || removed != old {
		t.Fatalf("deliveries API: %d items, %d with payload_removed", len(page.Items), removed)
	}

	// Reprocessing a purged delivery is refused, clearly; a kept one is not.
	var purgedID, keptID string
	_ = d.GetContext(ctx, &purgedID, `SELECT id FROM deliveries WHERE tenant_id = ? AND delivery_id = 'old-2'`, acme.ID)
	_ = d.GetContext(ctx, &keptID, `SELECT id FROM deliveries WHERE tenant_id = ? AND delivery_id = 'young-0'`, acme.ID)
	res := e.Do("POST", "/api/v1/deliveries/"+purgedID+"/reprocess", acme.Token, nil)
	if res.Status != http.StatusConflict || !strings.Contains(string(res.Body), "payload removed by retention") {
		t.Fatalf("reprocess purged: %d %s", res.Status, res.Body)
	}
	if st := count(t, d, `SELECT COUNT(*) FROM deliveries WHERE id = ? AND state = 'processed'`, purgedID); st != 1 {
		t.Fatal("the refused reprocess changed the delivery's state")
	}
	if res := e.Do("POST", "/api/v1/deliveries/"+keptID+"/reprocess", acme.Token, nil); res.Status != http.StatusAccepted {
		t.Fatalf("reprocess kept: %d %s", res.Status, res.Body)
	}
	// Another tenant's delivery id is not found, not refused.
	if res := e.Do("POST", "/api/v1/deliveries/"+purgedID+"/reprocess", beta.Token, nil); res.Status != http.StatusNotFound {
		t.Fatalf("cross-tenant reprocess: %d %s", res.Status, res.Body)
	}
}

// TestSettingsAPI: defaults, a change with its audit row, validation, and
// per-tenant storage.
func TestSettingsAPI(t *testing.T) {
	e := apptest.New(t, "retention", apptest.Options{RedisDB: apptest.RedisRetention})
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	get := func(ten apptest.Tenant) retention.Settings {
		t.Helper()
		res := e.Do("GET", "/api/v1/settings/retention", ten.Token, nil)
		if res.Status != 200 {
			t.Fatalf("GET: %d %s", res.Status, res.Body)
		}
		var s retention.Settings
		res.JSON(t, &s)
		return s
	}
	if s := get(acme); s != retention.Defaults || s != (retention.Settings{DeliveryPayloadDays: 90, DeadLetterDays: 30, EventDays: 30}) {
		t.Fatalf("defaults: %+v", s)
	}
	res := putRetention(t, e, acme, `{"delivery_payload_days":7,"dead_letter_days":14,"event_days":21}`)
	if res.Status != 200 {
		t.Fatalf("PUT: %d %s", res.Status, res.Body)
	}
	if s := get(acme); s != (retention.Settings{DeliveryPayloadDays: 7, DeadLetterDays: 14, EventDays: 21}) {
		t.Fatalf("after PUT: %+v", s)
	}
	// A field left out keeps its value.
	if res := putRetention(t, e, acme, `{"event_days":5}`); res.Status != 200 {
		t.Fatalf("partial PUT: %d %s", res.Status, res.Body)
	}
	if s := get(acme); s != (retention.Settings{DeliveryPayloadDays: 7, DeadLetterDays: 14, EventDays: 5}) {
		t.Fatalf("after partial PUT: %+v", s)
	}
	if s := get(beta); s != retention.Defaults {
		t.Fatalf("beta changed with acme: %+v", s)
	}
	for _, body := range []string{`{"delivery_payload_days":0}`, `{"dead_letter_days":-3}`, `{"event_days":3651}`,
		`{"event_days":100000000}`, `{"delivery_payload_days":1,"event_days":0}`} {
		res := putRetention(t, e, acme, body)
		if res.Status != http.StatusUnprocessableEntity {
			t.Fatalf("PUT %s: %d %s", body, res.Status, res.Body)
		}
	}
	if res := putRetention(t, e, acme, `{"event_days":"ten"}`); res.Status/100 != 4 {
		t.Fatalf("PUT a string: %d", res.Status)
	}
	if s := get(acme); s != (retention.Settings{DeliveryPayloadDays: 7, DeadLetterDays: 14, EventDays: 5}) {
		t.Fatalf("a refused PUT changed the settings: %+v", s)
	}

	// Audit rows: one per change, old and new values, none for refused ones.
	var rows []struct {
		Detail string `db:"detail"`
		Actor  string `db:"actor_kind"`
	}
	if err := e.App.DB.SelectContext(context.Background(), &rows, `SELECT detail, actor_kind FROM audit_log
		WHERE tenant_id = ? AND action = 'retention.changed' ORDER BY id`, acme.ID); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("audit rows: %d, want 2", len(rows))
	}
	var first struct{ Old, New retention.Settings }
	if err := json.Unmarshal([]byte(rows[0].Detail), &first); err != nil {
		t.Fatal(err)
	}
	if first.Old != retention.Defaults || first.New.DeliveryPayloadDays != 7 || rows[0].Actor != "token" {
		t.Fatalf("audit detail: %s (%s)", rows[0].Detail, rows[0].Actor)
	}
	if n := count(t, e.App.DB, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'retention.changed'`, beta.ID); n != 0 {
		t.Fatalf("beta audit rows: %d", n)
	}
}

// TestSetRollsBackWithItsAuditRow: a change whose transaction fails after
// the audit insert leaves neither the change nor the row (the audit row
// lives in the action's transaction).
func TestSetRollsBackWithItsAuditRow(t *testing.T) {
	e := apptest.New(t, "retention", apptest.Options{RedisDB: apptest.RedisRetention})
	acme := e.Tenant("acme")
	ctx := context.Background()
	// A trigger that fails the settings write makes the transaction fail.
	if _, err := e.App.DB.ExecContext(ctx, `CREATE TRIGGER retention_fail BEFORE INSERT ON retention_settings FOR EACH ROW
		SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'`); err != nil {
		t.Fatal(err)
	}
	n := 3
	if _, err := e.App.Retention.Set(ctx, acme.ID, retention.Input{EventDays: &n}); err == nil {
		t.Fatal("Set succeeded past the failing trigger")
	}
	if c := count(t, e.App.DB, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'retention.changed'`, acme.ID); c != 0 {
		t.Fatalf("audit rows of a failed change: %d", c)
	}
}

// TestConcurrentChangesChainTheirAuditRows: changes racing each other are
// serialised on the tenant's row, so every audit row's old values are the
// previous row's new values and the last one's are what is stored.
func TestConcurrentChangesChainTheirAuditRows(t *testing.T) {
	e := apptest.New(t, "retention", apptest.Options{RedisDB: apptest.RedisRetention})
	acme := e.Tenant("acme")
	if res := putRetention(t, e, acme, `{"event_days":2}`); res.Status != 200 {
		t.Fatalf("first PUT: %d %s", res.Status, res.Body)
	}
	const n = 12
	done := make(chan int, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			res := e.Do("PUT", "/api/v1/settings/retention", acme.Token, fmt.Sprintf(`{"event_days":%d}`, 100+i))
			done <- res.Status
		}(i)
	}
	for i := 0; i < n; i++ {
		if st := <-done; st != 200 {
			t.Fatalf("concurrent PUT: %d", st)
		}
	}
	var details []string
	if err := e.App.DB.SelectContext(context.Background(), &details, `SELECT detail FROM audit_log
		WHERE tenant_id = ? AND action = 'retention.changed' ORDER BY at, id`, acme.ID); err != nil {
		t.Fatal(err)
	}
	if len(details) != n+1 {
		t.Fatalf("audit rows: %d, want %d", len(details), n+1)
	}
	var prev retention.Settings
	for i, d := range details {
		var row struct{ Old, New retention.Settings }
		if err := json.Unmarshal([]byte(d), &row); err != nil {
			t.Fatal(err)
		}
		if i > 0 && row.Old != prev {
			t.Fatalf("row %d: old %+v, but the previous change made %+v", i, row.Old, prev)
		}
		prev = row.New
	}
	if st, _ := e.App.Retention.Get(context.Background(), acme.ID); st != prev {
		t.Fatalf("stored %+v, last audited %+v", st, prev)
	}
}
