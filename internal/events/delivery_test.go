package events_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/events"
	"leadpipe/internal/ids"
)

type lead struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	N      int    `json:"n"`
}

func TestSubscribedTypesOnlyVerifiedInSequenceNoOtherTenant(t *testing.T) {
	e := newEnv(t, envOpts{allowPrivate: true})
	ra, rb := newReceiver(t), newReceiver(t)
	epA := e.endpoint(e.Tenants[0], ra.URL(), events.LeadCreated, events.LeadStatusChanged)
	epB := e.endpoint(e.Tenants[1], rb.URL(), events.LeadCreated, events.LeadUpdated, events.LeadStatusChanged, events.AlertFired)
	ra.setSecrets(epA.Secret)
	rb.setSecrets(epB.Secret)
	if !strings.HasPrefix(epA.Secret, "whsec_") {
		t.Fatalf("secret %q", epA.Secret)
	}
	leadA := ids.New()
	e.emit(e.Tenants[0], events.LeadCreated, leadA, lead{ID: leadA, Status: "new"})
	for i := 1; i <= 5; i++ {
		e.emit(e.Tenants[0], events.LeadUpdated, leadA, lead{ID: leadA, N: i}) // not subscribed by A
		e.emit(e.Tenants[0], events.LeadStatusChanged, leadA, lead{ID: leadA, Status: "contacted", N: i})
	}
	e.emit(e.Tenants[0], events.AlertFired, ids.New(), map[string]string{"rule": "dead_letters"})
	leadB := ids.New()
	e.emit(e.Tenants[1], events.LeadCreated, leadB, lead{ID: leadB})
	e.settle()

	got := ra.requests()
	if len(got) != 6 {
		t.Fatalf("tenant A's endpoint got %d deliveries, want 6 (1 created + 5 status changes)", len(got))
	}
	var lastSeq int64
	seen := map[string]bool{}
	for _, r := range got {
		if !r.Verified {
			t.Fatalf("delivery %s not verified", r.ID)
		}
		if r.ID != r.Envelope.ID {
			t.Fatalf("webhook-id %s != envelope id %s", r.ID, r.Envelope.ID)
		}
		if r.Envelope.Type != events.LeadCreated && r.Envelope.Type != events.LeadStatusChanged {
			t.Fatalf("unsubscribed type %s delivered", r.Envelope.Type)
		}
		if strings.Contains(string(r.Envelope.Data), leadB) {
			t.Fatalf("tenant B's lead reached tenant A")
		}
		seen[r.ID] = true
		_ = lastSeq
	}
	// Per lead, sequence numbers are 1..11 in emit order (updated events
	// take numbers too); a consumer orders by them.
	seqs := map[int64]string{}
	for _, r := range got {
		seqs[r.Envelope.Sequence] = r.Envelope.Type
	}
	if seqs[1] != events.LeadCreated {
		t.Fatalf("sequence 1 is %q, want lead.created", seqs[1])
	}
	for i := int64(1); i <= 5; i++ {
		if seqs[1+2*i] != events.LeadStatusChanged {
			t.Fatalf("sequence %d is %q, want lead.status_changed (sequences %v)", 1+2*i, seqs[1+2*i], seqs)
		}
	}
	gotB := rb.requests()
	if len(gotB) != 1 || gotB[0].Envelope.Type != events.LeadCreated || !strings.Contains(string(gotB[0].Envelope.Data), leadB) {
		t.Fatalf("tenant B got %+v", gotB)
	}
}

