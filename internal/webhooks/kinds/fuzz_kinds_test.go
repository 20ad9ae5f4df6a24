package kinds

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// One signature fuzzer and one mapping fuzzer per kind, so each kind gets
// the fuzzing time of its own (FuzzVerify/FuzzParseMap share theirs among
// the kinds). Corpora: testdata/fuzz/Fuzz<Name>/.

func FuzzVerifyStandard(f *testing.F)    { fuzzVerifyKind(f, Standard) }
func FuzzVerifyTimestamped(f *testing.F) { fuzzVerifyKind(f, Timestamped) }
func FuzzVerifyTypeform(f *testing.F)    { fuzzVerifyKind(f, Typeform) }
func FuzzVerifyMeta(f *testing.F)        { fuzzVerifyKind(f, Meta) }
func FuzzVerifyGoogleAds(f *testing.F)   { fuzzVerifyKind(f, GoogleAds) }
func FuzzVerifyGeneric(f *testing.F)     { fuzzVerifyKind(f, Generic) }

func FuzzMapStandard(f *testing.F) { fuzzMapKind(f, Standard, "standard_contact_created.json") }
func FuzzMapTimestamped(f *testing.F) {
	fuzzMapKind(f, Timestamped, "stripe_customer_created.json", "calendly_invitee_created.json")
}
func FuzzMapTypeform(f *testing.F) { fuzzMapKind(f, Typeform, "typeform_form_response.json") }
func FuzzMapMeta(f *testing.F) {
	fuzzMapKind(f, Meta, "meta_leadgen_webhook.json", "meta_graph_lead.json")
}
func FuzzMapGoogleAds(f *testing.F) { fuzzMapKind(f, GoogleAds, "google_ads_lead.json") }
func FuzzMapGeneric(f *testing.F)   { fuzzMapKind(f, Generic, "generic_lead.json") }

// fuzzVerifyKind: arbitrary signature, timestamp and id header values and
// bodies never verify by accident, fail only with ErrSignature and never
// echo the secret; and what Sign produces for a body verifies, while the
// same headers with one body byte changed do not (google-ads excepted: its
// "signature" is a key inside the body, covering nothing else).
func fuzzVerifyKind(f *testing.F, name string) {
	secret := fuzzSecrets[name]
	body := SampleBody(name, "dlv-1", "ref-1", sampleLead, testNow)
	h, signed, err := Sign(name, SampleConfig(name), secret, "dlv-1", body, testNow)
	if err != nil {
		f.Fatal(err)
	}
	for k, v := range h {
		if k != "Content-Type" && k != "Webhook-Id" && k != "Webhook-Timestamp" {
			f.Add(v[0], h.Get(headerWebhookTimestamp), "dlv-1", signed)
		}
	}
	f.Add("", "", "", []byte(`{}`))
	f.Add("t=1741964966,v1=00,v1=", "1741964966", "msg", []byte(`{"id":"x"}`))
	f.Add("v1,AAAA v1,", "1741964966", "msg", []byte(`{"google_key":"fuzz-google-key"}`))
	f.Add("sha256=", "-1", "\x00", []byte(`[`))
	f.Fuzz(func(t *testing.T, sig, ts, id string, body []byte) {
		k := mustKind(t, name, SampleConfig(name))
		err := k.Verify(fuzzHeaders(sig, ts, id), body, []string{"", "other", secret}, testNow)
		if err != nil && !errors.Is(err, ErrSignature) {
			t.Fatalf("error %v does not wrap ErrSignature", err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("error shows the secret: %v", err)
		}
		if err == nil && k.Verify(fuzzHeaders(sig, ts, id), body, []string{"x" + secret}, testNow) == nil {
			t.Fatalf("verified with a secret not given")
		}
		if id == "" || !json.Valid(body) || len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' {
			return
		}
		h, b, err := Sign(name, SampleConfig(name), secret, id, body, testNow)
		if err != nil {
			return // a body or id the sender side cannot sign (e.g. a header value with a newline)
		}
		if err := k.Verify(h, b, []string{"old", secret}, testNow); err != nil {
			if strings.ContainsAny(id, "\r\n\x00") {
				return
			}
			t.Fatalf("a signed request does not verify: %v\nheaders %v\nbody %q", err, h, b)
		}
		if name == GoogleAds || len(b) == 0 {
			return
		}
		changed := append([]byte(nil), b...)
		changed[len(changed)/2] ^= 0x01
		if k.Verify(h, changed, []string{secret}, testNow) == nil {
			t.Fatalf("a changed body still verifies: %q", changed)
		}
	})
}

