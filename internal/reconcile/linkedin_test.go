package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/live"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/webhooks/kinds"
)

// TestLinkedInLeadSync is LinkedIn end to end against the fake Lead Sync
// API: signed lead notifications make leads that the enrichment task fills
// from GET /leadFormResponses/{id}; the notifications LinkedIn dropped are
// found by reconcile exactly once; a repeated reconcile changes nothing;
// reconciles racing each other over newly dropped leads make each lead
// once. The access token is stored encrypted and never lands in a run.
func TestLinkedInLeadSync(t *testing.T) {
	e := newEnv(t, "rec_linkedin", nil)
	e.startWorker(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	const token = "li-token-5b8f0e2d"
	leads := fakeapi.MakeLeads(60, "li", now.Add(-3*time.Hour), time.Minute)
	api := fakeapi.NewLinkedIn(t, "7234246", leads)
	api.RequireToken(token)
	api.AddOtherFormLeads(fakeapi.MakeLeads(5, "ot", now.Add(-3*time.Hour), time.Minute)...)
	src := e.createSource(t, map[string]any{"slug": "linkedin", "name": "LinkedIn", "kind": "linkedin",
		"reconcile": map[string]any{"base_url": api.URL, "access_token": token, "form_id": "7234246", "lookback_seconds": 14400}})

	var enc []byte
	if err := e.App.DB.GetContext(ctx, &enc, `SELECT reconcile_token_enc FROM sources WHERE tenant_id = ? AND id = ?`, e.ten.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	if len(enc) == 0 || bytes.Contains(enc, []byte(token)) {
		t.Fatalf("access token stored as %q", enc)
	}
	full, err := e.App.Sources.Get(ctx, e.ten.ID, src.ID)
	if err != nil || !reconcile.CanEnrich(full) {
		t.Fatalf("linkedin source with token and base URL cannot enrich (%v)", err)
	}

	// LinkedIn notifies 45 of the 60 leads; each notification is sent twice.
	var reqs []webhookReq
	for i, l := range leads {
		if i%4 == 3 {
			continue
		}
		h, b, err := kinds.Sign(kinds.LinkedIn, nil, src.Secret, "", fakeapi.LinkedInNotification("7234246", l), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, webhookReq{h, b}, webhookReq{h, b})
	}
	postAll(t, src.Hook, reqs)
	e.waitCount(t, "linkedin leads enriched", 45, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ? AND email <> ''`, e.ten.ID, src.ID)
	rows := e.leadRows(t, src.ID)
	if len(rows) != 45 {
		t.Fatalf("%d leads after the notifications, want 45", len(rows))
	}
	for i, l := range leads {
		r, ok := rows[l.ID]
		if (i%4 == 3) == ok {
			t.Fatalf("lead %d (%s) present %v", i, l.ID, ok)
		}
		if ok && (r.Email != l.Email || r.Name != l.Name || r.Phone != l.Phone || r.Company != l.Company) {
			t.Fatalf("lead %s: %+v, want %+v", l.ID, r, l)
		}
	}
	var attr string
	if err := e.App.DB.GetContext(ctx, &attr, `SELECT attribution FROM leads WHERE tenant_id = ? AND id = ?`, e.ten.ID, rows[leads[0].ID].ID); err != nil {
		t.Fatal(err)
	}
	var a struct {
		First, Last map[string]string
	}
	if err := json.Unmarshal([]byte(attr), &a); err != nil || a.Last["campaign_id"] != fakeapi.LinkedInCampaign ||
		a.Last["ad_id"] != fakeapi.LinkedInCreative || a.Last["form_id"] != "7234246" || a.First["form_id"] != "7234246" {
		t.Fatalf("attribution %s (%v)", attr, err)
	}

	// An open inbox of the tenant is told of each lead reconcile makes,
	// as of a webhook's (the live stream, docs/NOTIFICATIONS.md).
	sub, _, _, err := e.App.LiveHub.Subscribe(ctx, e.ten.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.App.LiveHub.Unsubscribe(sub)
	// liveLeads waits up to 10 s for want new leads on the stream, then
	// 1 s more for any beyond them.
	liveLeads := func(want int) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		deadline := time.After(10 * time.Second)
		for len(got) < want {
			select {
			case ev := <-sub.C:
				if ev.Type == live.Created {
					got[ev.LeadID] = true
				}
			case <-deadline:
				t.Fatalf("the live stream told of %d new leads, want %d", len(got), want)
			}
		}
		for extra := time.After(time.Second); ; {
			select {
			case ev := <-sub.C:
				if ev.Type == live.Created {
					t.Fatalf("the live stream told of a lead beyond the %d: %+v", want, ev)
				}
			case <-extra:
				return got
			}
		}
	}

	// Reconcile finds the 15 dropped leads, once.
	// The worker runs what "Reconcile now" queues (TestReconcileWebhookLossRepaired does the same).
	first := e.waitRun(t, src.ID, e.trigger(t, src.ID), 60*time.Second)
	if first.State != reconcile.StateSucceeded || first.Records != 60 || first.New != 15 || first.Known != 45 || first.Errors != 0 {
		t.Fatalf("first run: %+v", first)
	}
	rows = e.leadRows(t, src.ID)
	if len(rows) != 60 {
		t.Fatalf("%d leads after reconcile, want 60", len(rows))
	}
	for _, l := range leads {
		if r := rows[l.ID]; r.Email != l.Email || r.Name != l.Name || r.Company != l.Company {
			t.Fatalf("lead %s: %+v, want %+v", l.ID, r, l)
		}
	}
	if touched := e.reconcileEvents(t, src.ID); len(touched) != 15 {
		t.Fatalf("%d leads with reconcile events, want 15", len(touched))
	}
	told := liveLeads(15)
	for i, l := range leads {
		if told[rows[l.ID].ID] != (i%4 == 3) {
			t.Fatalf("live stream: lead %d (%s) told %v", i, l.ID, told[rows[l.ID].ID])
		}
	}

	// Again: nothing new, nothing changed.
	second := e.waitRun(t, src.ID, e.trigger(t, src.ID), 60*time.Second)
	if second.ID == first.ID || second.State != reconcile.StateSucceeded || second.New != 0 || second.Known != 60 || second.Errors != 0 {
		t.Fatalf("second run: %+v", second)
	}
	after := e.leadRows(t, src.ID)
	for ref, r := range rows {
		if after[ref] != r {
			t.Fatalf("second reconcile changed lead %s: %+v → %+v", ref, r, after[ref])
		}
	}
	if touched := e.reconcileEvents(t, src.ID); len(touched) != 15 {
		t.Fatalf("%d leads with reconcile events after the second run, want 15", len(touched))
	}
	liveLeads(0)

	// Ten more leads whose notifications never came; six reconciles race.
	more := fakeapi.MakeLeads(10, "lm", now.Add(-90*time.Minute), time.Minute)
	api.Add(more...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	newSum := 0
	seen := map[string]bool{}
	for range 6 {
		wg.Go(func() {
			id, err := e.svc.Trigger(ctx, e.ten.ID, src.ID)
			if err == nil {
				var r reconcile.Run
				if r, err = e.svc.RunNow(ctx, e.ten.ID, id); err == nil {
					mu.Lock()
					if !seen[r.ID] && r.State != reconcile.StateRunning {
						seen[r.ID] = true
						newSum += r.New
					}
					mu.Unlock()
				}
			}
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("concurrent reconciles: %v", failures)
	}
	for _, r := range e.runs(t, src.ID) {
		if r.State == reconcile.StateRunning {
			if _, err := e.svc.RunNow(ctx, e.ten.ID, r.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := e.count(t, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, src.ID); n != 70 {
		t.Fatalf("%d leads after concurrent reconciles, want 70", n)
	}
	touched := e.reconcileEvents(t, src.ID)
	rows = e.leadRows(t, src.ID)
	for _, l := range more {
		if touched[rows[l.ID].ID] != 1 || rows[l.ID].Email != l.Email {
			t.Fatalf("lead %s: %d reconcile events, row %+v", l.ID, touched[rows[l.ID].ID], rows[l.ID])
		}
	}
	if len(touched) != 25 {
		t.Fatalf("%d leads with reconcile events, want 25", len(touched))
	}
	if newSum > 10 {
		t.Fatalf("runs counted %d new leads, want at most 10", newSum)
	}
	var lastErrors []string
	if err := e.App.DB.SelectContext(ctx, &lastErrors, `SELECT COALESCE(last_error, '') FROM reconcile_runs WHERE tenant_id = ? AND source_id = ?`,
		e.ten.ID, src.ID); err != nil {
		t.Fatal(err)
	}
	for _, le := range lastErrors {
		if strings.Contains(le, token) {
			t.Fatalf("a run records the token: %s", le)
		}
	}

	// Enrichment errors: an unknown response is not retried, an outage is.
	if _, err := e.svc.Enrich(ctx, e.ten.ID, src.ID, "no-such-response"); !errors.Is(err, asynq.SkipRetry) || strings.Contains(err.Error(), token) {
		t.Fatalf("unknown response: %v", err)
	}
	api.FailNext(503, 503, 503, 503)
	if _, err := e.svc.Enrich(ctx, e.ten.ID, src.ID, leads[3].ID); err == nil || errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("outage: %v", err)
	}
}
