package webhooks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// insertDelivery stores a received delivery of s with dups duplicates
// counted on it, as a claim would, and returns its id.
func insertDelivery(t *testing.T, e *apptest.Env, s source, deliveryID string, body []byte, at time.Time, dups int) string {
	t.Helper()
	id := ids.New()
	if _, err := e.App.DB.Exec(`INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at, dup_count)
		VALUES (?, ?, ?, ?, 'webhook', ?, ?, ?)`, s.TenantID, s.ID, id, deliveryID, body, at, dups); err != nil {
		t.Fatal(err)
	}
	return id
}

func leadOf(t *testing.T, e *apptest.Env, tenantID, sourceID, ref string) leads.Lead {
	t.Helper()
	var l leads.Lead
	if err := e.App.DB.GetContext(context.Background(), &l, `SELECT `+leads.LeadCols+` FROM leads
		WHERE tenant_id = ? AND source_id = ? AND source_ref = ?`, tenantID, sourceID, ref); err != nil {
		t.Fatalf("lead %s: %v", ref, err)
	}
	return l
}

// Newer, then older (the payload's event time): the newer data stays, the
// older one is a stale timeline entry and still a sighting; a qualified
// lead keeps its status and ETag throughout.
func TestOlderRecordIsStale(t *testing.T) {
	e := apptest.New(t, "hooks_order", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("order")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	now := time.Now()
	h, b := signed(t, s, "evt-new", "contact-1", kinds.Lead{Email: "new@example.com", Name: "Newer Name"}, now)
	if r := send(t, s.URL, h, b); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "lead", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID) == 1
	})
	l := leadOf(t, e, ten.ID, s.ID, "contact-1")
	// A person qualifies it.
	res := e.Do("PATCH", "/api/v1/leads/"+l.ID, ten.Token, map[string]any{"status": "qualified"}, "If-Match", `"1"`)
	if res.Status != 200 {
		t.Fatalf("patch: %d %s", res.Status, res.Body)
	}
	h, b = signed(t, s, "evt-old", "contact-1", kinds.Lead{Email: "old@example.com", Name: "Older Name"}, now.Add(-time.Minute))
	if r := send(t, s.URL, h, b); r.Status != 200 || r.Ack.Status != "accepted" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "older processed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID) == 2
	})
	l = leadOf(t, e, ten.ID, s.ID, "contact-1")
	if l.Name != "Newer Name" || l.Email != "new@example.com" || l.TimesSeen != 2 || l.Status != "qualified" || l.Version != 2 {
		t.Fatalf("after the older record: %+v", l)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND outcome = 'stale'`, ten.ID); c != 1 {
		t.Fatalf("%d stale deliveries", c)
	}
	var tl struct {
		Items []leads.TimelineEntry `json:"items"`
	}
	e.Do("GET", "/api/v1/leads/"+l.ID+"/timeline", ten.Token, nil).JSON(t, &tl)
	stale := 0
	for _, it := range tl.Items {
		if it.Kind == leads.EventStale {
			stale++
		}
	}
	if stale != 1 {
		t.Fatalf("%d stale entries in the timeline %+v", stale, tl.Items)
	}
	if get := e.Do("GET", "/api/v1/leads/"+l.ID, ten.Token, nil); get.Header.Get("ETag") != `"2"` {
		t.Fatalf("ETag %q", get.Header.Get("ETag"))
	}
}

// Four bodies of one record without an event time, sent one after the
// other through the webhook endpoint, repeated 20×, the worker at full
// concurrency (cmd/worker's 64 tasks at once, so the four share batches or
// race in two): the last body sent always wins (receipt order), and every
// one is a sighting.
func TestLastReceivedWinsWithoutEventTime(t *testing.T) {
	e := apptest.New(t, "hooks_order4", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true, WorkerConcurrency: 64})
	ten := e.Tenant("order4")
	s := newSource(t, e, ten.ID, "landing", kinds.Generic)
	const rounds, bodies = 20, 4
	for r := 1; r <= rounds; r++ {
		for v := 1; v <= bodies; v++ {
			h, b := signed(t, s, fmt.Sprintf("d-%d-%d", r, v), "rec", kinds.Lead{Name: fmt.Sprintf("Round %d body %d", r, v)}, time.Now())
			if res := send(t, s.URL, h, b); res.Status != 200 || res.Ack.Status != "accepted" {
				t.Fatalf("round %d body %d: %d %s", r, v, res.Status, res.Body)
			}
		}
		apptest.Eventually(t, 30*time.Second, "the round processed", func() bool {
			return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID) == r*bodies
		})
		l := leadOf(t, e, ten.ID, s.ID, "rec")
		if l.Name != fmt.Sprintf("Round %d body %d", r, bodies) || l.TimesSeen != r*bodies {
			t.Fatalf("round %d: name %q times_seen %d, want the last body and %d", r, l.Name, l.TimesSeen, r*bodies)
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != 1 {
		t.Fatalf("%d leads", c)
	}
}

// 50 deliveries of one natural key at once, in one batch and across
// batches: one lead, the newest record's data, times_seen 50.
func TestConcurrentDeliveriesOfOneLead(t *testing.T) {
	e := apptest.New(t, "hooks_onelead", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("onelead")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	const n = 50
	base := time.Now().Add(-2 * time.Minute)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Event times one second apart: delivery 49 is the newest.
			h, b := signed(t, s, fmt.Sprintf("evt-%02d", i), "contact-x", kinds.Lead{Name: fmt.Sprintf("Name %02d", i)}, base.Add(time.Duration(i)*time.Second))
			if r := send(t, s.URL, h, b); r.Status != 200 || r.Ack.Status != "accepted" {
				t.Errorf("%d: %d %s", i, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	apptest.Eventually(t, 30*time.Second, "processed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID) == n
	})
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != 1 {
		t.Fatalf("%d leads", c)
	}
	l := leadOf(t, e, ten.ID, s.ID, "contact-x")
	if l.Name != fmt.Sprintf("Name %02d", n-1) || l.TimesSeen != n {
		t.Fatalf("lead %q times_seen %d, want the newest and %d", l.Name, l.TimesSeen, n)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND outcome = 'created'`, ten.ID); c != 1 {
		t.Fatalf("%d created outcomes", c)
	}
}

