package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

type hookResp struct {
	Status int
	Body   []byte
	Ack    struct {
		Status     string `json:"status"`
		DeliveryID string `json:"delivery_id"`
		Items      []struct {
			DeliveryID string `json:"delivery_id"`
			Status     string `json:"status"`
		} `json:"items"`
	}
}

// sendAtOnce sends the same request n times at once.
func sendAtOnce(t testing.TB, n int, url string, h http.Header, body []byte) []hookResp {
	var wg sync.WaitGroup
	results := make([]hookResp, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			results[i] = send(t, url, h, body)
		}(i)
	}
	close(start)
	wg.Wait()
	return results
}

// send is post as JSON, failing the test on an acknowledgement it cannot
// read.
func send(t testing.TB, url string, h http.Header, body []byte) hookResp {
	t.Helper()
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	out := post(t, url, h, body)
	if out.Status == 200 {
		if err := json.Unmarshal(out.Body, &out.Ack); err != nil {
			t.Fatalf("ack %s: %v", out.Body, err)
		}
	}
	return out
}

type source struct {
	sources.Source
	Secret string
	URL    string
}

func newSource(t testing.TB, e *apptest.Env, tenantID, slug, kind string) source {
	t.Helper()
	in := sources.CreateInput{Slug: slug, Name: slug, Kind: kind, Config: kinds.SampleConfig(kind)}
	if kind == kinds.Meta {
		in.VerifyToken = "verify-me"
	}
	src, secret, err := e.App.Sources.Create(context.Background(), tenantID, in)
	if err != nil {
		t.Fatalf("create source %s: %v", kind, err)
	}
	var tslug string
	if err := e.App.DB.GetContext(context.Background(), &tslug, `SELECT slug FROM tenants WHERE id = ?`, tenantID); err != nil {
		t.Fatal(err)
	}
	return source{Source: src, Secret: secret, URL: e.URL + "/hooks/" + tslug + "/" + slug}
}

func signed(t testing.TB, s source, deliveryID, ref string, f kinds.Lead, now time.Time) (http.Header, []byte) {
	t.Helper()
	return signBody(t, s, deliveryID, kinds.SampleBody(s.Kind, deliveryID, ref, f, now), now)
}

// signBody signs body as s's sender would at now.
func signBody(t testing.TB, s source, deliveryID string, body []byte, now time.Time) (http.Header, []byte) {
	t.Helper()
	h, b, err := kinds.SignTo(s.Kind, kinds.SampleConfig(s.Kind), s.Secret, deliveryID, s.URL, body, now)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return h, b
}

