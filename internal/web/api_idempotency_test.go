package web_test

import (
	"net/http"
	"sync"
	"testing"
)

// TestLeadsValidationErrorIsNotStoredUnderKey: a POST rejected by
// validation (422) before any effect is not stored under its
// Idempotency-Key (Stripe's rule), so the client fixes the body and
// retries with the same key and gets the real result; a 404 (the write
// began) is stored and replayed. Through the real routes on MariaDB.
func TestLeadsValidationErrorIsNotStoredUnderKey(t *testing.T) {
	e := newLeadsEnv(t, "leads_idem422")
	a := e.Tenant("idem422-a")
	const bad = `{"name":"Ada","email":"not-an-email"}`
	const fixed = `{"name":"Ada","email":"ada@example.test"}`

	t.Run("sequential", func(t *testing.T) {
		for range 2 {
			st, h, b := rawDo(t, e, "POST", "/api/v1/leads", a.Token, bad, "Idempotency-Key", "fix-me")
			if st != 422 || h.Get("Idempotent-Replayed") != "" {
				t.Fatalf("invalid body: %d %v %s", st, h, b)
			}
		}
		st, h, first := rawDo(t, e, "POST", "/api/v1/leads", a.Token, fixed, "Idempotency-Key", "fix-me")
		if st != 201 || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("fixed body under the same key: %d %s", st, first)
		}
		st, h, again := rawDo(t, e, "POST", "/api/v1/leads", a.Token, fixed, "Idempotency-Key", "fix-me")
		if st != 201 || h.Get("Idempotent-Replayed") != "true" || string(again) != string(first) {
			t.Fatalf("replay: %d %v %s", st, h, again)
		}
		// The key is now used by the fixed body: the invalid one is another request.
		if st, _, b := rawDo(t, e, "POST", "/api/v1/leads", a.Token, bad, "Idempotency-Key", "fix-me"); st != 422 {
			t.Fatalf("invalid body after the key completed: %d %s", st, b)
		}
		if n := countLeads(t, e, a.ID); n != 1 {
			t.Fatalf("%d leads, want 1", n)
		}
	})

	t.Run("404 is stored and replayed", func(t *testing.T) {
		const path = "/api/v1/leads/01ARZ3NDEKTSV4RRFFQ69G5FAV/notes"
		st, _, first := rawDo(t, e, "POST", path, a.Token, `{"body":"x"}`, "Idempotency-Key", "note-404")
		st2, h, again := rawDo(t, e, "POST", path, a.Token, `{"body":"x"}`, "Idempotency-Key", "note-404")
		if st != 404 || st2 != 404 || h.Get("Idempotent-Replayed") != "true" || string(again) != string(first) {
			t.Fatalf("%d %s / %d %v %s", st, first, st2, h, again)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		before := countLeads(t, e, a.ID)
		// 20 invalid and 20 fixed bodies at once under one key: the
		// invalid ones never store anything, so every answer is a 422, a
		// 409 (the key is busy) or the fixed body's 201, and exactly one
		// lead is made.
		const n = 20
		type answer struct {
			fixed  bool
			status int
			header http.Header
			body   string
		}
		answers := make([]answer, 2*n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				body := bad
				if i%2 == 1 {
					body = fixed
				}
				<-start
				st, h, b := rawDo(t, e, "POST", "/api/v1/leads", a.Token, body, "Idempotency-Key", "fix-me-conc")
				answers[i] = answer{body == fixed, st, h, string(b)}
			})
		}
		close(start)
		wg.Wait()
		originals := 0
		for _, r := range answers {
			switch {
			case r.status == 409 || r.status == 422:
			case r.status == 201 && r.fixed:
				if r.header.Get("Idempotent-Replayed") == "" {
					originals++
				}
			default:
				t.Errorf("fixed=%v: unexpected %d %s", r.fixed, r.status, r.body)
			}
		}
		if originals > 1 {
			t.Fatalf("%d original 201s, want at most 1", originals)
		}
		// Whatever the race left, the fixed body's retry settles on one lead.
		st, h, b := rawDo(t, e, "POST", "/api/v1/leads", a.Token, fixed, "Idempotency-Key", "fix-me-conc")
		if st != 201 || (originals == 1) != (h.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("retry of the fixed body: %d %v %s (originals %d)", st, h, b, originals)
		}
		if got := countLeads(t, e, a.ID) - before; got != 1 {
			t.Fatalf("%d new leads, want exactly 1", got)
		}
		t.Logf("40 concurrent (20 invalid, 20 fixed): %d original 201", originals)
	})
}