func TestFailedThenRetriedWithSameWebhookID(t *testing.T) {
	e, r := envWithReceiver(t)
	r.answer = func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(500)
			_, _ = w.Write([]byte("database is down"))
			return
		}
		w.WriteHeader(200)
	}
	ep := e.subscribe(r)
	e.emitLead()
	e.settle()
	if r.count() != 1 {
		t.Fatalf("%d requests before the retry is due", r.count())
	}
	e.Clock.Advance(4 * time.Second) // jitter: 5 s ± 10 %, Rand is 0.5 → exactly 5 s
	e.settle()
	if r.count() != 1 {
		t.Fatalf("retried before 5 s")
	}
	e.Clock.Advance(1 * time.Second)
	e.settle()
	got := r.requests()
	if len(got) != 2 || got[0].ID != got[1].ID {
		t.Fatalf("want two requests with one webhook-id, got %+v", got)
	}
	atts, _, err := e.S.Attempts(context.Background(), e.Tenants[0], ep.ID, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 2 || atts[0].Attempt != 2 || atts[0].Outcome != events.OutcomeDelivered || *atts[0].Status != 200 ||
		atts[1].Attempt != 1 || atts[1].Outcome != events.OutcomeFailed || *atts[1].Status != 500 || atts[1].Response != "database is down" {
		t.Fatalf("attempts: %+v", atts)
	}
	if atts[0].AttemptedAt.Sub(atts[1].AttemptedAt) != 5*time.Second {
		t.Fatalf("retry after %s, want 5 s", atts[0].AttemptedAt.Sub(atts[1].AttemptedAt))
	}
	// The other tenant sees none of it.
	if _, _, err := e.S.Attempts(context.Background(), e.Tenants[1], ep.ID, "", 50); err == nil {
		t.Fatalf("another tenant listed the attempts")
	}
}

// The receiver is down for three days: every attempt follows the schedule
// and the delivery lands once it is back.
func TestDownThreeDaysDeliveredOnSchedule(t *testing.T) {
	e, r := envWithReceiver(t)
	bringUp := r.downUntil(503, 200)
	ep := e.subscribe(r)
	start := e.Clock.Now()
	e.emitLead()
	e.settle()
	// Jump the clock from one due retry to the next, up to 3 days.
	for e.jumpToNextDue(start.Add(72 * time.Hour)) {
		e.settle()
	}
	got := r.requests()
	// Attempts at 0, 5 s, 5 min 5 s, 35 min 5 s, 2 h 35 min 5 s, 7 h 35m 5s, 17h35m5s, 31h35m5s, 51h35m5s within 72 h: 9.
	if len(got) != 9 {
		t.Fatalf("%d attempts in 3 days, want 9", len(got))
	}
	var want time.Duration
	for i, g := range got {
		if i > 0 {
			want += events.Schedule[i-1]
		}
		if d := g.At.Sub(start.Truncate(time.Second)); d < want || d > want+time.Second {
			t.Fatalf("attempt %d at +%s, want about +%s", i+1, d, want)
		}
		if g.ID != got[0].ID || !g.Verified {
			t.Fatalf("attempt %d: id %s verified %v", i+1, g.ID, g.Verified)
		}
	}
	bringUp()
	e.Clock.Advance(24 * time.Hour) // the 10th attempt, 24 h after the 9th
	e.settle()
	if r.count() != 10 {
		t.Fatalf("after coming back: %d requests, want 10", r.count())
	}
	d := e.delivery(e.Tenants[0], ep.ID, got[0].ID)
	if d.State != events.StateDelivered || d.Attempts != 10 {
		t.Fatalf("delivery %+v", d)
	}
	cur, _ := e.S.Get(context.Background(), e.Tenants[0], ep.ID)
	if !cur.Enabled || cur.FailingSince != nil || cur.LastSuccessAt == nil {
		t.Fatalf("endpoint after recovery: %+v", cur)
	}
}

