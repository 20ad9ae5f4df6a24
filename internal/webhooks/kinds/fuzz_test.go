package kinds

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzSecrets are fixed so the seed corpus can hold validly signed requests.
var fuzzSecrets = map[string]string{
	Standard: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Timestamped: "whsec_fuzz", Typeform: "fuzz",
	Meta: "fuzz", GoogleAds: "fuzz-google-key", Generic: "fuzz",
	LinkedIn: "fuzz", HubSpot: "fuzz", Webflow: "fuzz", Tally: "fuzz", TikTok: "fuzz", Token: "fuzz-token-secret",
}

// fuzzHeaders puts the fuzzed values into every header any kind reads.
func fuzzHeaders(sig, ts, id string) http.Header {
	h := http.Header{}
	for _, name := range []string{headerWebhookSignature, "Webhook-Signature", "Stripe-Signature", "Calendly-Webhook-Signature",
		headerTypeformSignature, headerHubSignature256, "X-Signature", headerLinkedInSignature, headerHubSpotSignatureV3,
		headerWebflowSignature, headerTallySignature, headerTikTokSignature, "Authorization"} {
		h[http.CanonicalHeaderKey(name)] = []string{sig}
	}
	h[http.CanonicalHeaderKey(headerWebhookTimestamp)] = []string{ts}
	h[http.CanonicalHeaderKey(headerHubSpotTimestamp)] = []string{ts}
	h[http.CanonicalHeaderKey(headerWebflowTimestamp)] = []string{ts}
	h[http.CanonicalHeaderKey(headerWebhookID)] = []string{id}
	return h
}

func fuzzKind(t *testing.T, i uint8) (string, Kind) {
	names := Names()
	name := names[int(i)%len(names)]
	return name, mustKind(t, name, SampleConfig(name))
}

// addSignedSeeds adds a validly signed sample of every kind, with each kind's
// signature value in the sig slot.
func addSignedSeeds(f *testing.F) {
	for i, name := range Names() {
		body := SampleBody(name, "dlv-1", "ref-1", sampleLead, testNow)
		h, signed, err := Sign(name, SampleConfig(name), fuzzSecrets[name], "dlv-1", body, testNow)
		if err != nil {
			f.Fatal(err)
		}
		var sig string
		for k, v := range h {
			if k != "Content-Type" && k != "Webhook-Id" && k != "Webhook-Timestamp" {
				sig = v[0]
			}
		}
		f.Add(uint8(i), sig, h.Get(headerWebhookTimestamp), "dlv-1", signed)
	}
	f.Add(uint8(0), "v1,", "1741964966", "", []byte(`{}`))
	f.Add(uint8(1), "t=1741964966,t=1,v1=", "", "", []byte(`{"id":1}`))
	f.Add(uint8(4), "", "", "", []byte(`{"google_key":1}`))
	f.Add(uint8(3), "sha256=zz", "", "", []byte(`{"entry":[{"changes":[{"value":{"leadgen_id":1e999}}]}]}`))
}

