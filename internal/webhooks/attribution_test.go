package webhooks_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// attributionOf reads the attribution of the tenant's lead with the
// natural key ref, once the lead has one.
func attributionOf(t testing.TB, e *apptest.Env, tenantID, sourceID, ref string, want func(a *leads.Attribution) bool) *leads.Attribution {
	t.Helper()
	var got *leads.Attribution
	apptest.Eventually(t, 15*time.Second, "attribution of "+ref, func() bool {
		var ids []string
		if err := e.App.DB.SelectContext(context.Background(), &ids, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ?`,
			tenantID, sourceID, ref); err != nil || len(ids) != 1 {
			return false
		}
		ex, err := leads.LeadExtras(context.Background(), e.App.DB, tenantID, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		got = ex.Attribution
		return got != nil && want(got)
	})
	return got
}

// sendSample sends the kinds package's sample body of that name to s, as
// its sender would.
func sendSample(t *testing.T, s source, name string) hookResp {
	t.Helper()
	sample, err := os.ReadFile("kinds/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	h, body := signBody(t, s, "", sample, time.Now())
	return send(t, s.URL, h, body)
}

// sameMap compares a touch with the values it must hold exactly.
func sameMap(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// tiktokLeadBody is a TikTok lead event of lead leadID, made at created,
// from the campaign, ad group and ad given.
func tiktokLeadBody(eventID, leadID string, created time.Time, campaign, adgroup, ad string) []byte {
	ts := strconv.FormatInt(created.Unix(), 10)
	b, _ := json.Marshal(map[string]any{"event_id": eventID, "event": "lead.create", "create_time": ts,
		"advertiser_id": "7012345678901234567", "lead": map[string]any{"lead_id": leadID, "page_id": "7098765432109876543",
			"campaign_id": campaign, "adgroup_id": adgroup, "ad_id": ad, "create_time": ts,
			"answers": []map[string]string{{"field_name": "email", "question": "Email", "value": "ada@example.com"}}}})
	return b
}

// TestAdAttribution: the ad senders' campaign, ad set, ad and form ids
// become the lead's attribution, end to end (webhook in, worker, the
// sender write): the first touch is set once, the last follows the
// newest record (a newer delivery changes the last touch only, an older
// one changes nothing), 40 identical deliveries at once have one effect,
// and Meta's Graph lead (the enrichment's record) adds the campaign to the
// webhook's touch without changing what it said.
func TestAdAttribution(t *testing.T) {
	e := apptest.New(t, "hooks_attribution", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	ctx := context.Background()
	at := func(tm time.Time) string { return tm.UTC().Format(time.RFC3339Nano) }

	t.Run("tiktok", func(t *testing.T) {
		s := newSource(t, e, ten.ID, "tt-attr", kinds.TikTok)
		base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
		deliver := func(eventID string, created time.Time, campaign string) {
			t.Helper()
			h, body := signBody(t, s, eventID, tiktokLeadBody(eventID, "tt-lead-1", created, campaign, "ag-"+campaign, "ad-"+campaign), time.Now())
			if r := send(t, s.URL, h, body); r.Status != 200 || r.Ack.Status != "accepted" {
				t.Fatalf("%s: %d %s", eventID, r.Status, r.Body)
			}
		}
		touch := func(campaign string, created time.Time) map[string]string {
			return map[string]string{"campaign_id": campaign, "adset_id": "ag-" + campaign, "ad_id": "ad-" + campaign,
				"form_id": "7098765432109876543", "source_id": s.ID, "at": at(created)}
		}
		deliver("ev-1", base, "c1")
		a := attributionOf(t, e, ten.ID, s.ID, "tt-lead-1", func(a *leads.Attribution) bool { return len(a.First) > 0 })
		if !sameMap(a.First, touch("c1", base)) || !sameMap(a.Last, touch("c1", base)) {
			t.Fatalf("first delivery: %+v", a)
		}
		// A newer record: the last touch only.
		deliver("ev-2", base.Add(time.Hour), "c2")
		a = attributionOf(t, e, ten.ID, s.ID, "tt-lead-1", func(a *leads.Attribution) bool { return a.Last["campaign_id"] == "c2" })
		if !sameMap(a.First, touch("c1", base)) || !sameMap(a.Last, touch("c2", base.Add(time.Hour))) {
			t.Fatalf("newer delivery: %+v", a)
		}
		// An older record, delivered late: nothing changes (it is still a
		// sighting).
		deliver("ev-3", base.Add(30*time.Minute), "c3")
		apptest.Eventually(t, 15*time.Second, "the late record processed", func() bool {
			return count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ? AND state = 'processed'`, ten.ID, s.ID) == 3
		})
		a = attributionOf(t, e, ten.ID, s.ID, "tt-lead-1", func(*leads.Attribution) bool { return true })
		if !sameMap(a.First, touch("c1", base)) || !sameMap(a.Last, touch("c2", base.Add(time.Hour))) {
			t.Fatalf("older delivery changed the attribution: %+v", a)
		}
		// 40 identical deliveries at once: one accepted, one effect.
		h, body := signBody(t, s, "ev-4", tiktokLeadBody("ev-4", "tt-lead-1", base.Add(2*time.Hour), "c4", "ag-c4", "ad-c4"), time.Now())
		accepted := 0
		for _, r := range sendAtOnce(t, 40, s.URL, h, body) {
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if r.Ack.Status == "accepted" {
				accepted++
			}
		}
		if accepted != 1 {
			t.Fatalf("%d of 40 accepted", accepted)
		}
		a = attributionOf(t, e, ten.ID, s.ID, "tt-lead-1", func(a *leads.Attribution) bool { return a.Last["campaign_id"] == "c4" })
		if !sameMap(a.First, touch("c1", base)) || !sameMap(a.Last, touch("c4", base.Add(2*time.Hour))) {
			t.Fatalf("concurrent deliveries: %+v", a)
		}
		if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); c != 4 {
			t.Fatalf("%d deliveries, want 4", c)
		}
		if c := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); c != 1 {
			t.Fatalf("%d leads, want 1", c)
		}
	})

	t.Run("google-ads", func(t *testing.T) {
		s := newSource(t, e, ten.ID, "gads-attr", kinds.GoogleAds)
		if r := sendSample(t, s, "google_ads_lead.json"); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		const ref = "TeSter-123-ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnopqrstuvwxyz-0123456789-AaBbCcDdEe"
		a := attributionOf(t, e, ten.ID, s.ID, ref, func(a *leads.Attribution) bool { return len(a.Last) > 0 })
		want := map[string]string{"campaign_id": "50000000000", "adset_id": "20000000000", "ad_id": "30000000000",
			"form_id": "40000000000", "gclid": ref, "source_id": s.ID}
		for k, v := range want {
			if a.First[k] != v || a.Last[k] != v {
				t.Fatalf("%s: first %q last %q, want %q (%+v)", k, a.First[k], a.Last[k], v, a)
			}
		}
		if a.Last["at"] == "" || a.First["at"] != a.Last["at"] {
			t.Fatalf("at: %+v", a)
		}
		if count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND attribution LIKE ?`, ten.ID, "%"+s.Secret+"%") != 0 {
			t.Fatal("the google_key reached the attribution")
		}
	})

	t.Run("meta", func(t *testing.T) {
		s := newSource(t, e, ten.ID, "fb-attr", kinds.Meta)
		if r := sendSample(t, s, "meta_leadgen_webhook.json"); r.Status != 200 || len(r.Ack.Items) != 2 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		created := time.Unix(1717171700, 0)
		webhookTouch := map[string]string{"ad_id": "23850000000000001", "adset_id": "23850000000000002", "form_id": "560000000000001",
			"source_id": s.ID, "at": at(created)}
		a := attributionOf(t, e, ten.ID, s.ID, "1234567890123456", func(a *leads.Attribution) bool { return len(a.Last) > 0 })
		if !sameMap(a.First, webhookTouch) || !sameMap(a.Last, webhookTouch) {
			t.Fatalf("webhook: %+v", a)
		}
		// The enrichment's Graph lead of the same lead (its write path,
		// webhooks.Apply): the same touch, told in more detail, adds the
		// campaign; what the webhook said stays.
		graph := []byte(`{"created_time":"2024-05-31T16:08:20+0000","id":"1234567890123456","ad_id":"23850000000000001",
			"adset_id":"23850000000000002","campaign_id":"23850000000000003","campaign_name":"Spring launch",
			"form_id":"560000000000001","field_data":[{"name":"email","values":["joe@example.com"]}]}`)
		for range 2 { // applied twice (a retried enrichment): the same
			if err := db.InTx(ctx, e.App.DB, func(tx *sqlx.Tx) error {
				_, err := webhooks.Apply(ctx, tx, nil, ten.ID, s.Source, graph, time.Now())
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		enriched := map[string]string{"campaign_id": "23850000000000003", "campaign_name": "Spring launch"}
		for k, v := range webhookTouch {
			enriched[k] = v
		}
		a = attributionOf(t, e, ten.ID, s.ID, "1234567890123456", func(*leads.Attribution) bool { return true })
		if !sameMap(a.First, enriched) || !sameMap(a.Last, enriched) {
			t.Fatalf("enriched: %+v", a)
		}
		// The second lead of the sample has its own touch.
		a = attributionOf(t, e, ten.ID, s.ID, "9876543210987654321", func(a *leads.Attribution) bool { return len(a.Last) > 0 })
		if a.Last["at"] != at(time.Unix(1717171710, 0)) || a.Last["ad_id"] != "23850000000000001" {
			t.Fatalf("second lead: %+v", a)
		}
	})
}