// Down past five days: the schedule runs out, the sweeper disables the
// endpoint and the alert hook fires; re-enabling and recovering delivers
// the backlog (including what was emitted while disabled) exactly once.
func TestDownFiveDaysDisabledThenRecovered(t *testing.T) {
	e, r := envWithReceiver(t)
	bringUp := r.downUntil(500, 204)
	ep := e.subscribe(r)
	start := e.Clock.Now()
	idList := map[string]bool{}
	for i := 0; i < 3; i++ {
		e.emitLead()
	}
	e.settle()
	for e.jumpToNextDue(start.Add(5*24*time.Hour + time.Hour)) {
		e.settle()
	}
	e.Clock.Advance(start.Add(5*24*time.Hour + time.Hour).Sub(e.Clock.Now()))
	e.settle() // the sweeper disables the endpoint
	cur, _ := e.S.Get(context.Background(), e.Tenants[0], ep.ID)
	if cur.Enabled || cur.DisabledReason == nil || !strings.Contains(*cur.DisabledReason, "5 days") {
		t.Fatalf("endpoint not disabled after 5 days: %+v", cur)
	}
	e.mu.Lock()
	if len(e.disabled) != 1 || e.disabled[0] != ep.ID {
		t.Fatalf("endpoint_disabled alerts opened: %v", e.disabled)
	}
	e.mu.Unlock()
	for _, g := range r.requests() {
		idList[g.ID] = true
	}
	if len(idList) != 3 {
		t.Fatalf("distinct events attempted: %d", len(idList))
	}
	// Two more while disabled: not sent.
	before := r.count()
	for i := 0; i < 2; i++ {
		e.emitLead()
	}
	e.settle()
	if r.count() != before {
		t.Fatalf("a disabled endpoint got deliveries")
	}
	bringUp()
	if _, err := e.S.Recover(context.Background(), e.Tenants[0], ep.ID, events.RecoverInput{Since: &start}); err == nil {
		t.Fatalf("recover of a disabled endpoint succeeded")
	}
	on := true
	if _, err := e.S.Patch(context.Background(), e.Tenants[0], ep.ID, events.PatchInput{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	n, err := e.S.Recover(context.Background(), e.Tenants[0], ep.ID, events.RecoverInput{Since: &start})
	if err != nil || n != 5 {
		t.Fatalf("recover: %d, %v (want 5)", n, err)
	}
	e.settle()
	// Recover again: nothing left to send.
	if n, err := e.S.Recover(context.Background(), e.Tenants[0], ep.ID, events.RecoverInput{Since: &start}); err != nil || n != 0 {
		t.Fatalf("second recover: %d, %v", n, err)
	}
	e.settle()
	okByID := map[string]int{}
	for _, g := range r.requests()[before:] {
		okByID[g.ID]++
	}
	if len(okByID) != 5 {
		t.Fatalf("after recover %d distinct events delivered, want 5: %v", len(okByID), okByID)
	}
	for id, c := range okByID {
		if c != 1 {
			t.Fatalf("event %s delivered %d times after recover", id, c)
		}
	}
}

func TestGoneDisablesAtOnce(t *testing.T) {
	e, r := envWithReceiver(t)
	r.answer = func(int, http.ResponseWriter) {}
	r.answer = func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) }
	ep := e.subscribe(r)
	for i := 0; i < 3; i++ {
		e.emitLead()
	}
	e.settle()
	cur, _ := e.S.Get(context.Background(), e.Tenants[0], ep.ID)
	if cur.Enabled || cur.DisabledReason == nil || !strings.Contains(*cur.DisabledReason, "410") {
		t.Fatalf("endpoint after 410: %+v", cur)
	}
	// MaxInFlight (8) let all three go at once at most; none is retried.
	n := r.count()
	e.Clock.Advance(time.Hour)
	e.settle()
	if r.count() != n || n > 3 {
		t.Fatalf("requests after 410: %d then %d", n, r.count())
	}
	if len(e.disabled) != 1 {
		t.Fatalf("alert hook calls: %d", len(e.disabled))
	}
}