// 50 stored deliveries of one natural key (event times shuffled, some with
// duplicates counted on them), processed as one batch, and 50 of another
// key processed as ten concurrent batches of five: one lead each, the
// newest record's data, times_seen = deliveries + duplicates, one
// "created" outcome.
func TestDeliveriesOfOneLeadInOneBatchAndAcrossBatches(t *testing.T) {
	e := apptest.New(t, "hooks_onebatch", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("onebatch")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	ctx := context.Background()
	const n = 50
	store := func(ref string) (rows []string, sightings int) {
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		rng := rand.New(rand.NewPCG(1, 2))
		for _, i := range rng.Perm(n) { // stored (received) in shuffled event-time order
			body := kinds.SampleBody(kinds.Standard, fmt.Sprintf("%s-%02d", ref, i), ref,
				kinds.Lead{Name: fmt.Sprintf("%s name %02d", ref, i), Email: fmt.Sprintf("%s-%02d@example.com", ref, i)}, base.Add(time.Duration(i)*time.Second))
			dups := i % 3
			rows = append(rows, insertDelivery(t, e, s, fmt.Sprintf("%s-%02d", ref, i), body, time.Now().UTC(), dups))
			sightings += 1 + dups
		}
		return rows, sightings
	}
	check := func(ref string, sightings int) {
		t.Helper()
		if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = ?`, ten.ID, ref); c != 1 {
			t.Fatalf("%s: %d leads", ref, c)
		}
		l := leadOf(t, e, ten.ID, s.ID, ref)
		if want := fmt.Sprintf("%s name %02d", ref, n-1); l.Name != want || l.Email != fmt.Sprintf("%s-%02d@example.com", ref, n-1) || l.TimesSeen != sightings {
			t.Fatalf("%s: %q <%s> times_seen %d, want %q and %d", ref, l.Name, l.Email, l.TimesSeen, want, sightings)
		}
		if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND lead_id = ? AND state = 'processed'`, ten.ID, l.ID); c != n {
			t.Fatalf("%s: %d deliveries processed onto the lead, want %d", ref, c, n)
		}
		if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND lead_id = ? AND outcome = 'created'`, ten.ID, l.ID); c != 1 {
			t.Fatalf("%s: %d created outcomes", ref, c)
		}
	}

	rows, sightings := store("one-batch")
	for i, err := range e.App.Processor.ProcessTogether(ctx, ten.ID, rows) {
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	check("one-batch", sightings)

	rows, sightings = store("across")
	var wg sync.WaitGroup
	for b := 0; b < n/5; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, err := range e.App.Processor.ProcessTogether(ctx, ten.ID, rows[b*5:b*5+5]) {
				if err != nil {
					t.Errorf("batch %d delivery %d: %v", b, i, err)
				}
			}
		}()
	}
	wg.Wait()
	check("across", sightings)
}

// A batch holding a poison delivery (its stored bytes have no natural
// key): the others are processed in the same batch, the poison one is
// failed with its error.
func TestPoisonDeliveryFailsOnlyItself(t *testing.T) {
	e := apptest.New(t, "hooks_poison", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("poison")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var idList []string
	for i := 0; i < 8; i++ {
		body := kinds.SampleBody(kinds.Standard, fmt.Sprintf("p-%d", i), fmt.Sprintf("c-%d", i), kinds.Lead{Name: "Good"}, now)
		if i == 3 {
			body = []byte(`{"type":"contact.created","data":{"email":"no-id@example.com"}}`)
		}
		idList = append(idList, insertDelivery(t, e, s, fmt.Sprintf("p-%d", i), body, now, 0))
	}
	// All at once through the task handler: they share batches. A failed
	// run goes to the final-failure hook, as Asynq's error handler does.
	e.App.Processor.Runners = 1
	var wg sync.WaitGroup
	errs := make([]error, len(idList))
	for i, id := range idList {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, _ := webhooks.NewProcessTask(ten.ID, id, 0)
			if errs[i] = e.App.Processor.HandleProcess(ctx, task); errs[i] != nil {
				e.App.Processor.HandleFinalFailure(ctx, task, errs[i])
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 3) != (err != nil) {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID); c != 7 {
		t.Fatalf("%d processed, want 7", c)
	}
	var st, msg string
	if err := e.App.DB.QueryRowContext(ctx, `SELECT state, IFNULL(last_error, '') FROM deliveries WHERE tenant_id = ? AND id = ?`, ten.ID, idList[3]).Scan(&st, &msg); err != nil {
		t.Fatal(err)
	}
	if st != "failed" || msg == "" {
		t.Fatalf("poison delivery: state %s, error %q", st, msg)
	}
	// Counted once in processing_failures (by the batch; the handler's and
	// the hook's markings find it failed already).
	if err := e.App.Web.Monitor.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := count(t, e, `SELECT COALESCE(SUM(processing_failures), 0) FROM source_stats_minute WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); c != 1 {
		t.Fatalf("processing_failures = %d, want 1", c)
	}
	// Running them again changes nothing.
	for _, id := range idList {
		_, _ = e.App.Processor.ProcessDelivery(ctx, ten.ID, id)
	}
	if c := count(t, e, `SELECT SUM(times_seen) FROM leads WHERE tenant_id = ?`, ten.ID); c != 7 {
		t.Fatalf("times_seen sum %d after a repeat, want 7", c)
	}
}

