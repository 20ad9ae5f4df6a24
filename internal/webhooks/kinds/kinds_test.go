package kinds

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

var sampleLead = Lead{Email: "ada@example.com", Name: "Ada Lovelace", Phone: "+44 20 7946 0018", Company: "Analytical Engines"}

func mustKind(t testing.TB, name string, config json.RawMessage) Kind {
	t.Helper()
	k, err := New(name, config)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return k
}

func mustSecret(t testing.TB, name string) string {
	t.Helper()
	s, err := GenerateSecret(name)
	if err != nil {
		t.Fatalf("GenerateSecret(%q): %v", name, err)
	}
	return s
}

// signedSample returns a sample request of the kind signed at testNow.
func signedSample(t testing.TB, name, secret, deliveryID, sourceRef string, f Lead) (http.Header, []byte) {
	t.Helper()
	body := SampleBody(name, deliveryID, sourceRef, f, testNow)
	if !json.Valid(body) {
		t.Fatalf("SampleBody(%q) is not JSON: %s", name, body)
	}
	h, signed, err := Sign(name, SampleConfig(name), secret, deliveryID, body, testNow)
	if err != nil {
		t.Fatalf("Sign(%q): %v", name, err)
	}
	return h, signed
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func timePtr(t time.Time) *time.Time { return &t }

// sampleRequest is a POST to SampleURI with the headers (what Sign signs).
func sampleRequest(h http.Header) Request {
	return Request{Header: h, Method: http.MethodPost, URI: SampleURI}
}

// checkLead compares every field but Payload, and checks Payload is compact,
// storable JSON.
func checkLead(t *testing.T, got, want Lead) {
	t.Helper()
	if got.SourceRef != want.SourceRef || got.Email != want.Email || got.Name != want.Name ||
		got.Phone != want.Phone || got.Company != want.Company || !slices.Equal(got.Tags, want.Tags) {
		t.Errorf("lead = %+v\nwant   %+v", got, want)
	}
	switch {
	case (got.CreatedAt == nil) != (want.CreatedAt == nil):
		t.Errorf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt)
	case got.CreatedAt != nil && (!got.CreatedAt.Equal(*want.CreatedAt) || got.CreatedAt.Location() != time.UTC):
		t.Errorf("CreatedAt = %v, want %v in UTC", got.CreatedAt, want.CreatedAt)
	}
	checkStorable(t, got.Payload)
}

func checkStorable(t testing.TB, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("payload is not JSON: %v: %s", err, b)
	}
	if !bytes.Equal(buf.Bytes(), b) {
		t.Errorf("payload is not compact: %s", b)
	}
	if err := storable(b); err != nil {
		t.Errorf("payload not storable: %v", err)
	}
}

func TestVerify(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			k := mustKind(t, name, SampleConfig(name))
			secret, other := mustSecret(t, name), mustSecret(t, name)
			h, body := signedSample(t, name, secret, "dlv-1", "ref-1", sampleLead)

			verify := func(t *testing.T, h http.Header, body []byte, secrets []string, now time.Time) error {
				t.Helper()
				err := VerifyRequest(k, sampleRequest(h), body, secrets, now)
				if err != nil && !errors.Is(err, ErrSignature) {
					t.Errorf("error %v does not wrap ErrSignature", err)
				}
				if err != nil && strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows the secret", err)
				}
				return err
			}
			if err := verify(t, h, body, []string{secret}, testNow); err != nil {
				t.Fatalf("valid delivery: %v", err)
			}
			t.Run("rotation", func(t *testing.T) {
				for _, secrets := range [][]string{{other, secret}, {"", secret}, {secret, other}} {
					if err := verify(t, h, body, secrets, testNow); err != nil {
						t.Errorf("secrets %d: %v", len(secrets), err)
					}
				}
			})
			t.Run("wrong or no secret", func(t *testing.T) {
				for _, secrets := range [][]string{{other}, nil, {}, {""}, {secret + "x"}} {
					if err := verify(t, h, body, secrets, testNow); !errors.Is(err, ErrSignature) {
						t.Errorf("secrets %q: err = %v, want ErrSignature", secrets, err)
					}
				}
			})
			t.Run("one byte changed", func(t *testing.T) {
				if name == Token { // a token authenticates the sender, not the body
					return
				}
				from, to := 0, len(body)
				if name == GoogleAds { // only the key authenticates a google-ads body
					from = bytes.Index(body, []byte(secret))
					to = from + len(secret)
				}
				for i := from; i < to; i++ {
					b := bytes.Clone(body)
					b[i] ^= 0x01
					if err := verify(t, h, b, []string{secret}, testNow); !errors.Is(err, ErrSignature) {
						t.Fatalf("byte %d changed: err = %v", i, err)
					}
				}
				if err := verify(t, h, append(bytes.Clone(body), ' '), []string{secret}, testNow); name != GoogleAds && !errors.Is(err, ErrSignature) {
					t.Errorf("byte appended: err = %v", err)
				}
			})
			t.Run("missing headers", func(t *testing.T) {
				eachHeaderCopy(h, func(hdr string, h2 http.Header) {
					h2.Del(hdr)
					if err := verify(t, h2, body, []string{secret}, testNow); !errors.Is(err, ErrSignature) {
						t.Errorf("without %s: err = %v", hdr, err)
					}
				})
				if err := verify(t, http.Header{}, body, []string{secret}, testNow); name != GoogleAds && !errors.Is(err, ErrSignature) {
					t.Errorf("no headers: err = %v", err)
				}
				if name == GoogleAds {
					stripped, _ := StripSecrets(GoogleAds, body)
					if err := verify(t, h, stripped, []string{secret}, testNow); !errors.Is(err, ErrSignature) {
						t.Errorf("without google_key: err = %v", err)
					}
				}
			})
			t.Run("header values changed", func(t *testing.T) {
				eachHeaderCopy(h, func(hdr string, h2 http.Header) {
					h2.Set(hdr, h.Get(hdr)+"0")
					if err := verify(t, h2, body, []string{secret}, testNow); !errors.Is(err, ErrSignature) {
						t.Errorf("%s changed: err = %v", hdr, err)
					}
				})
			})
			if name == Standard || name == Timestamped || name == HubSpot || name == Webflow || name == TikTok {
				t.Run("tolerance", func(t *testing.T) {
					for _, c := range []struct {
						shift time.Duration
						ok    bool
					}{{300 * time.Second, true}, {-300 * time.Second, true}, {301 * time.Second, false}, {-301 * time.Second, false}, {24 * time.Hour, false}, {-24 * time.Hour, false}} {
						err := verify(t, h, body, []string{secret}, testNow.Add(c.shift))
						if (err == nil) != c.ok {
							t.Errorf("now%+v: err = %v, want ok=%v", c.shift, err, c.ok)
						}
					}
				})
			}
		})
	}
}