func TestRetryAfterIsWaitedOut(t *testing.T) {
	e, r := envWithReceiver(t)
	r.answer = func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(200)
	}
	ep := e.subscribe(r)
	e.emitLead()
	e.settle()
	e.Clock.Advance(1900 * time.Millisecond)
	e.settle()
	if r.count() != 1 {
		t.Fatalf("retried before Retry-After passed")
	}
	e.Clock.Advance(100 * time.Millisecond)
	e.settle()
	if r.count() != 2 {
		t.Fatalf("not retried once Retry-After passed: %d requests", r.count())
	}
	atts, _, _ := e.S.Attempts(context.Background(), e.Tenants[0], ep.ID, "", 10)
	if len(atts) != 2 || atts[0].AttemptedAt.Sub(atts[1].AttemptedAt) != 2*time.Second {
		t.Fatalf("attempts %+v", atts)
	}
}

// During a rotation's grace period a receiver holding either secret
// verifies every delivery; after it only the new one signs.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	e, r := envWithReceiver(t)
	ep := e.endpoint(e.Tenants[0], r.URL(), events.LeadCreated)
	grace := 3600
	rot, err := e.S.Rotate(context.Background(), e.Tenants[0], ep.ID, events.RotateInput{GraceSeconds: &grace})
	if err != nil || rot.Secret == ep.Secret || rot.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %+v %v", rot, err)
	}
	r.setSecrets(ep.Secret, rot.Secret) // the receiver checks each secret separately
	e.emitLead()
	e.settle()
	got := r.requests()
	if len(got) != 1 || !got[0].Verified || strings.Count(got[0].Sig, "v1,") != 2 {
		t.Fatalf("during grace: %+v", got)
	}
	e.Clock.Advance(time.Hour + time.Second)
	r.setSecrets(rot.Secret)
	id2 := ids.New()
	e.emit(e.Tenants[0], events.LeadCreated, id2, lead{ID: id2})
	e.settle()
	got = r.requests()
	if len(got) != 2 || !got[1].Verified || strings.Count(got[1].Sig, "v1,") != 1 {
		t.Fatalf("after grace: %+v", got[1])
	}
	// Immediate revocation.
	zero := 0
	rot2, err := e.S.Rotate(context.Background(), e.Tenants[0], ep.ID, events.RotateInput{GraceSeconds: &zero})
	if err != nil {
		t.Fatal(err)
	}
	r.setSecrets(rot2.Secret)
	id3 := ids.New()
	e.emit(e.Tenants[0], events.LeadCreated, id3, lead{ID: id3})
	e.settle()
	if got = r.requests(); len(got) != 3 || strings.Count(got[2].Sig, "v1,") != 1 || !got[2].Verified {
		t.Fatalf("after revoke: %+v", got[2])
	}
}

// Recover sends at once what waits for a retry, not only what failed or
// was never sent: an event whose first attempt failed (next try in 5 s on
// the schedule) goes out on Recover without the clock moving.
func TestRecoverSendsWhatWaitsForARetry(t *testing.T) {
	e, r := envWithReceiver(t)
	bringUp := r.downUntil(500, 204)
	ep := e.subscribe(r)
	start := e.Clock.Now()
	e.emitLead()
	e.settle()
	if r.count() != 1 {
		t.Fatalf("first attempt: %d requests", r.count())
	}
	bringUp()
	e.settle() // the clock has not moved: the retry still waits
	if r.count() != 1 {
		t.Fatalf("the retry went before its time: %d requests", r.count())
	}
	n, err := e.S.Recover(context.Background(), e.Tenants[0], ep.ID, events.RecoverInput{Since: &start})
	if err != nil || n != 1 {
		t.Fatalf("recover: %d, %v (want 1)", n, err)
	}
	e.settle()
	if r.count() != 2 {
		t.Fatalf("after recover: %d requests, want 2", r.count())
	}
	var got []string
	for _, g := range r.requests() {
		got = append(got, g.ID)
	}
	if got[1] != got[0] {
		t.Fatalf("recover sent %v", got)
	}
}
