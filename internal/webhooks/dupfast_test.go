package webhooks_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/ids"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// A retry storm of a committed delivery: 200 identical requests at once
// are answered duplicate naming the original with no claim in the database
// (the claimer's row count does not move), and one flush later the
// original holds all 200 (count, first and last arrival), the lead's
// times_seen 201 and the per-minute counters 201 deliveries, 200
// duplicates.
func TestKnownDuplicatesAreAnsweredFromMemory(t *testing.T) {
	e := apptest.New(t, "hooks_fast", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("fast")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	h, body := signed(t, s, "msg_storm", "contact_storm", kinds.Lead{Email: "storm@example.com", Name: "Storm"}, time.Now())
	first := send(t, s.URL, h, body)
	if first.Status != 200 || first.Ack.Status != "accepted" {
		t.Fatalf("original: %d %s", first.Status, first.Body)
	}
	orig := first.Ack.DeliveryID
	claims := e.App.Ingest.Claimer.Stats().Rows

	const n = 200
	results := sendAtOnce(t, n, s.URL, h, body)
	for _, r := range results {
		if r.Status != 200 || r.Ack.Status != "duplicate" || r.Ack.DeliveryID != orig {
			t.Fatalf("duplicate answered %d %s, want duplicate of %s", r.Status, r.Body, orig)
		}
	}
	if got := e.App.Ingest.Claimer.Stats().Rows; got != claims {
		t.Fatalf("%d claims went to the database for duplicates of a committed delivery", got-claims)
	}
	apptest.Eventually(t, webhooks.DuplicateHold+1500*time.Millisecond, "dup_count 200 within a flush", func() bool {
		return count(t, e, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, ten.ID, orig) == n
	})
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND dup_first_at IS NOT NULL AND dup_first_at <= dup_last_at`, ten.ID); c != 1 {
		t.Fatal("first/last duplicate arrival not recorded")
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != 1 {
		t.Fatalf("%d delivery rows", c)
	}
	apptest.Eventually(t, webhooks.DuplicateHold+15*time.Second, "times_seen 201", func() bool {
		return count(t, e, `SELECT IFNULL(MAX(times_seen), 0) FROM leads WHERE tenant_id = ?`, ten.ID) == n+1
	})
	apptest.Eventually(t, 10*time.Second, "counters flushed", func() bool {
		return count(t, e, `SELECT IFNULL(SUM(deliveries), 0) FROM source_stats_minute WHERE tenant_id = ?`, ten.ID) == n+1
	})
	if c := count(t, e, `SELECT SUM(duplicates) FROM source_stats_minute WHERE tenant_id = ?`, ten.ID); c != n {
		t.Fatalf("duplicates counter %d, want %d", c, n)
	}
}

// Another server process (a claimer of its own) does not know the
// delivery: its duplicate takes the database and is as right, and from
// then on this process knows it too.
func TestDuplicateUnknownToThisProcessTakesTheDatabase(t *testing.T) {
	e := apptest.New(t, "hooks_fast2", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("fast2")
	s := newSource(t, e, ten.ID, "landing", kinds.Standard)
	h, body := signed(t, s, "msg_other", "contact_other", kinds.Lead{Email: "o@example.com"}, time.Now())
	first := send(t, s.URL, h, body)
	if first.Ack.Status != "accepted" {
		t.Fatalf("original %s", first.Body)
	}
	other := &webhooks.Claimer{DB: e.App.DB}
	now := time.Now().UTC()
	if orig, ok := other.Answer(ten.ID, s.ID, "msg_other", now); ok || orig != "" {
		t.Fatalf("another process answered from memory (%q) a delivery it never saw", orig)
	}
	isNew, orig, err := other.Claim(context.Background(), webhooks.Delivery{TenantID: ten.ID, SourceID: s.ID, ID: ids.New(),
		DeliveryID: "msg_other", Origin: "webhook", Payload: body, ReceivedAt: now})
	if err != nil || isNew || orig != first.Ack.DeliveryID {
		t.Fatalf("claim in the other process: new=%v orig=%s err=%v, want the original %s", isNew, orig, err, first.Ack.DeliveryID)
	}
	if got, ok := other.Answer(ten.ID, s.ID, "msg_other", now); !ok || got != first.Ack.DeliveryID {
		t.Fatalf("after its claim the other process does not know the original: %q %v", got, ok)
	}
	if err := other.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := count(t, e, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND id = ?`, ten.ID, first.Ack.DeliveryID); c != 2 {
		t.Fatalf("dup_count %d, want 2", c)
	}
	// After Shutdown nothing more is answered from memory: the claim path.
	if _, ok := other.Answer(ten.ID, s.ID, "msg_other", now); ok {
		t.Fatal("answered from memory after shutdown")
	}
}

// The server's own cost of a duplicate answered from memory, through the
// whole router (request log, metrics, source lookup, signature check):
//
//	go test -run '^$' -bench BenchmarkKnownDuplicate -benchmem ./internal/webhooks/
func BenchmarkKnownDuplicate(b *testing.B) {
	e := apptest.New(b, "hooks_fastbench", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("fastbench")
	s := newSource(b, e, ten.ID, "landing", kinds.Standard)
	h, body := signed(b, s, "msg_bench", "contact_bench", kinds.Lead{Email: "b@example.com"}, time.Now())
	if r := send(b, s.URL, h, body); r.Ack.Status != "accepted" {
		b.Fatalf("original %s", r.Body)
	}
	handler := e.App.Handler()
	path := strings.TrimPrefix(s.URL, e.URL)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}