func FuzzVerify(f *testing.F) {
	addSignedSeeds(f)
	f.Fuzz(func(t *testing.T, kindIdx uint8, sig, ts, id string, body []byte) {
		name, k := fuzzKind(t, kindIdx)
		secret := fuzzSecrets[name]
		err := VerifyRequest(k, sampleRequest(fuzzHeaders(sig, ts, id)), body, []string{"", "other", secret}, testNow)
		if err != nil && !errors.Is(err, ErrSignature) {
			t.Fatalf("%s: error %v does not wrap ErrSignature", name, err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("%s: error shows the secret: %v", name, err)
		}
		// Whatever passed must have passed on one of the given secrets.
		if err == nil && VerifyRequest(k, sampleRequest(fuzzHeaders(sig, ts, id)), body, []string{"x" + secret}, testNow) == nil {
			t.Fatalf("%s: verified with a secret not given", name)
		}
	})
}

func FuzzParseMap(f *testing.F) {
	addSignedSeeds(f)
	for _, file := range []string{"standard_contact_created.json", "stripe_customer_created.json", "calendly_invitee_created.json",
		"typeform_form_response.json", "meta_leadgen_webhook.json", "meta_graph_lead.json", "google_ads_lead.json", "generic_lead.json"} {
		f.Add(uint8(0), "", "", "msg_1", readFixture(f, file))
	}
	f.Add(uint8(0), "", "", "msg_1", []byte(`{"a":"\ud800","b":1e400}`))
	f.Fuzz(func(t *testing.T, kindIdx uint8, _, _ string, id string, body []byte) {
		name, k := fuzzKind(t, kindIdx)
		recs, err := k.Parse(fuzzHeaders("", "", id), body)
		if err != nil {
			if !errors.Is(err, ErrUnparseable) && !errors.Is(err, ErrNoDeliveryID) {
				t.Fatalf("%s: Parse error %v wraps no sentinel", name, err)
			}
			return
		}
		if len(recs) == 0 {
			t.Fatalf("%s: no records and no error", name)
		}
		for _, r := range recs {
			if r.DeliveryID == "" || len(r.DeliveryID) > MaxIDLen || !utf8.ValidString(r.DeliveryID) {
				t.Fatalf("%s: bad delivery id %q", name, r.DeliveryID)
			}
			if !json.Valid(r.Raw) || storable(r.Raw) != nil || !utf8.Valid(r.Raw) {
				t.Fatalf("%s: record not storable: %s", name, r.Raw)
			}
			if name == GoogleAds && decodeObject(r.Raw)[googleKeyMember] != nil {
				t.Fatalf("record keeps google_key: %s", r.Raw)
			}
			checkMap(t, name, k, r.Raw)
		}
	})
}

// FuzzMap feeds arbitrary bytes to Map, as a worker or reconcile might.
func FuzzMap(f *testing.F) {
	for _, file := range []string{"meta_graph_lead.json", "google_ads_lead.json", "typeform_form_response.json"} {
		f.Add(uint8(3), readFixture(f, file))
	}
	f.Add(uint8(3), []byte("{\"id\":\"1\",\"x\":\"\\udc00\xff\"}"))
	f.Fuzz(func(t *testing.T, kindIdx uint8, raw []byte) {
		name, k := fuzzKind(t, kindIdx)
		checkMap(t, name, k, raw)
	})
}

func checkMap(t *testing.T, name string, k Kind, raw []byte) {
	t.Helper()
	lead, err := k.Map(raw)
	if err != nil {
		if !errors.Is(err, ErrUnparseable) && !errors.Is(err, ErrNoNaturalKey) {
			t.Fatalf("%s: Map error %v wraps no sentinel", name, err)
		}
		return
	}
	if lead.SourceRef == "" || len(lead.SourceRef) > MaxIDLen || !utf8.ValidString(lead.SourceRef) {
		t.Fatalf("%s: bad source ref %q", name, lead.SourceRef)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, lead.Payload) != nil || !bytes.Equal(buf.Bytes(), lead.Payload) || storable(lead.Payload) != nil || !utf8.Valid(lead.Payload) {
		t.Fatalf("%s: payload not compact storable JSON: %q", name, lead.Payload)
	}
	if name == GoogleAds && decodeObject(lead.Payload)[googleKeyMember] != nil {
		t.Fatalf("payload keeps google_key")
	}
	if lead.CreatedAt != nil && lead.CreatedAt.Location() != time.UTC {
		t.Fatalf("%s: CreatedAt not UTC", name)
	}
}

func FuzzGenericConfig(f *testing.F) {
	f.Add([]byte(SampleConfig(Generic)), []byte(`{"event":{"id":"e"},"lead":{"id":1}}`))
	f.Add([]byte(`{"natural_key_path":"$.a[0]['b'][\"c\"]"}`), []byte(`{"a":[{"b":{"c":"x"}}]}`))
	f.Fuzz(func(t *testing.T, config, body []byte) {
		problems := ValidateConfig(Generic, config)
		k, err := New(Generic, config)
		if (err == nil) != (len(problems) == 0) {
			t.Fatalf("New err = %v but problems = %v", err, problems)
		}
		if err != nil {
			return
		}
		if recs, err := k.Parse(nil, body); err == nil {
			checkMap(t, Generic, k, recs[0].Raw)
		}
	})
}

// FuzzDecodeObject: the one-pass splitter agrees with encoding/json on
// every input, nested members included.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":"x","a":"y"}`, `{"k\u00e9y":{"b":[1,{"c":"}"}]}, "d" : null }`,
		`{"a":"\"}"}`, `{"a":1`, `{"a":1}x`, `[1]`, `{"\ud800":true,"x":"\xff"}`, `{"a" : { "b" : "c\\" } , "e":-1.5e3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := decodeObject(raw)
		var want map[string]json.RawMessage
		err := json.Unmarshal(raw, &want)
		trimmed := bytes.TrimLeft(raw, " \t\r\n")
		if err != nil || len(trimmed) == 0 || trimmed[0] != '{' {
			if got != nil {
				t.Fatalf("decodeObject(%q) = %v, want nil", raw, got)
			}
			return
		}
		if got == nil || len(got) != len(want) {
			t.Fatalf("decodeObject(%q) = %v, want %v", raw, got, want)
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("decodeObject(%q)[%q] = %q, want %q", raw, k, got[k], v)
			}
			var sub map[string]json.RawMessage
			if len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &sub) == nil {
				if o := got.object(k); len(o) != len(sub) {
					t.Fatalf("object(%q) of %q = %v, want %v", k, raw, o, sub)
				}
			}
			var s string
			if json.Unmarshal(v, &s) == nil && got.scalar(k) != strings.TrimSpace(s) {
				t.Fatalf("scalar(%q) of %q = %q, want %q", k, raw, got.scalar(k), s)
			}
		}
	})
}