// A qualified lead keeps its status and ETag through everything a sender
// and the pipeline do to it: duplicates, a stale record, a newer record,
// a delivery reprocessed (and reprocessed again), a task run twice. Only
// sender-owned fields change; a human's If-Match still holds.
func TestQualifiedLeadKeepsStatusAndETag(t *testing.T) {
	e := apptest.New(t, "hooks_keep", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true, WorkerConcurrency: 64})
	ten := e.Tenant("keep")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	ctx := context.Background()
	now := time.Now()
	processed := func(want int) {
		t.Helper()
		apptest.Eventually(t, 15*time.Second, "processed", func() bool {
			return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, ten.ID) == want
		})
	}
	deliver := func(id string, f kinds.Lead, at time.Time, want string) {
		t.Helper()
		h, b := signed(t, s, id, "contact-q", f, at)
		if r := send(t, s.URL, h, b); r.Status != 200 || r.Ack.Status != want {
			t.Fatalf("%s: %d %s, want %s", id, r.Status, r.Body, want)
		}
	}
	deliver("evt-1", kinds.Lead{Email: "first@example.com", Name: "First"}, now.Add(-2*time.Minute), "accepted")
	processed(1)
	l := leadOf(t, e, ten.ID, s.ID, "contact-q")
	if r := e.Do("PATCH", "/api/v1/leads/"+l.ID, ten.Token, map[string]any{"status": "qualified"}, "If-Match", `"1"`); r.Status != 200 {
		t.Fatalf("qualify: %d %s", r.Status, r.Body)
	}
	kept := func(step, email string) {
		t.Helper()
		r := e.Do("GET", "/api/v1/leads/"+l.ID, ten.Token, nil)
		var got struct {
			Status  string `json:"status"`
			Version int    `json:"version"`
			Email   string `json:"email"`
		}
		r.JSON(t, &got)
		if r.Status != 200 || got.Status != "qualified" || got.Version != 2 || r.Header.Get("ETag") != `"2"` || got.Email != email {
			t.Fatalf("after %s: %d status %q version %d ETag %s email %q, want qualified, 2, \"2\", %q",
				step, r.Status, got.Status, got.Version, r.Header.Get("ETag"), got.Email, email)
		}
	}
	kept("qualifying", "first@example.com")

	// Duplicates of the first delivery, at once.
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, b := signed(t, s, "evt-1", "contact-q", kinds.Lead{Email: "first@example.com", Name: "First"}, now.Add(-2*time.Minute))
			if r := send(t, s.URL, h, b); r.Status != 200 || r.Ack.Status != "duplicate" {
				t.Errorf("duplicate: %d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	kept("duplicates", "first@example.com")
	// An older record: stale, nothing applied.
	deliver("evt-0", kinds.Lead{Email: "older@example.com", Name: "Older"}, now.Add(-4*time.Minute), "accepted")
	processed(2)
	kept("a stale record", "first@example.com")
	// A newer record: the sender's fields change, the human's do not.
	deliver("evt-2", kinds.Lead{Email: "newer@example.com", Name: "Newer"}, now, "accepted")
	processed(3)
	kept("a newer record", "newer@example.com")
	// A delivery stored while Redis was down, reprocessed through the API,
	// then reprocessed again; a processed delivery's task run again.
	id := storeDelivery(t, e, s, "evt-3", "contact-q", "latest@example.com", time.Now())
	for i := 0; i < 2; i++ {
		if r := e.Do("POST", "/api/v1/deliveries/"+id+"/reprocess", ten.Token, nil); r.Status != 202 {
			t.Fatalf("reprocess: %d %s", r.Status, r.Body)
		}
		processed(4)
	}
	task, _ := webhooks.NewProcessTask(ten.ID, id, 0)
	if err := e.App.Processor.HandleProcess(ctx, task); err != nil {
		t.Fatal(err)
	}
	kept("reprocessing", "latest@example.com")
	// The duplicates reach times_seen within the hold of counts answered from memory.
	apptest.Eventually(t, webhooks.DuplicateHold+10*time.Second, "times_seen = 4 deliveries + 10 duplicates", func() bool {
		return leadOf(t, e, ten.ID, s.ID, "contact-q").TimesSeen == 4+10
	})
	kept("the sightings' flush", "latest@example.com")
	// The human's ETag is still the one to send.
	if r := e.Do("PATCH", "/api/v1/leads/"+l.ID, ten.Token, map[string]any{"status": "won"}, "If-Match", `"2"`); r.Status != 200 || r.Header.Get("ETag") != `"3"` {
		t.Fatalf("PATCH with the kept ETag: %d %s ETag %s", r.Status, r.Body, r.Header.Get("ETag"))
	}
}

// A delivery can be in two tasks at once (the dispatcher's batch task and
// the sweeper's task of it, or a batch task Asynq recovered from a killed
// worker): however they meet, in one batch or in two, the delivery is
// processed once and its lead's times_seen counts it (and its duplicate)
// once.
func TestDeliveryInTwoTasksAtOnceCountsOnce(t *testing.T) {
	e := apptest.New(t, "hooks_twotasks", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("twotasks")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	const n = 20
	var idList []string
	for i := 0; i < n; i++ {
		body := kinds.SampleBody(kinds.Standard, fmt.Sprintf("t-%d", i), fmt.Sprintf("c-%d", i), kinds.Lead{Name: "Twice"}, now)
		// Each delivery has one duplicate counted on it already.
		idList = append(idList, insertDelivery(t, e, s, fmt.Sprintf("t-%d", i), body, now, 1))
	}
	// One batch task naming every delivery twice, another batch task of
	// all of them, and each one's own task, all at once.
	doubled := append(append([]string(nil), idList...), idList...)
	var wg sync.WaitGroup
	errs := make(chan error, n+2)
	for _, list := range [][]string{doubled, idList} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, _ := webhooks.NewBatchTask(ten.ID, list, nil)
			errs <- e.App.Processor.HandleBatch(ctx, task)
		}()
	}
	for _, id := range idList {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, _ := webhooks.NewProcessTask(ten.ID, id, 0)
			errs <- e.App.Processor.HandleProcess(ctx, task)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed' AND attempts = 1`, ten.ID); c != n {
		t.Fatalf("%d deliveries processed once, want %d", c, n)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != n {
		t.Fatalf("%d leads, want %d", c, n)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND times_seen = 2`, ten.ID); c != n {
		var seen []int
		_ = e.App.DB.Select(&seen, `SELECT times_seen FROM leads WHERE tenant_id = ?`, ten.ID)
		t.Fatalf("times_seen %v, want 2 each (the delivery and its duplicate)", seen)
	}
}