func count(t testing.TB, e *apptest.Env, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.App.DB.GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestEveryKindEndToEnd(t *testing.T) {
	e := apptest.New(t, "hooks_kinds", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	for _, kind := range kinds.Names() {
		t.Run(kind, func(t *testing.T) {
			s := newSource(t, e, ten.ID, "src-"+kind, kind)
			now := time.Now()
			f := kinds.Lead{Email: "ada+" + kind + "@example.com", Name: "Ada " + kind, Phone: "+15550100", Company: "Analytical"}
			h, body := signed(t, s, "dlv-"+kind+"-1", "ref-"+kind+"-1", f, now)

			// Tampering: one byte changed → 401, nothing stored.
			tampered := bytes.Clone(body)
			i := bytes.Index(tampered, []byte("Ada"))
			if i < 0 {
				i = len(tampered) / 2
			}
			tampered[i] ^= 0x20
			if kind == kinds.GoogleAds { // no body signature: the key in the body is the credential
				tampered = bytes.Replace(body, []byte(s.Secret), []byte(s.Secret[:len(s.Secret)-1]+"x"), 1)
			}
			th := h
			if kind == kinds.Token { // no body signature: the token is the credential
				th, tampered = h.Clone(), body
				th.Set("Authorization", "Bearer "+s.Secret[:len(s.Secret)-1])
			}
			if r := send(t, s.URL, th, tampered); r.Status != 401 {
				t.Fatalf("tampered: %d %s", r.Status, r.Body)
			}
			// Wrong secret → 401.
			wrong := s
			wrong.Secret = strings.Repeat("a", 40)
			if kind == kinds.Standard {
				wrong.Secret = "whsec_" + "d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA=="
			}
			wh, wb := signed(t, wrong, "dlv-"+kind+"-1", "ref-"+kind+"-1", f, now)
			if r := send(t, s.URL, wh, wb); r.Status != 401 {
				t.Fatalf("wrong secret: %d %s", r.Status, r.Body)
			}
			// Stale and future timestamps where the kind has one.
			if kind == kinds.Standard || kind == kinds.Timestamped || kind == kinds.HubSpot || kind == kinds.Webflow || kind == kinds.TikTok {
				for _, skew := range []time.Duration{-6 * time.Minute, 6 * time.Minute} {
					sh, sb := signed(t, s, "dlv-"+kind+"-1", "ref-"+kind+"-1", f, now.Add(skew))
					if r := send(t, s.URL, sh, sb); r.Status != 401 {
						t.Fatalf("skew %s: %d %s", skew, r.Status, r.Body)
					}
				}
			}
			if n := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); n != 0 {
				t.Fatalf("rejected requests stored %d deliveries", n)
			}

			r := send(t, s.URL, h, body)
			if r.Status != 200 || r.Ack.Status != "accepted" {
				t.Fatalf("valid: %d %s", r.Status, r.Body)
			}
			r2 := send(t, s.URL, h, body)
			if r2.Status != 200 || r2.Ack.Status != "duplicate" {
				t.Fatalf("repeat: %d %s", r2.Status, r2.Body)
			}
			if kind == kinds.Meta || kind == kinds.HubSpot {
				if r.Ack.Items[0].DeliveryID != r2.Ack.Items[0].DeliveryID || r2.Ack.Items[0].Status != "duplicate" {
					t.Fatalf("meta items %s / %s", r.Body, r2.Body)
				}
			} else if r.Ack.DeliveryID == "" || r.Ack.DeliveryID != r2.Ack.DeliveryID {
				t.Fatalf("duplicate must name the original: %s / %s", r.Body, r2.Body)
			}
			// The delivery and its duplicate: a duplicate of an already
			// processed delivery reaches times_seen within half a second.
			apptest.Eventually(t, 15*time.Second, "lead from "+kind+" seen twice", func() bool {
				return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ? AND times_seen = 2`, ten.ID, s.ID) == 1
			})
			var l leads.Lead
			if err := e.App.DB.GetContext(context.Background(), &l, `SELECT `+leads.LeadCols+` FROM leads WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); err != nil {
				t.Fatal(err)
			}
			switch kind {
			case kinds.Meta, kinds.LinkedIn: // the webhook carries only the lead's id until enrichment
			case kinds.HubSpot: // one propertyChange event: the email alone
				if l.Email != f.Email {
					t.Fatalf("lead fields %+v", l)
				}
			default:
				if l.Email != f.Email || l.Name != f.Name {
					t.Fatalf("lead fields %+v", l)
				}
			}
			if l.Status != "new" || l.Version != 1 || l.TimesSeen != 2 {
				t.Fatalf("lead state %+v", l)
			}
		})
	}
}

func TestConcurrentIdenticalDeliveries(t *testing.T) {
	e := apptest.New(t, "hooks_conc", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("conc")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	h, body := signed(t, s, "msg_2Kx9", "contact_77", kinds.Lead{Email: "c@example.com", Name: "Con Current"}, time.Now())

	const n = 50
	results := sendAtOnce(t, n, s.URL, h, body)
	accepted, dups := 0, 0
	ids := map[string]bool{}
	for _, r := range results {
		if r.Status != 200 {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		ids[r.Ack.DeliveryID] = true
		switch r.Ack.Status {
		case "accepted":
			accepted++
		case "duplicate":
			dups++
		}
	}
	if accepted != 1 || dups != n-1 || len(ids) != 1 {
		t.Fatalf("accepted=%d duplicates=%d distinct ids=%d", accepted, dups, len(ids))
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != 1 {
		t.Fatalf("%d delivery rows", c)
	}
	// The duplicates are a count on the original, with first and last
	// arrival; no row each.
	var orig string
	for id := range ids {
		orig = id
	}
	// Duplicates answered from memory reach the count within a flush
	// (webhooks.DuplicateHold).
	apptest.Eventually(t, webhooks.DuplicateHold+2*time.Second, "dup_count 49", func() bool {
		return count(t, e, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, ten.ID, orig) == n-1
	})
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND dup_first_at <= dup_last_at`, ten.ID); c != 1 { // (concurrent arrivals: a duplicate may carry an earlier time than the winner)
		t.Fatal("first/last duplicate arrival not recorded")
	}
	apptest.Eventually(t, 15*time.Second, "processed", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND processed_at IS NOT NULL`, ten.ID) == 1
	})
	if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID); c != 1 {
		t.Fatalf("%d leads", c)
	}
	// times_seen: the delivery and its 49 duplicates (whether they came
	// before or after processing).
	apptest.Eventually(t, webhooks.DuplicateHold+15*time.Second, "times_seen 50", func() bool {
		return count(t, e, `SELECT times_seen FROM leads WHERE tenant_id = ?`, ten.ID) == n
	})
	// The per-minute counters are exact.
	apptest.Eventually(t, 10*time.Second, "counters flushed", func() bool {
		return count(t, e, `SELECT IFNULL(SUM(deliveries), 0) FROM source_stats_minute WHERE tenant_id = ?`, ten.ID) == n
	})
	if c := count(t, e, `SELECT SUM(duplicates) FROM source_stats_minute WHERE tenant_id = ?`, ten.ID); c != n-1 {
		t.Fatalf("duplicates counter %d, want %d", c, n-1)
	}
	// One timeline entry for all of them, through the API.
	var leadID string
	if err := e.App.DB.GetContext(context.Background(), &leadID, `SELECT id FROM leads WHERE tenant_id = ?`, ten.ID); err != nil {
		t.Fatal(err)
	}
	res := e.Do("GET", "/api/v1/leads/"+leadID+"/timeline", ten.Token, nil)
	var tl struct {
		Items []struct {
			Kind       string     `json:"kind"`
			Count      int        `json:"count"`
			FirstAt    *time.Time `json:"first_at"`
			LastAt     *time.Time `json:"last_at"`
			DeliveryID string     `json:"delivery_id"`
		} `json:"items"`
	}
	res.JSON(t, &tl)
	dupEntries := 0
	for _, it := range tl.Items {
		if it.Kind != "duplicate" {
			continue
		}
		dupEntries++
		if it.Count != n-1 || it.DeliveryID != orig || it.FirstAt == nil || it.LastAt == nil || it.LastAt.Before(*it.FirstAt) {
			t.Fatalf("duplicate entry %+v, want count %d of %s with first/last", it, n-1, orig)
		}
	}
	if dupEntries != 1 {
		t.Fatalf("%d duplicate entries in %s", dupEntries, res.Body)
	}
}

func TestHumanFieldsSurviveRedelivery(t *testing.T) {
	e := apptest.New(t, "hooks_human", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("human")
	s := newSource(t, e, ten.ID, "stripe", kinds.Timestamped)
	ctx := context.Background()
	h, body := signed(t, s, "evt_1", "cus_42", kinds.Lead{Email: "old@example.com", Name: "Quinn"}, time.Now())
	if r := send(t, s.URL, h, body); r.Ack.Status != "accepted" {
		t.Fatalf("%s", r.Body)
	}
	var leadID string
	apptest.Eventually(t, 15*time.Second, "lead", func() bool {
		return e.App.DB.GetContext(ctx, &leadID, `SELECT id FROM leads WHERE tenant_id = ?`, ten.ID) == nil
	})
	// A human qualifies the lead (version 1 → 2) and tags it.
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET status = 'qualified', tags = '["vip"]', version = version + 1 WHERE tenant_id = ? AND id = ?`, ten.ID, leadID); err != nil {
		t.Fatal(err)
	}
	// The sender re-delivers the record (new event id) with a changed email.
	h2, body2 := signed(t, s, "evt_2", "cus_42", kinds.Lead{Email: "new@example.com", Name: "Quinn"}, time.Now())
	if r := send(t, s.URL, h2, body2); r.Ack.Status != "accepted" {
		t.Fatalf("%s", r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "refresh", func() bool {
		l, err := leads.Get(ctx, e.App.DB, ten.ID, leadID)
		return err == nil && l.Email == "new@example.com"
	})
	l, _ := leads.Get(ctx, e.App.DB, ten.ID, leadID)
	if l.Status != "qualified" || l.Version != 2 || len(l.Tags) != 1 || l.Tags[0] != "vip" || l.TimesSeen != 2 {
		t.Fatalf("human fields changed: %+v", l)
	}
	if !strings.Contains(string(l.Payload), "new@example.com") {
		t.Fatalf("payload not refreshed: %s", l.Payload)
	}
}

func TestRejections(t *testing.T) {
	e := apptest.New(t, "hooks_rej", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("rej")
	s := newSource(t, e, ten.ID, "tf", kinds.Typeform)

	// Unknown tenant and unknown source: identical 404 bodies.
	h, body := signed(t, s, "ev1", "tok1", kinds.Lead{Email: "x@example.com"}, time.Now())
	r1 := send(t, e.URL+"/hooks/nobody/tf", h, body)
	r2 := send(t, e.URL+"/hooks/rej/nothing", h, body)
	if r1.Status != 404 || r2.Status != 404 || !bytes.Equal(r1.Body, r2.Body) {
		t.Fatalf("404s differ: %d %s / %d %s", r1.Status, r1.Body, r2.Status, r2.Body)
	}
	// Body over 1 MiB → 413.
	big := append([]byte(`{"event_id":"x","pad":"`), bytes.Repeat([]byte("a"), webhooks.MaxBody)...)
	big = append(big, `"}`...)
	bh, bb, _ := kinds.Sign(s.Kind, nil, s.Secret, "x", big, time.Now())
	if r := send(t, s.URL, bh, bb); r.Status != 413 {
		t.Fatalf("huge: %d", r.Status)
	}
	// Signed but malformed JSON → 422 and a dead letter with the raw body.
	bad := []byte(`{"event_id": "ev-bad", "form_response": {`)
	mh, mb, _ := kinds.Sign(s.Kind, nil, s.Secret, "ev-bad", bad, time.Now())
	r := send(t, s.URL, mh, mb)
	if r.Status != 422 {
		t.Fatalf("malformed: %d %s", r.Status, r.Body)
	}
	var kept []byte
	if err := e.App.DB.GetContext(context.Background(), &kept, `SELECT body FROM dead_letters WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); err != nil || !bytes.Equal(kept, bad) {
		t.Fatalf("dead letter %q %v", kept, err)
	}
	// Signed, parseable, but no delivery id → 422, and it uses up nothing.
	noID := []byte(`{"form_response":{"token":"t1"}}`)
	nh, nb, _ := kinds.Sign(s.Kind, nil, s.Secret, "", noID, time.Now())
	if r := send(t, s.URL, nh, nb); r.Status != 422 {
		t.Fatalf("no id: %d %s", r.Status, r.Body)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != 0 {
		t.Fatalf("rejected requests used %d delivery ids", c)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ?`, ten.ID); c != 2 {
		t.Fatalf("%d dead letters", c)
	}
	// Errors are problem+json.
	req, _ := http.NewRequest("POST", s.URL, strings.NewReader("{}"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("unsigned: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

func TestMetaHandshakeAndBatch(t *testing.T) {
	e := apptest.New(t, "hooks_meta", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("meta")
	s := newSource(t, e, ten.ID, "fb", kinds.Meta)
	get := func(q string) (int, string) {
		res, err := http.Get(s.URL + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if st, b := get("hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444"); st != 200 || b != "1158201444" {
		t.Fatalf("handshake %d %q", st, b)
	}
	if st, _ := get("hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1"); st != 403 {
		t.Fatalf("bad token %d", st)
	}
	// One POST carrying two leads; then again with one new and one old.
	now := time.Now().Unix()
	mk := func(ids ...string) []byte {
		var changes []string
		for _, id := range ids {
			changes = append(changes, fmt.Sprintf(`{"field":"leadgen","value":{"leadgen_id":"%s","form_id":"9","page_id":"1","created_time":%d}}`, id, now))
		}
		return []byte(`{"object":"page","entry":[{"id":"1","time":` + fmt.Sprint(now) + `,"changes":[` + strings.Join(changes, ",") + `]}]}`)
	}
	h, b, _ := kinds.Sign(kinds.Meta, nil, s.Secret, "", mk("111", "222"), time.Now())
	r := send(t, s.URL, h, b)
	if r.Ack.Status != "accepted" || len(r.Ack.Items) != 2 || r.Ack.Items[0].Status != "accepted" {
		t.Fatalf("batch %s", r.Body)
	}
	h, b, _ = kinds.Sign(kinds.Meta, nil, s.Secret, "", mk("222", "333"), time.Now())
	r = send(t, s.URL, h, b)
	if r.Ack.Status != "accepted" || r.Ack.Items[0].Status != "duplicate" || r.Ack.Items[1].Status != "accepted" {
		t.Fatalf("mixed batch %s", r.Body)
	}
	h, b, _ = kinds.Sign(kinds.Meta, nil, s.Secret, "", mk("111"), time.Now())
	if r = send(t, s.URL, h, b); r.Ack.Status != "duplicate" {
		t.Fatalf("all-duplicate batch %s", r.Body)
	}
}

// Sixteen senders replaying the same 60 deliveries in different orders:
// overlapping group-commit batches must neither fail nor double-accept.
func TestOverlappingBatches(t *testing.T) {
	e := apptest.New(t, "hooks_overlap", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("overlap")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	const ids, senders = 60, 16
	type msg struct {
		h http.Header
		b []byte
	}
	msgs := make([]msg, ids)
	for i := range msgs {
		h, b := signed(t, s, fmt.Sprintf("m%03d", i), fmt.Sprintf("c%03d", i), kinds.Lead{Email: fmt.Sprintf("o%d@example.com", i)}, time.Now())
		msgs[i] = msg{h, b}
	}
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < ids; k++ {
				i := (k*7 + g*13) % ids // a different order per sender
				r := send(t, s.URL, msgs[i].h, msgs[i].b)
				if r.Status != 200 {
					t.Errorf("sender %d msg %d: %d %s", g, i, r.Status, r.Body)
					return
				}
				if r.Ack.Status == "accepted" {
					mu.Lock()
					accepted[r.Ack.DeliveryID]++
					mu.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	if len(accepted) != ids {
		t.Fatalf("%d deliveries accepted, want %d", len(accepted), ids)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Fatalf("delivery %s accepted %d times", id, n)
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != ids {
		t.Fatalf("%d delivery rows", c)
	}
	if err := e.App.Ingest.Claimer.FlushDuplicates(context.Background()); err != nil { // those answered from memory
		t.Fatal(err)
	}
	if c := count(t, e, `SELECT SUM(dup_count) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != ids*(senders-1) {
		t.Fatalf("%d duplicates counted, want %d", c, ids*(senders-1))
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND dup_count <> ?`, ten.ID, senders-1); c != 0 {
		t.Fatalf("%d deliveries without %d duplicates", c, senders-1)
	}
}

// The claimer keeps connections of its own; when the server drops them
// (a restart, a failover, KILL) the next claims reconnect and repeat the
// batch: every delivery is answered 200 and stored once.
func TestClaimerSurvivesKilledConnections(t *testing.T) {
	e := apptest.New(t, "hooks_kill", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("kill")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	post := func(i int) hookResp {
		h, b := signed(t, s, fmt.Sprintf("k%03d", i), fmt.Sprintf("c%03d", i), kinds.Lead{Email: fmt.Sprintf("k%d@example.com", i)}, time.Now())
		return send(t, s.URL, h, b)
	}
	if r := post(0); r.Status != 200 {
		t.Fatalf("first delivery: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	var ids []int64
	if err := e.App.DB.SelectContext(ctx, &ids, `SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`); err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Fatal("no connections to kill")
	}
	for _, id := range ids {
		if _, err := e.App.DB.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
			t.Fatalf("kill %d: %v", id, err)
		}
	}
	var wg sync.WaitGroup
	for i := 1; i <= 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(i); r.Status != 200 || r.Ack.Status != "accepted" {
				t.Errorf("delivery %d after KILL: %d %s", i, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != 41 {
		t.Fatalf("%d delivery rows, want 41", c)
	}
}

// A claim stuck on a row lock (here another transaction's uncommitted
// insert of the same delivery id) holds up its own batch only: another
// source's deliveries start a batch beside it and are answered at once;
// when the lock goes, the stuck one is answered too. (Deliveries of the
// same source whose ids sort just below the stuck one wait with it:
// InnoDB's duplicate check locks the gap before a key.)
func TestStuckClaimDoesNotStopIngest(t *testing.T) {
	e := apptest.New(t, "hooks_stuck", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("stuck")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	other := newSource(t, e, ten.ID, "other", kinds.Standard)
	ctx := context.Background()
	tx, err := e.App.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at)
		VALUES (?, ?, ?, 'stuck', 'webhook', '{}', NOW(6))`, ten.ID, s.ID, ids.New()); err != nil {
		t.Fatal(err)
	}
	stuck := make(chan hookResp, 1)
	go func() {
		h, b := signed(t, s, "stuck", "c-stuck", kinds.Lead{Email: "stuck@example.com"}, time.Now())
		stuck <- send(t, s.URL, h, b)
	}()
	time.Sleep(200 * time.Millisecond) // the stuck claim is waiting on the lock
	start := time.Now()
	for i := 0; i < 5; i++ {
		h, b := signed(t, other, fmt.Sprintf("free-%d", i), fmt.Sprintf("c-free-%d", i), kinds.Lead{Email: "free@example.com"}, time.Now())
		if r := send(t, other.URL, h, b); r.Status != 200 || r.Ack.Status != "accepted" {
			t.Fatalf("delivery beside the stuck one: %d %s", r.Status, r.Body)
		}
	}
	if d := time.Since(start); d > 10*time.Second { // the lock wait timeout is 50 s
		t.Fatalf("deliveries beside a stuck claim took %s", d)
	}
	select {
	case r := <-stuck:
		t.Fatalf("stuck claim answered while the lock was held: %d %s", r.Status, r.Body)
	default:
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-stuck:
		if r.Status != 200 || r.Ack.Status != "accepted" {
			t.Fatalf("stuck claim after the lock went: %d %s", r.Status, r.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stuck claim not answered after the lock went")
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != 6 {
		t.Fatalf("%d delivery rows, want 6", c)
	}
}
