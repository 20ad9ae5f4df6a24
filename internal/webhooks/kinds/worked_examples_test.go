package kinds

import (
	"net/http"
	"testing"
	"time"
)

// The worked signature examples of docs/SENDERS.md ("Worked signature
// examples"), each checked here as written there: the values were also
// computed apart with openssl (the commands are in the docs), so they
// follow the vendors' pages, not only this package.
const (
	workedSecret = "s3cr3t-for-the-docs"
	workedURI    = "https://crm.example.com/hooks/acme/hubspot?portal=62515"
)

var workedNow = time.Unix(1764547200, 0) // 2025-12-01T00:00:00Z

var workedExamples = []struct {
	kind    string
	body    string
	headers map[string]string
}{
	{LinkedIn, `{"leadGenFormResponse":"urn:li:leadGenFormResponse:abc"}`,
		map[string]string{"X-LI-Signature": "4d0ac4ccd3bffcf26b056de1c1b362fd4fa2b79dd935fbeeaf8c6e66dc9d0560"}},
	{HubSpot, `[{"eventId":1,"objectId":501,"subscriptionType":"contact.propertyChange","propertyName":"firstname","propertyValue":"Ada"}]`,
		map[string]string{"X-HubSpot-Request-Timestamp": "1764547200000", "X-HubSpot-Signature-v3": "vXHAMx/ffJ7Mog/b4Mh3tmYWdaWk1BDTcQF4hN602vs="}},
	{Webflow, `{"triggerType":"form_submission","payload":{"id":"6321ca84df3949bfc6752327","data":{"email":"ada@example.com"}}}`,
		map[string]string{"x-webflow-timestamp": "1764547200000", "x-webflow-signature": "526bae7fa6d961637fb586d77e4c53f75b192b67b7fa654bffd99b91346785f3"}},
	{Tally, `{"eventId":"e1","eventType":"FORM_RESPONSE","data":{"responseId":"2wgx4n","fields":[]}}`,
		map[string]string{"Tally-Signature": "la80H/MSVmVAjLyhsRILNkPvJ/S8LcXo6vRMcYgXP44="}},
	{TikTok, `{"event_id":"ev1","event":"lead.create","lead":{"lead_id":"7309876543210987654","answers":[]}}`,
		map[string]string{"TikTok-Signature": "t=1764547200,s=5f25c138b4aa1fae104c10946ddeed2b2aa54e7433cb56a69c5ac7abe798ec9f"}},
	{Token, `{"email":"ada@example.com","name":"Ada Lovelace"}`,
		map[string]string{"Authorization": "Bearer s3cr3t-for-the-docs"}},
}

func TestWorkedSignatureExamples(t *testing.T) {
	for _, ex := range workedExamples {
		t.Run(ex.kind, func(t *testing.T) {
			k, err := New(ex.kind, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			for name, v := range ex.headers {
				h.Set(name, v)
			}
			r := Request{Header: h, Method: http.MethodPost, URI: workedURI}
			if err := VerifyRequest(k, r, []byte(ex.body), []string{workedSecret}, workedNow); err != nil {
				t.Fatalf("the documented example does not verify: %v", err)
			}
			// And the signer makes exactly the documented headers.
			signed, _, err := SignTo(ex.kind, nil, workedSecret, "", workedURI, []byte(ex.body), workedNow)
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range ex.headers {
				if got := signed.Get(name); got != v {
					t.Fatalf("%s: signer gives %q, docs say %q", name, got, v)
				}
			}
			// One byte changed: refused.
			bad := []byte(ex.body)
			bad[len(bad)-2] ^= 1
			if ex.kind != Token && VerifyRequest(k, r, bad, []string{workedSecret}, workedNow) == nil {
				t.Fatal("a changed body verified")
			}
		})
	}
	got, ok := LinkedInChallenge("f3a4b5c6-0000-4000-8000-000000000001", []string{workedSecret})
	if want := `{"challengeCode":"f3a4b5c6-0000-4000-8000-000000000001","challengeResponse":"85041c2c6b282a072ae765f31ac278c4549c89d7627a8904403e4516f25bae52"}`; !ok || string(got) != want {
		t.Fatalf("challenge %s", got)
	}
}