// fuzzMapKind: Parse then Map never panic, fail only with the package's
// sentinels, and give storable records and leads (checkMap); mapping the
// same record twice gives the same lead.
func fuzzMapKind(f *testing.F, name string, fixtures ...string) {
	for _, file := range fixtures {
		f.Add("msg_1", readFixture(f, file))
	}
	f.Add("msg_1", SampleBody(name, "dlv-1", "ref-1", sampleLead, testNow))
	f.Add("", []byte(`{"data":{"id":"\ud800"},"id":1e400}`))
	f.Add("x", []byte(`{"entry":[{"changes":[{"value":{"leadgen_id":"1","created_time":-1}}]}],"form_response":{"token":"t"}}`))
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		k := mustKind(t, name, SampleConfig(name))
		recs, err := k.Parse(fuzzHeaders("", "", id), body)
		if err != nil {
			if !errors.Is(err, ErrUnparseable) && !errors.Is(err, ErrNoDeliveryID) {
				t.Fatalf("Parse error %v wraps no sentinel", err)
			}
			checkMap(t, name, k, body) // the worker may still be handed such bytes
			return
		}
		for _, r := range recs {
			checkMap(t, name, k, r.Raw)
			a, errA := k.Map(r.Raw)
			b, errB := k.Map(r.Raw)
			if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
				t.Fatalf("Map is not deterministic on %q", r.Raw)
			}
		}
	})
}

// FuzzJSONPath checks the generic kind's JSON-path evaluator against
// encoding/json: a path that parses finds exactly what walking the decoded
// document finds.
func FuzzJSONPath(f *testing.F) {
	f.Add("$.lead.id", []byte(`{"lead":{"id":"L1"}}`))
	f.Add(`$.a[0]['b']["c"]`, []byte(`{"a":[{"b":{"c":[1,2]}}]}`))
	f.Add("$.a[10]", []byte(`{"a":[0,1]}`))
	f.Add("$", []byte(` {"x" : 1} `))
	f.Add("$.k\u00e9y.x", []byte(`{"k\u00e9y":{"x":null},"k\u00e9y":{"x":true}}`))
	f.Add("$[0].a", []byte(`[{"a":"\"}"}]`))
	f.Add("$.a[-1]", []byte(`{"a":[1]}`))
	f.Add("$.a[01]", []byte(`{"a":[1,2]}`))
	f.Fuzz(func(t *testing.T, path string, raw []byte) {
		p, err := parseJSONPath(path)
		if err != nil {
			return
		}
		if p.String() != path {
			t.Fatalf("String() = %q, want %q", p.String(), path)
		}
		got := p.lookup(raw)
		if got != nil && !json.Valid(got) {
			t.Fatalf("lookup(%q) on %q gave invalid JSON %q", path, raw, got)
		}
		if !json.Valid(raw) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) != nil {
			return
		}
		want, found := doc, true
		for _, s := range p.segs {
			if s.index < 0 {
				m, ok := want.(map[string]any)
				if !ok {
					found = false
					break
				}
				if want, ok = m[s.key]; !ok {
					found = false
					break
				}
				continue
			}
			a, ok := want.([]any)
			if !ok || s.index >= len(a) {
				found = false
				break
			}
			want = a[s.index]
		}
		if found != (got != nil) {
			t.Fatalf("lookup(%q) on %q = %q, want found=%v (%v)", path, raw, got, found, want)
		}
		if !found {
			return
		}
		dec = json.NewDecoder(bytes.NewReader(got))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || !reflect.DeepEqual(v, want) {
			t.Fatalf("lookup(%q) on %q = %q, want %v", path, raw, got, want)
		}
	})
}
