package kinds

import (
	"net/http"
	"testing"
)

// mapSample parses a vendor's sample body with the kind and maps each of
// its records.
func mapSample(t *testing.T, kind string, file string) []Lead {
	t.Helper()
	cfg := SampleConfig(kind)
	if kind == Token {
		cfg = nil // a Zapier source as made without a config: fields by name, the email as the key
	}
	k, err := New(kind, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	recs, err := k.Parse(h, readFixture(t, file))
	if err != nil {
		t.Fatalf("%s: parse: %v", file, err)
	}
	var out []Lead
	for _, r := range recs {
		l, err := k.Map(r.Raw)
		if err != nil {
			t.Fatalf("%s: map %s: %v", file, r.DeliveryID, err)
		}
		out = append(out, l)
	}
	return out
}

// TestNewKindVendorSamples: each new kind's sample, shaped as its
// vendor's page shows it (testdata, pages cited in docs/SENDERS.md),
// maps to the right natural key, email, name, phone and company.
func TestNewKindVendorSamples(t *testing.T) {
	cases := []struct {
		kind, file                       string
		ref, email, name, phone, company string
	}{
		{Webflow, "webflow_form_submission.json", "6321ca84df3949bfc6752327", "zaphod@heartofgold.ai", "Zaphod Beeblebrox", "15550000000", "Heart of Gold"},
		{Tally, "tally_form_response.json", "2wgx4n", "grace@example.com", "Grace Hopper", "+15551234567", "Navy Labs"},
		{TikTok, "tiktok_lead.json", "7309876543210987654", "katherine@example.com", "Katherine Johnson", "+17575550123", "NACA"},
		{Token, "zapier_token_lead.json", "dorothy@example.com", "dorothy@example.com", "Dorothy Vaughan", "+17575550188", "West Area Computing"},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			ls := mapSample(t, c.kind, c.file)
			if len(ls) != 1 {
				t.Fatalf("%d records", len(ls))
			}
			l := ls[0]
			if l.SourceRef != c.ref || l.Email != c.email || l.Name != c.name || l.Phone != c.phone || l.Company != c.company {
				t.Fatalf("got ref %q email %q name %q phone %q company %q", l.SourceRef, l.Email, l.Name, l.Phone, l.Company)
			}
		})
	}

	// HubSpot: one POST of six events, each its own record of contact
	// 65059681032; the name comes in parts.
	t.Run(HubSpot, func(t *testing.T) {
		ls := mapSample(t, HubSpot, "hubspot_contact_events.json")
		if len(ls) != 6 {
			t.Fatalf("%d records", len(ls))
		}
		var got Lead
		for _, l := range ls {
			if l.SourceRef != "65059681032" {
				t.Fatalf("ref %q", l.SourceRef)
			}
			if l.Name != "" {
				t.Fatalf("a property change set the whole name: %+v", l)
			}
			got.Email = firstNonEmpty(got.Email, l.Email)
			got.FirstName = firstNonEmpty(got.FirstName, l.FirstName)
			got.LastName = firstNonEmpty(got.LastName, l.LastName)
			got.Phone = firstNonEmpty(got.Phone, l.Phone)
			got.Company = firstNonEmpty(got.Company, l.Company)
		}
		if got.Email != "ada@example.com" || got.FirstName != "Ada" || got.LastName != "Lovelace" || got.Phone != "+44 20 7946 0018" || got.Company != "Analytical Engines" {
			t.Fatalf("%+v", got)
		}
	})
}

// TestAdTouches: the ad senders' ids, as each vendor names them, in the
// touch keys every lead shares; a sender without ad ids has no touch.
func TestAdTouches(t *testing.T) {
	cases := []struct {
		kind, file string
		want       Touch
	}{
		{GoogleAds, "google_ads_lead.json", Touch{"campaign_id": "50000000000", "adset_id": "20000000000", "ad_id": "30000000000",
			"form_id": "40000000000", "gclid": "TeSter-123-ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnopqrstuvwxyz-0123456789-AaBbCcDdEe"}},
		{Meta, "meta_leadgen_webhook.json", Touch{"ad_id": "23850000000000001", "adset_id": "23850000000000002", "form_id": "560000000000001"}},
		{TikTok, "tiktok_lead.json", Touch{"campaign_id": "1760000000000001", "adset_id": "1760000000000002", "ad_id": "1760000000000003",
			"form_id": "7098765432109876543"}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			for _, l := range mapSample(t, c.kind, c.file) {
				if l.Touch == nil || l.Touch.First != nil || len(l.Touch.Last) != len(c.want) {
					t.Fatalf("touch %+v", l.Touch)
				}
				for k, v := range c.want {
					if l.Touch.Last[k] != v {
						t.Fatalf("%s = %q, want %q", k, l.Touch.Last[k], v)
					}
				}
			}
		})
	}
	// The Graph lead the enrichment fetches, with the ad fields a token
	// that may read ads gets.
	l, err := metaKind{}.Map([]byte(`{"id":"1","created_time":"2024-06-01T12:34:56+0000","ad_id":"a","adset_id":"s","campaign_id":"c",
		"campaign_name":"Spring","form_id":"f","field_data":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if l.Touch == nil || l.Touch.Last["campaign_id"] != "c" || l.Touch.Last["campaign_name"] != "Spring" || l.Touch.Last["adset_id"] != "s" ||
		l.Touch.Last["ad_id"] != "a" || l.Touch.Last["form_id"] != "f" {
		t.Fatalf("graph lead touch %+v", l.Touch)
	}
	// The Graph lead of the default fields only: no ad, no touch.
	l, _ = metaKind{}.Map(readFixture(t, "meta_graph_lead.json"))
	if l.Touch == nil || l.Touch.Last["ad_id"] != "23850000000000001" {
		t.Fatalf("graph sample touch %+v", l.Touch)
	}
	for _, kind := range []string{Tally, Webflow} {
		l := mapSample(t, kind, map[string]string{Tally: "tally_form_response.json", Webflow: "webflow_form_submission.json"}[kind])[0]
		if l.Touch != nil {
			t.Fatalf("%s has a touch: %+v", kind, l.Touch)
		}
	}
}