func TestVerifyTimestampedHeaders(t *testing.T) {
	k := mustKind(t, Timestamped, nil)
	secret := "whsec_test_secret"
	body := []byte(`{"id":"evt_1","data":{"object":{"id":"cus_1"}}}`)
	ts := "1741964966" // testNow
	sig := func(secret string) string {
		return hex.EncodeToString(hmacSHA256([]byte(secret), []byte(ts+"."), body))
	}
	cases := []struct {
		name, header, value string
		ok                  bool
	}{
		{"stripe", "Stripe-Signature", "t=" + ts + ",v1=" + sig(secret), true},
		{"calendly", "Calendly-Webhook-Signature", "t=" + ts + ",v1=" + sig(secret), true},
		{"several v1, rolled secret", "Stripe-Signature", "t=" + ts + ",v1=" + sig("old") + ",v1=" + sig(secret) + ",v0=" + sig("x"), true},
		{"uppercase hex", "Webhook-Signature", "t=" + ts + ",v1=" + strings.ToUpper(sig(secret)), true},
		{"spaces", "Webhook-Signature", "t=" + ts + ", v1=" + sig(secret), true},
		{"v0 only", "Webhook-Signature", "t=" + ts + ",v0=" + sig(secret), false},
		{"no t", "Webhook-Signature", "v1=" + sig(secret), false},
		{"two t", "Webhook-Signature", "t=" + ts + ",t=1,v1=" + sig(secret), false},
		{"t not a number", "Webhook-Signature", "t=abc,v1=" + sig(secret), false},
		{"huge t", "Webhook-Signature", "t=9223372036854775807,v1=" + sig(secret), false},
		{"negative t", "Webhook-Signature", "t=-9223372036854775808,v1=" + sig(secret), false},
		{"sig without prefix whsec_ key", "Webhook-Signature", "t=" + ts + ",v1=" + sig("test_secret"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			h.Set(c.header, c.value)
			err := k.Verify(h, body, []string{secret}, testNow)
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrSignature)) {
				t.Errorf("err = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestVerifyStandardDetails(t *testing.T) {
	k := mustKind(t, Standard, nil)
	key := []byte("0123456789abcdef0123456789abcdef")
	b64 := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	body := []byte(`{"data":{"id":"c1"}}`)
	h, _, err := Sign(Standard, nil, "whsec_"+b64, "msg_1", body, testNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"whsec_" + b64, b64, "whsec_" + strings.TrimRight(b64, "=")} {
		if err := k.Verify(h, body, []string{secret}, testNow); err != nil {
			t.Errorf("secret %q: %v", secret, err)
		}
	}
	for _, secret := range []string{"whsec_!!!", "whsec_", string(key)} {
		if err := k.Verify(h, body, []string{secret}, testNow); !errors.Is(err, ErrSignature) {
			t.Errorf("secret %q: err = %v", secret, err)
		}
	}
	good := h.Get("webhook-signature")
	for _, c := range []struct {
		sig string
		ok  bool
	}{
		{"v1,bm90IGl0 " + good, true},
		{"v1a,abc " + good + "  v2,xyz", true},
		{strings.Replace(good, "v1,", "v2,", 1), false},
		{strings.Replace(good, "v1,", "", 1), false},
		{"v1," + hex.EncodeToString(key), false},
	} {
		h2 := h.Clone()
		h2.Set("webhook-signature", c.sig)
		if err := k.Verify(h2, body, []string{"whsec_" + b64}, testNow); (err == nil) != c.ok {
			t.Errorf("signature %q: err = %v, want ok=%v", c.sig, err, c.ok)
		}
	}
}

func TestVerifyGenericEncodings(t *testing.T) {
	body := []byte(`{"lead":{"id":1}}`)
	secret := "s3cret"
	mac := hmacSHA256([]byte(secret), body)
	cases := []struct {
		config, header, value string
		ok                    bool
	}{
		{`{"natural_key_path":"$.lead.id"}`, "X-Signature", hex.EncodeToString(mac), true},
		{`{"natural_key_path":"$.lead.id"}`, "X-Signature", "sha256=" + hex.EncodeToString(mac), true},
		{`{"natural_key_path":"$.lead.id"}`, "X-Other", hex.EncodeToString(mac), false},
		{`{"natural_key_path":"$.lead.id","prefix":"sha256="}`, "X-Signature", hex.EncodeToString(mac), true},
		{`{"natural_key_path":"$.lead.id","prefix":"hmac-sha256 "}`, "X-Signature", "hmac-sha256 " + hex.EncodeToString(mac), false},
		{`{"natural_key_path":"$.lead.id","prefix":"v1:"}`, "X-Signature", "V1:" + hex.EncodeToString(mac), true},
		{`{"natural_key_path":"$.lead.id","encoding":"base64","signature_header":"X-Hub"}`, "X-Hub", b64(mac), true},
		{`{"natural_key_path":"$.lead.id","encoding":"base64","signature_header":"X-Hub"}`, "X-Hub", hex.EncodeToString(mac), false},
		{`{"natural_key_path":"$.lead.id","encoding":"hex"}`, "X-Signature", b64(mac), false},
	}
	for i, c := range cases {
		k, err := New(Generic, json.RawMessage(c.config))
		if err != nil {
			if c.ok {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		h := http.Header{}
		h.Set(c.header, c.value)
		if err := k.Verify(h, body, []string{secret}, testNow); (err == nil) != c.ok {
			t.Errorf("%d %s: err = %v, want ok=%v", i, c.config, err, c.ok)
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestSignVerifyRoundTrip(t *testing.T) {
	f := sampleLead
	f.CreatedAt = timePtr(testNow.Add(-time.Hour))
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			k := mustKind(t, name, SampleConfig(name))
			secret := mustSecret(t, name)
			h, body := signedSample(t, name, secret, "dlv-42", "ref-42", f)
			if err := VerifyRequest(k, sampleRequest(h), body, []string{secret}, testNow); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			recs, err := k.Parse(h, body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(recs) != 1 || recs[0].DeliveryID != "dlv-42" {
				t.Fatalf("records = %+v", recs)
			}
			if bytes.Contains(recs[0].Raw, []byte(secret)) {
				t.Errorf("record keeps the secret: %s", recs[0].Raw)
			}
			lead, err := k.Map(recs[0].Raw)
			if err != nil {
				t.Fatalf("Map: %v", err)
			}
			want := f
			want.SourceRef = "ref-42"
			switch name {
			case Meta: // a webhook change carries no lead fields, only the id
				want = Lead{SourceRef: "dlv-42", CreatedAt: f.CreatedAt}
			case GoogleAds, Webflow:
				want.SourceRef = "dlv-42"
			case LinkedIn: // a notification carries no lead fields, only the response URN
				want = Lead{SourceRef: "dlv-42", CreatedAt: f.CreatedAt}
			case HubSpot: // one event sets one property
				want = Lead{SourceRef: "ref-42", Email: f.Email}
			}
			checkLead(t, lead, want)
		})
	}
}

func TestSampleMetaLead(t *testing.T) {
	f := sampleLead
	f.CreatedAt = timePtr(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	lead, err := mustKind(t, Meta, nil).Map(SampleMetaLead("lg-1", f, testNow))
	if err != nil {
		t.Fatal(err)
	}
	f.SourceRef = "lg-1"
	checkLead(t, lead, f)
}

func TestGoogleAdsTestLead(t *testing.T) {
	f := sampleLead
	f.Tags = []string{"test"}
	body := SampleBody(GoogleAds, "lead-1", "", f, testNow)
	lead, err := mustKind(t, GoogleAds, nil).Map(body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lead.Tags, []string{"test"}) {
		t.Errorf("Tags = %v", lead.Tags)
	}
}

func TestFixtures(t *testing.T) {
	calendly := readFixture(t, "calendly_invitee_created.json")
	calendlySum := sha256.Sum256(calendly)
	cases := []struct {
		file, kind string
		config     json.RawMessage
		deliveryID string // passed to Sign (standard: the webhook-id header)
		wantIDs    []string
		want       []Lead
	}{
		{
			file: "standard_contact_created.json", kind: Standard, deliveryID: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
			wantIDs: []string{"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"},
			want: []Lead{{
				SourceRef: "1f81eb52-5198-4599-803e-771906343485", Email: "ada@example.com", Name: "Ada Lovelace",
				Phone: "+44 20 7946 0018", Company: "Analytical Engines Ltd",
				CreatedAt: timePtr(time.Date(2022, 11, 3, 20, 26, 10, 344522000, time.UTC)),
			}},
		},
		{
			file: "stripe_customer_created.json", kind: Timestamped,
			wantIDs: []string{"evt_1NG8Du2eZvKYlo2CUI79vXWy"},
			want: []Lead{{
				SourceRef: "cus_NffrFeUfNV2Hib", Email: "jennyrosen@example.com", Name: "Jenny Rosen",
				CreatedAt: timePtr(time.Unix(1680893993, 0)),
			}},
		},
		{
			file: "calendly_invitee_created.json", kind: Timestamped,
			wantIDs: []string{hex.EncodeToString(calendlySum[:])},
			want: []Lead{{
				SourceRef: "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA",
				Email:     "test@example.com", Name: "John Doe", Phone: "+1 404-555-1234",
				CreatedAt: timePtr(time.Date(2024, 3, 5, 14, 12, 8, 717436000, time.UTC)),
			}},
		},
		{
			file: "typeform_form_response.json", kind: Typeform,
			wantIDs: []string{"01HQ7ZK4P6Y1MWJ8S0D9N3VXQA"},
			want: []Lead{{
				SourceRef: "a3a12ec67a1365927098a606107fac15", Email: "grace@example.com", Name: "Grace Hopper",
				Phone: "+15551234567", Company: "Navy Labs", CreatedAt: timePtr(time.Date(2024, 2, 20, 10, 0, 2, 0, time.UTC)),
			}},
		},
		{
			file: "meta_leadgen_webhook.json", kind: Meta,
			wantIDs: []string{"1234567890123456", "9876543210987654321"},
			want: []Lead{
				{SourceRef: "1234567890123456", CreatedAt: timePtr(time.Unix(1717171700, 0))},
				{SourceRef: "9876543210987654321", CreatedAt: timePtr(time.Unix(1717171710, 0))},
			},
		},
		{
			file: "google_ads_lead.json", kind: GoogleAds,
			wantIDs: []string{"TeSter-123-ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnopqrstuvwxyz-0123456789-AaBbCcDdEe"},
			want: []Lead{{
				SourceRef: "TeSter-123-ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnopqrstuvwxyz-0123456789-AaBbCcDdEe",
				Email:     "test@example.com", Name: "FirstName LastName", Phone: "+16505550123", Company: "Example Inc",
				Tags: []string{"test"},
			}},
		},
		{
			file: "generic_lead.json", kind: Generic, config: readFixture(t, "generic_config.json"),
			wantIDs: []string{"dlv_7f3c2a"},
			want: []Lead{{
				SourceRef: "48151623", Email: "kim@example.org", Name: "Kim Park", Phone: "+82 2 1234 5678",
				Company: "Park & Co", CreatedAt: timePtr(time.Unix(1717171717, 0)),
			}},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			body := readFixture(t, c.file)
			k := mustKind(t, c.kind, c.config)
			secret := mustSecret(t, c.kind)
			h, signed, err := Sign(c.kind, c.config, secret, c.deliveryID, body, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == GoogleAds {
				// Sign replaced the fixture's key in place.
				if bytes.Contains(signed, []byte("fixture-google-key")) || !bytes.Contains(signed, []byte(`"google_key":"`+secret+`"`)) {
					t.Fatalf("Sign did not replace google_key: %s", signed)
				}
				if err := k.Verify(h, body, []string{"other", "fixture-google-key"}, testNow); err != nil {
					t.Fatalf("fixture key: %v", err)
				}
			}
			if err := k.Verify(h, signed, []string{secret}, testNow); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			recs, err := k.Parse(h, signed)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.DeliveryID)
			}
			if !slices.Equal(ids, c.wantIDs) {
				t.Fatalf("delivery ids = %q, want %q", ids, c.wantIDs)
			}
			for i, r := range recs {
				if !json.Valid(r.Raw) || bytes.Contains(r.Raw, []byte("google_key")) {
					t.Errorf("record %d raw: %s", i, r.Raw)
				}
				lead, err := k.Map(r.Raw)
				if err != nil {
					t.Fatalf("Map: %v", err)
				}
				checkLead(t, lead, c.want[i])
				if bytes.Contains(lead.Payload, []byte("google_key")) {
					t.Errorf("payload keeps google_key: %s", lead.Payload)
				}
			}
		})
	}
}

func TestFixturePayloads(t *testing.T) {
	cases := []struct {
		file, kind, wantPrefix string
	}{
		{"standard_contact_created.json", Standard, `{"id":"1f81eb52-`},
		{"stripe_customer_created.json", Timestamped, `{"id":"cus_NffrFeUfNV2Hib","object":"customer",`},
		{"calendly_invitee_created.json", Timestamped, `{"cancel_url":`},
		{"typeform_form_response.json", Typeform, `{"form_id":"lT4Z3j","token":`},
		{"google_ads_lead.json", GoogleAds, `{"lead_id":"TeSter-123-`},
		{"meta_graph_lead.json", Meta, `{"created_time":"2024-06-01T12:34:56+0000","id":"1234567890123456",`},
	}
	for _, c := range cases {
		lead, err := mustKind(t, c.kind, nil).Map(readFixture(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if !bytes.HasPrefix(lead.Payload, []byte(c.wantPrefix)) {
			t.Errorf("%s: payload = %.80s…, want prefix %s", c.file, lead.Payload, c.wantPrefix)
		}
	}
}

func TestMetaGraphLead(t *testing.T) {
	k := mustKind(t, Meta, nil)
	lead, err := k.Map(readFixture(t, "meta_graph_lead.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkLead(t, lead, Lead{
		SourceRef: "1234567890123456", Email: "joe@example.com", Name: "Joe Example", Phone: "+15550001111",
		Company: "Example Corp", CreatedAt: timePtr(time.Date(2024, 6, 1, 12, 34, 56, 0, time.UTC)),
	})
	// first_name + last_name, numeric id, an enriched change value (leadgen_id wins over id).
	lead, err = k.Map([]byte(`{"id":777,"created_time":"2024-06-01T12:34:56-0700","field_data":[{"name":"FIRST_NAME","values":["Kim"]},{"name":"last_name","values":[" Park "]},{"name":"email","values":[]},{"name":"phone","values":["","+1 555"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checkLead(t, lead, Lead{SourceRef: "777", Name: "Kim Park", Phone: "+1 555", CreatedAt: timePtr(time.Date(2024, 6, 1, 19, 34, 56, 0, time.UTC))})
	lead, err = k.Map([]byte(`{"leadgen_id":"lg-9","id":"other","created_time":1717171700,"field_data":[{"name":"email","values":["a@b.c"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checkLead(t, lead, Lead{SourceRef: "lg-9", Email: "a@b.c", CreatedAt: timePtr(time.Unix(1717171700, 0))})
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat(`{"a":`, maxJSONDepth) + `1` + strings.Repeat(`}`, maxJSONDepth)
	tooDeep := strings.Repeat(`{"a":`, maxJSONDepth+1) + `1` + strings.Repeat(`}`, maxJSONDepth+1)
	withID := http.Header{"Webhook-Id": {"msg_1"}, "X-Delivery-Id": {"d1"}}
	genericHeaderCfg := json.RawMessage(`{"natural_key_path":"$.id","delivery_id_header":"X-Delivery-Id"}`)
	genericNoIDCfg := json.RawMessage(`{"natural_key_path":"$.id"}`)
	cases := []struct {
		kind   string
		config json.RawMessage
		h      http.Header
		body   string
		want   error // nil: parses
	}{
		{Standard, nil, withID, `{"data":{"id":"x"}}`, nil},
		{Standard, nil, http.Header{}, `{"data":{"id":"x"}}`, ErrNoDeliveryID},
		{Standard, nil, http.Header{"Webhook-Id": {"  "}}, `{}`, ErrNoDeliveryID},
		{Standard, nil, withID, deep, nil},
		{Standard, nil, withID, tooDeep, ErrUnparseable},
		{Standard, nil, withID, `{"a":"\ud83d\ude00"}`, nil},
		{Standard, nil, withID, `{"a":"\ud83d"}`, ErrUnparseable},
		{Standard, nil, withID, `{"a":"\ude00x"}`, ErrUnparseable},
		{Standard, nil, withID, `{"a":"\ud83d\ud83d"}`, ErrUnparseable},
		{Standard, nil, withID, `{"a":"\\ud83d"}`, nil},
		{Standard, nil, withID, `{"a":1e400}`, ErrUnparseable},
		{Standard, nil, withID, `{"a":-1e-400,"b":123456789012345678901234567890}`, nil},
		{Standard, nil, withID, "{\"a\":\"\xff\"}", ErrUnparseable},
		{Timestamped, nil, nil, `{"data":{"id":1}}`, nil},
		{Timestamped, nil, nil, `{"id":null}`, nil},
		{Typeform, nil, nil, `{"form_response":{}}`, ErrNoDeliveryID},
		{Typeform, nil, nil, `{"event_id":""}`, ErrNoDeliveryID},
		{Typeform, nil, nil, `{"event_id":{"x":1}}`, ErrNoDeliveryID},
		{Typeform, nil, nil, `{"event_id":"e1"}`, nil},
		{Meta, nil, nil, `{"object":"page"}`, ErrUnparseable},
		{Meta, nil, nil, `{"object":"page","entry":{}}`, ErrUnparseable},
		{Meta, nil, nil, `{"object":"page","entry":[1]}`, ErrUnparseable},
		{Meta, nil, nil, `{"object":"page","entry":[{"changes":[{"field":"leadgen","value":"x"}]}]}`, ErrUnparseable},
		{Meta, nil, nil, `{"object":"page","entry":[]}`, ErrNoDeliveryID},
		{Meta, nil, nil, `{"object":"page","entry":[{"changes":[{"field":"feed","value":{}}]}]}`, ErrNoDeliveryID},
		{Meta, nil, nil, `{"object":"page","entry":[{"changes":[{"field":"leadgen","value":{"leadgen_id":"1"}},{"field":"leadgen","value":{}}]}]}`, ErrNoDeliveryID},
		{Meta, nil, nil, `{"object":"page","entry":[{"changes":[{"value":{"leadgen_id":1}}]}]}`, nil},
		{GoogleAds, nil, nil, `{"google_key":"k"}`, ErrNoDeliveryID},
		{GoogleAds, nil, nil, `{"lead_id":"l1","google_key":"k"}`, nil},
		{Generic, genericHeaderCfg, http.Header{}, `{"id":1}`, ErrNoDeliveryID},
		{Generic, genericHeaderCfg, withID, `{"id":1}`, nil},
		{Generic, SampleConfig(Generic), nil, `{"event":{}}`, ErrNoDeliveryID},
		{Generic, SampleConfig(Generic), nil, `{"event":{"id":7}}`, nil},
		{Generic, genericNoIDCfg, nil, `{}`, nil},
	}
	for _, name := range Names() { // non-objects are refused by every kind
		for _, body := range []string{``, ` `, `[]`, `"x"`, `1`, `null`, `{`, `{"a":1}x`, `{} {}`, "\xef\xbb\xbf{}"} {
			cfg := SampleConfig(name)
			cases = append(cases, struct {
				kind   string
				config json.RawMessage
				h      http.Header
				body   string
				want   error
			}{name, cfg, withID, body, ErrUnparseable})
		}
	}
	for i, c := range cases {
		k := mustKind(t, c.kind, c.config)
		recs, err := k.Parse(c.h, []byte(c.body))
		if !wantErr(t, err, c.want, "%d %s %.60q", i, c.kind, c.body) {
			continue
		}
		for _, r := range recs {
			if r.DeliveryID == "" || !json.Valid(r.Raw) {
				t.Errorf("%d %s: bad record %+v", i, c.kind, r)
			}
		}
	}
}

// wantErr reports err, after the case named by format and args, unless
// it is the error the case wants (nil: none), and says whether there is a
// result to check: no error was wanted or got.
func wantErr(t testing.TB, err, want error, format string, args ...any) bool {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf(format+": %v", append(args, err)...)
	case want != nil && !errors.Is(err, want):
		t.Errorf(format+": err = %v, want %v", append(args, err, want)...)
	}
	return want == nil && err == nil
}

func TestMapErrors(t *testing.T) {
	cases := []struct {
		kind   string
		config json.RawMessage
		raw    string
		want   error
	}{
		{Standard, nil, `{"data":{"email":"a@b.c"}}`, ErrNoNaturalKey},
		{Standard, nil, `{"data":{"id":""}}`, ErrNoNaturalKey},
		{Standard, nil, `{"data":{"id":{"x":1}}}`, ErrNoNaturalKey},
		{Standard, nil, `{"payload":{"id":"p1"}}`, nil},
		{Standard, nil, `{"data":{"object":{"id":"o1"}}}`, nil},
		{Standard, nil, `{"type":"x"}`, ErrNoNaturalKey},
		{Timestamped, nil, `{"id":"evt_1","data":{"object":{}}}`, ErrNoNaturalKey},
		{Timestamped, nil, `{"id":"evt_1"}`, ErrNoNaturalKey},
		{Timestamped, nil, `{"payload":{"uri":"u"}}`, nil},
		{Typeform, nil, `{"event_id":"e","form_response":{}}`, ErrNoNaturalKey},
		{Typeform, nil, `{"event_id":"e"}`, ErrNoNaturalKey},
		{Meta, nil, `{"ad_id":"1"}`, ErrNoNaturalKey},
		{GoogleAds, nil, `{"google_key":"k","user_column_data":[]}`, ErrNoNaturalKey},
		{Generic, SampleConfig(Generic), `{"lead":{}}`, ErrNoNaturalKey},
		{Generic, SampleConfig(Generic), `{"lead":{"id":true}}`, ErrNoNaturalKey},
		{Generic, SampleConfig(Generic), `{"lead":{"id":12.50}}`, nil},
	}
	for _, name := range Names() {
		for _, raw := range []string{``, `[]`, `"x"`, `{`, `null`} {
			cases = append(cases, struct {
				kind   string
				config json.RawMessage
				raw    string
				want   error
			}{name, SampleConfig(name), raw, ErrUnparseable})
		}
	}
	for i, c := range cases {
		lead, err := mustKind(t, c.kind, c.config).Map(json.RawMessage(c.raw))
		if !wantErr(t, err, c.want, "%d %s %q", i, c.kind, c.raw) {
			continue
		}
		if lead.SourceRef == "" {
			t.Errorf("%d: empty SourceRef", i)
		}
		checkStorable(t, lead.Payload)
	}
}

func TestMapRepairsPayloadEncoding(t *testing.T) {
	k := mustKind(t, Meta, nil)
	lead, err := k.Map([]byte("{\"id\":\"1\",\"x\":\"\\ud800\",\"y\":\"\xff\"}"))
	if err != nil {
		t.Fatal(err)
	}
	checkStorable(t, lead.Payload)
	if _, err := k.Map([]byte(strings.Repeat(`{"id":1,"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1))); !errors.Is(err, ErrUnparseable) {
		t.Errorf("too deep: err = %v", err)
	}
}

func TestLongIDs(t *testing.T) {
	long := strings.Repeat("x", 300)
	sum := sha256.Sum256([]byte(long))
	hashed := "sha256:" + hex.EncodeToString(sum[:])
	if len(hashed) != 71 {
		t.Fatalf("hashed id is %d bytes", len(hashed))
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			k := mustKind(t, name, SampleConfig(name))
			secret := mustSecret(t, name)
			h, body := signedSample(t, name, secret, long, long, sampleLead)
			if err := VerifyRequest(k, sampleRequest(h), body, []string{secret}, testNow); err != nil {
				t.Fatal(err)
			}
			recs, err := k.Parse(h, body)
			if err != nil {
				t.Fatal(err)
			}
			if recs[0].DeliveryID != hashed {
				t.Errorf("DeliveryID = %q, want %q", recs[0].DeliveryID, hashed)
			}
			lead, err := k.Map(recs[0].Raw)
			if err != nil {
				t.Fatal(err)
			}
			if lead.SourceRef != hashed {
				t.Errorf("SourceRef = %q, want %q", lead.SourceRef, hashed)
			}
		})
	}
}

func TestNormalizeID(t *testing.T) {
	at := strings.Repeat("é", MaxIDLen/2) + "x" // 191 bytes
	for _, c := range []struct {
		in     string
		hashed bool
	}{
		{"evt_1", false},
		{strings.Repeat("a", MaxIDLen), false},
		{at, false},
		{strings.Repeat("a", MaxIDLen+1), true},
		{at + "x", true},
		{"bad\xffutf8", true},
		{"sha256:" + strings.Repeat("0", 64), false},
	} {
		got := NormalizeID(c.in)
		if c.hashed != (got != c.in) || (c.hashed && (len(got) != 71 || !strings.HasPrefix(got, "sha256:"))) {
			t.Errorf("NormalizeID(%.20q…) = %q", c.in, got)
		}
		if NormalizeID(got) != got {
			t.Errorf("NormalizeID is not idempotent for %q", got)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	cases := []struct {
		kind, config string
		wantKeys     []string
	}{
		{Generic, `{"natural_key_path":"$.lead.id"}`, nil},
		{Generic, string(SampleConfig(Generic)), nil},
		{Generic, `{"signature_header":"X-Sig","encoding":"base64","prefix":"sha256=","delivery_id_header":"X-Id","natural_key_path":"$.a[0].b","fields":{"email":"$['e-mail']"}}`, nil},
		{Generic, ``, []string{"config.natural_key_path"}},
		{Generic, `null`, []string{"config.natural_key_path"}},
		{Generic, `{}`, []string{"config.natural_key_path"}},
		{Generic, `[]`, []string{"config"}},
		{Generic, `{"natural_key_path":"lead.id"}`, []string{"config.natural_key_path"}},
		{Generic, `{"natural_key_path":"$.lead..id"}`, []string{"config.natural_key_path"}},
		{Generic, `{"natural_key_path":"$.a[x]"}`, []string{"config.natural_key_path"}},
		{Generic, `{"natural_key_path":"$.a[-1]"}`, []string{"config.natural_key_path"}},
		{Generic, `{"natural_key_path":"$.a[0"}`, []string{"config.natural_key_path"}},
		{Generic, `{"natural_key_path":7}`, []string{"config.natural_key_path"}},
		{Generic, `{"natural_key_path":"$.id","encoding":"base32"}`, []string{"config.encoding"}},
		{Generic, `{"natural_key_path":"$.id","signature_header":"X Sig"}`, []string{"config.signature_header"}},
		{Generic, `{"natural_key_path":"$.id","delivery_id_header":"X-Id","delivery_id_path":"$.id"}`, []string{"config.delivery_id_path"}},
		{Generic, `{"natural_key_path":"$.id","delivery_id_path":"id"}`, []string{"config.delivery_id_path"}},
		{Generic, `{"natural_key_path":"$.id","fields":{"mail":"$.m","email":"x","phone":1}}`, []string{"config.fields.email", "config.fields.mail", "config.fields.phone"}},
		{Generic, `{"natural_key_path":"$.id","fields":[]}`, []string{"config.fields"}},
		{Generic, `{"natural_key_path":"$.id","signatureHeader":"X"}`, []string{"config.signatureHeader"}},
		{Standard, ``, nil},
		{Meta, `{}`, nil},
		{Meta, `null`, nil},
		{Typeform, `{"a":1}`, []string{"config"}},
		{"svix", `{}`, []string{"kind"}},
	}
	for _, c := range cases {
		got := ValidateConfig(c.kind, json.RawMessage(c.config))
		if got == nil {
			t.Errorf("%s %s: nil map", c.kind, c.config)
		}
		var keys []string
		for k, msg := range got {
			keys = append(keys, k)
			if msg == "" {
				t.Errorf("%s %s: empty message for %s", c.kind, c.config, k)
			}
		}
		slices.Sort(keys)
		if !slices.Equal(keys, c.wantKeys) {
			t.Errorf("%s %s: problems = %v, want keys %v", c.kind, c.config, got, c.wantKeys)
		}
		if _, err := New(c.kind, json.RawMessage(c.config)); (err == nil) != (len(c.wantKeys) == 0 || c.kind != Generic && c.kind != "svix") {
			t.Errorf("%s %s: New err = %v", c.kind, c.config, err)
		}
	}
}

func TestJSONPathLookup(t *testing.T) {
	doc := []byte(`{"a":{"b":[{"c":"x"},{"c":42}]},"d e":"sp","arr":[[1,2],[3]]}`)
	for path, want := range map[string]string{
		"$.a.b[0].c":   "x",
		"$.a.b[1].c":   "42",
		"$.a.b[2].c":   "",
		"$['d e']":     "sp",
		`$["a"].b[0]`:  "",
		"$.arr[1][0]":  "3",
		"$.a.b.c":      "",
		"$.missing.x":  "",
		"$.a.b[0].c.d": "",
	} {
		p, err := parseJSONPath(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := scalarText(p.lookup(doc)); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func TestGenerateSecret(t *testing.T) {
	formats := map[string]*regexp.Regexp{
		Standard:    regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{32}$`),
		Timestamped: regexp.MustCompile(`^whsec_[0-9a-f]{64}$`),
		Typeform:    regexp.MustCompile(`^[0-9a-f]{64}$`),
		Meta:        regexp.MustCompile(`^[0-9a-f]{64}$`),
		GoogleAds:   regexp.MustCompile(`^[0-9a-f]{64}$`),
		Generic:     regexp.MustCompile(`^[0-9a-f]{64}$`),
		LinkedIn:    regexp.MustCompile(`^[0-9a-f]{64}$`),
		HubSpot:     regexp.MustCompile(`^[0-9a-f]{64}$`),
		Webflow:     regexp.MustCompile(`^[0-9a-f]{64}$`),
		Tally:       regexp.MustCompile(`^[0-9a-f]{64}$`),
		TikTok:      regexp.MustCompile(`^[0-9a-f]{64}$`),
		Token:       regexp.MustCompile(`^[0-9a-f]{64}$`),
	}
	for _, name := range Names() {
		a, b := mustSecret(t, name), mustSecret(t, name)
		if !formats[name].MatchString(a) || a == b {
			t.Errorf("%s: secrets %q, %q", name, a, b)
		}
		if err := ValidateSecret(name, a); err != nil {
			t.Errorf("%s: ValidateSecret(generated): %v", name, err)
		}
	}
	if _, err := GenerateSecret("nope"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
	for _, c := range []struct {
		kind, secret string
		ok           bool
	}{
		{Standard, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true},
		{Standard, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true},
		{Standard, "whsec_not base64!", false},
		{Standard, "", false},
		{Meta, " padded ", false},
		{Meta, "0123abc", true},
		{"nope", "x", false},
	} {
		if err := ValidateSecret(c.kind, c.secret); (err == nil) != c.ok {
			t.Errorf("ValidateSecret(%s, %q) = %v", c.kind, c.secret, err)
		}
	}
}

func TestMetaVerifyHandshake(t *testing.T) {
	q := func(mode, token, challenge string) url.Values {
		return url.Values{"hub.mode": {mode}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
	}
	cases := []struct {
		q     url.Values
		token string
		ok    bool
	}{
		{q("subscribe", "tok", "1158201444"), "tok", true},
		{q("subscribe", "tok2", "1158201444"), "tok", false},
		{q("subscribe", "to", "1158201444"), "tok", false},
		{q("unsubscribe", "tok", "1158201444"), "tok", false},
		{q("subscribe", "", "1158201444"), "", false},
		{q("subscribe", "tok", ""), "tok", false},
		{q("subscribe", "tok", strings.Repeat("9", 257)), "tok", false},
		{url.Values{}, "tok", false},
	}
	for i, c := range cases {
		got, ok := MetaVerifyHandshake(c.q, c.token)
		if ok != c.ok || (ok && got != c.q.Get("hub.challenge")) || (!ok && got != "") {
			t.Errorf("%d: got %q, %v", i, got, ok)
		}
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, in := range []string{`"2024-01-02T03:04:05Z"`, `"2024-01-02T04:04:05+01:00"`, `"2024-01-02T03:04:05+0000"`, `1704164645`, `"1704164645"`, `1704164645000`, `1704164645.0`} {
		got := parseTime(json.RawMessage(in))
		if got == nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseTime(%s) = %v", in, got)
		}
	}
	for _, in := range []string{``, `null`, `true`, `"soon"`, `0`, `-5`, `1e300`, `"NaN"`, `{}`} {
		if got := parseTime(json.RawMessage(in)); got != nil {
			t.Errorf("parseTime(%s) = %v, want nil", in, got)
		}
	}
}

func TestStripSecrets(t *testing.T) {
	in := []byte(`{"lead_id":"l","google_key":"k","x":{"google_key":"nested stays"},"google_key":"dup","is_test":true}`)
	got, err := StripSecrets(GoogleAds, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"lead_id":"l","x":{"google_key":"nested stays"},"is_test":true}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, _ := StripSecrets(Meta, in); !bytes.Equal(got, in) {
		t.Errorf("meta body changed")
	}
	// Sign replaces every top-level google_key, keeping member order.
	_, signed, err := Sign(GoogleAds, nil, "new", "", in, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"lead_id":"l","google_key":"new","x":{"google_key":"nested stays"},"is_test":true}`; string(signed) != want {
		t.Errorf("signed %s", signed)
	}
}

func TestNamesAndNew(t *testing.T) {
	for _, name := range Names() {
		k := mustKind(t, name, SampleConfig(name))
		if k.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, k.Name())
		}
		if SampleBody(name, "d", "r", sampleLead, testNow) == nil {
			t.Errorf("no sample body for %s", name)
		}
	}
	if _, err := New("nope", nil); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("New(nope) = %v", err)
	}
	if _, _, err := Sign("nope", nil, "s", "d", []byte(`{}`), testNow); err == nil {
		t.Error("Sign(nope) succeeded")
	}
	if _, _, err := Sign(Standard, nil, "whsec_***", "d", []byte(`{}`), testNow); err == nil {
		t.Error("Sign with a bad standard secret succeeded")
	}
}

// TestHeaderDeliveryIDMatchesParse: the id the ingest path reads from a
// header to answer a known duplicate early is the id Parse returns, for
// every kind that carries it in a header.
func TestHeaderDeliveryIDMatchesParse(t *testing.T) {
	h := http.Header{"Webhook-Id": {" msg_1 "}, "X-Delivery-Id": {"d-7"}}
	cases := []struct {
		kind   string
		config string
		want   string
	}{
		{Standard, ``, "msg_1"},
		{Generic, `{"natural_key_path":"$.id","delivery_id_header":"X-Delivery-Id"}`, "d-7"},
		{Token, `{"natural_key_path":"$.id","delivery_id_header":"X-Delivery-Id"}`, "d-7"},
		{Token, `{"natural_key_path":"$.id","delivery_id_path":"$.id"}`, ""},
		{Generic, `{"natural_key_path":"$.id","delivery_id_path":"$.id"}`, ""},
	}
	for _, c := range cases {
		k, err := New(c.kind, json.RawMessage(c.config))
		if err != nil {
			t.Fatalf("%s %s: %v", c.kind, c.config, err)
		}
		got := HeaderDeliveryID(k, h)
		if got != c.want {
			t.Errorf("%s %s: HeaderDeliveryID = %q, want %q", c.kind, c.config, got, c.want)
		}
		if got == "" {
			continue
		}
		recs, err := k.Parse(h, []byte(`{"id":"n1"}`))
		if err != nil || len(recs) != 1 || recs[0].DeliveryID != got {
			t.Errorf("%s: Parse = %+v, %v; want one record with delivery id %q", c.kind, recs, err, got)
		}
	}
}

// eachHeaderCopy calls f for each header of h but Content-Type, with a
// copy of h to change that header in.
func eachHeaderCopy(h http.Header, f func(hdr string, h2 http.Header)) {
	for hdr := range h {
		if hdr != "Content-Type" {
			f(hdr, h.Clone())
		}
	}
}
