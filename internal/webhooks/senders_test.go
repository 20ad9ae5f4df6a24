package webhooks_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// newKinds are the senders of docs/SENDERS.md beyond the first six.
var newKinds = []string{kinds.LinkedIn, kinds.HubSpot, kinds.Webflow, kinds.Tally, kinds.TikTok, kinds.Token}

// post sends body with exactly the headers given (no Content-Type added).
func post(t testing.TB, u string, h http.Header, body []byte) hookResp {
	t.Helper()
	req, _ := http.NewRequest("POST", u, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := hookResp{Status: res.StatusCode, Body: b}
	if res.StatusCode == 200 {
		_ = json.Unmarshal(b, &out.Ack)
	}
	return out
}

func reasons(t testing.TB, e *apptest.Env, tenantID, sourceID string) []string {
	t.Helper()
	if err := e.App.Ingest.Rejections.(*rejections.Recorder).Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := e.App.DB.SelectContext(context.Background(), &out, `SELECT reason FROM rejections WHERE tenant_id = ? AND source_id = ? ORDER BY at`, tenantID, sourceID); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNewKindsRetryAndConcurrency: for every new kind, a retry signed
// again later is a duplicate of the first delivery, and 50 identical
// deliveries at once make one delivery and one lead.
func TestNewKindsRetryAndConcurrency(t *testing.T) {
	e := apptest.New(t, "hooks_senders", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	for _, kind := range newKinds {
		t.Run(kind, func(t *testing.T) {
			s := newSource(t, e, ten.ID, "new-"+kind, kind)
			f := kinds.Lead{Email: "grace+" + kind + "@example.com", Name: "Grace Hopper", Phone: "+15550199", Company: "Navy"}
			now := time.Now()
			h, body := signed(t, s, "retry-"+kind, "ref-retry-"+kind, f, now)
			first := send(t, s.URL, h, body)
			if first.Status != 200 || first.Ack.Status != "accepted" {
				t.Fatalf("first: %d %s", first.Status, first.Body)
			}
			h2, body2 := signed(t, s, "retry-"+kind, "ref-retry-"+kind, f, now.Add(3*time.Second))
			again := send(t, s.URL, h2, body2)
			if again.Status != 200 || again.Ack.Status != "duplicate" {
				t.Fatalf("re-signed retry: %d %s", again.Status, again.Body)
			}

			hc, bc := signed(t, s, "conc-"+kind, "ref-conc-"+kind, f, now)
			const n = 50
			results := sendAtOnce(t, n, s.URL, hc, bc)
			accepted := 0
			for _, r := range results {
				if r.Status != 200 {
					t.Fatalf("status %d %s", r.Status, r.Body)
				}
				if r.Ack.Status == "accepted" {
					accepted++
				}
			}
			if accepted != 1 {
				t.Fatalf("%d of %d accepted", accepted, n)
			}
			if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID); c != 2 {
				t.Fatalf("%d delivery rows, want 2", c)
			}
			apptest.Eventually(t, 15*time.Second, "two leads, the second seen 50 times", func() bool {
				return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID) == 2 &&
					count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ? AND times_seen = 50`, ten.ID, s.ID) == 1
			})
		})
	}
}

// TestVendorSamples: each vendor's documented sample maps to the right
// email, name, phone and company once stored and processed.
func TestVendorSamples(t *testing.T) {
	e := apptest.New(t, "hooks_samples", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	f := kinds.Lead{Email: "ada@example.com", Name: "Ada Lovelace", Phone: "+44 20 7946 0018", Company: "Analytical Engines"}
	for _, kind := range []string{kinds.Webflow, kinds.Tally, kinds.TikTok, kinds.Token} {
		t.Run(kind, func(t *testing.T) {
			s := newSource(t, e, ten.ID, "sample-"+kind, kind)
			h, body := signed(t, s, "dlv-"+kind, "ref-"+kind, f, time.Now())
			if r := send(t, s.URL, h, body); r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			l := waitLead(t, e, ten.ID, s.ID)
			if l.Email != f.Email || l.Name != f.Name || l.Phone != f.Phone || l.Company != f.Company {
				t.Fatalf("lead %+v", l)
			}
		})
	}
}

func waitLead(t testing.TB, e *apptest.Env, tenantID, sourceID string) leads.Lead {
	t.Helper()
	apptest.Eventually(t, 15*time.Second, "lead", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, tenantID, sourceID) > 0
	})
	var l leads.Lead
	if err := e.App.DB.GetContext(context.Background(), &l, `SELECT `+leads.LeadCols+` FROM leads WHERE tenant_id = ? AND source_id = ? ORDER BY created_at LIMIT 1`, tenantID, sourceID); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHubSpotPublicURI: HubSpot signs the URI it called, which behind a
// proxy is LEADPIPE_BASE_URL + path + query, with some escapes decoded;
// a signature over the internal URI is refused. A batch of events is one
// delivery each, and a propertyChange sets only its property.
func TestHubSpotPublicURI(t *testing.T) {
	e := apptest.New(t, "hooks_hubspot", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	s := newSource(t, e, ten.ID, "hubspot", kinds.HubSpot)
	internal := s.URL + "?portal=62515&tag=a%3Ab%2Cc%40d"
	e.App.Cfg.BaseURL = "https://crm.example.com" // the proxy's public name; the test server is behind it
	public := strings.Replace(internal, e.URL, e.App.Cfg.BaseURL, 1)
	now := time.Now()
	batch := func(events ...any) []byte {
		b, _ := json.Marshal(events)
		return b
	}
	body := batch(
		kinds.HubSpotEvent("9001", "501", "contact.creation", "", "", now),
		kinds.HubSpotEvent("9002", "501", "contact.propertyChange", "email", "ada@example.com", now),
		kinds.HubSpotEvent("9003", "501", "contact.propertyChange", "phone", "+15550100", now),
	)
	sign := func(uri string, at time.Time) http.Header {
		h, _, err := kinds.SignTo(kinds.HubSpot, nil, s.Secret, "", uri, body, at)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if r := send(t, internal, sign(internal, now), body); r.Status != 401 {
		t.Fatalf("signed over the internal URI: %d %s", r.Status, r.Body)
	}
	if r := send(t, internal, sign(public, now.Add(-6*time.Minute)), body); r.Status != 401 {
		t.Fatalf("stale: %d %s", r.Status, r.Body)
	}
	if r := send(t, internal, sign(public, now.Add(6*time.Minute)), body); r.Status != 401 {
		t.Fatalf("future: %d %s", r.Status, r.Body)
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != 0 {
		t.Fatalf("refused requests claimed %d deliveries", c)
	}
	r := send(t, internal, sign(public, now), body)
	if r.Status != 200 || len(r.Ack.Items) != 3 {
		t.Fatalf("public URI: %d %s", r.Status, r.Body)
	}
	// HubSpot's retry carries the same eventIds, signed again.
	r = send(t, internal, sign(public, now.Add(2*time.Second)), body)
	if r.Status != 200 || r.Ack.Status != "duplicate" || len(r.Ack.Items) != 3 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "email and phone on the lead", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = '501' AND email = 'ada@example.com' AND phone = '+15550100'`, ten.ID) == 1
	})
	// A later change of the company leaves email and phone as they are.
	body = batch(kinds.HubSpotEvent("9004", "501", "contact.propertyChange", "company", "Analytical", now))
	if r := send(t, internal, sign(public, now), body); r.Status != 200 {
		t.Fatalf("company: %d %s", r.Status, r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "company added, the rest kept", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = '501' AND email = 'ada@example.com' AND phone = '+15550100' AND company = 'Analytical'`, ten.ID) == 1
	})
}

// TestTokenSource: Bearer, Basic and a configured header; a password that
// is a prefix of the secret, a token in the query string and an address
// outside allowed_ips are refused, recorded and claim nothing; a spoofed
// X-Forwarded-For counts only behind a trusted proxy.
func TestTokenSource(t *testing.T) {
	e := apptest.New(t, "hooks_token", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("acme")
	ctx := context.Background()
	src, secret, err := e.App.Sources.Create(ctx, ten.ID, sources.CreateInput{Slug: "zapier", Name: "Zapier", Kind: kinds.Token,
		Config: json.RawMessage(`{"header":"X-Zapier-Secret","preset":"zapier"}`)})
	if err != nil {
		t.Fatal(err)
	}
	u := e.URL + "/hooks/acme/zapier"
	n := 0
	lead := func() []byte {
		n++
		return []byte(fmt.Sprintf(`{"email":"p%d@example.com","name":"Pat %d"}`, n, n))
	}
	js := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	basic := func(pass string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("zap:"+pass)) }
	for name, h := range map[string]http.Header{
		"bearer": js("Authorization", "Bearer "+secret),
		"basic":  js("Authorization", basic(secret)),
		"header": js("X-Zapier-Secret", secret),
	} {
		if r := post(t, u, h, lead()); r.Status != 200 || r.Ack.Status != "accepted" {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	before := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID)
	for name, c := range map[string]struct {
		url string
		h   http.Header
	}{
		"basic prefix":   {u, js("Authorization", basic(secret[:len(secret)-1]))},
		"bearer prefix":  {u, js("Authorization", "Bearer "+secret[:20])},
		"no credentials": {u, js()},
		"query token":    {u + "?token=" + url.QueryEscape(secret), js()},
		"query + bearer": {u + "?api_key=" + url.QueryEscape(secret), js("Authorization", "Bearer "+secret)},
	} {
		r := post(t, c.url, c.h, lead())
		if r.Status != 401 {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
		if bytes.Contains(r.Body, []byte(secret)) {
			t.Fatalf("%s: the answer shows the secret", name)
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != before {
		t.Fatalf("refused requests claimed %d deliveries", c-before)
	}
	got := strings.Join(reasons(t, e, ten.ID, src.ID), ",")
	for _, want := range []string{"bad_signature", "missing_signature", "secret_in_query"} {
		if !strings.Contains(got, want) {
			t.Fatalf("rejections %s lack %s", got, want)
		}
	}

	// allowed_ips: the test client connects from 127.0.0.1.
	cfg := json.RawMessage(`{"allowed_ips":["10.0.0.0/8"]}`)
	if _, err := e.App.Sources.Patch(ctx, ten.ID, src.ID, sources.PatchInput{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	spoofed := js("Authorization", "Bearer "+secret, "X-Forwarded-For", "10.1.2.3")
	if r := post(t, u, spoofed, lead()); r.Status != 401 {
		t.Fatalf("outside allowed_ips with a spoofed X-Forwarded-For: %d %s", r.Status, r.Body)
	}
	if got := reasons(t, e, ten.ID, src.ID); got[len(got)-1] != "address_refused" {
		t.Fatalf("last rejection %v", got)
	}
	e.App.Cfg.TrustProxyHeaders = true // now a proxy in front appends the client's address
	defer func() { e.App.Cfg.TrustProxyHeaders = false }()
	if r := post(t, u, spoofed, lead()); r.Status != 200 {
		t.Fatalf("behind a trusted proxy, client 10.1.2.3: %d %s", r.Status, r.Body)
	}
	if r := post(t, u, js("Authorization", "Bearer "+secret, "X-Forwarded-For", "10.1.2.3, 192.0.2.7"), lead()); r.Status != 401 {
		t.Fatalf("behind a trusted proxy, client 192.0.2.7: %d %s", r.Status, r.Body)
	}
}

// TestSecretWebhookURL: a token source's secret URL takes deliveries with
// no header at all; a wrong or revoked one is the same 404 as an unknown
// source; a rotation keeps the old URL for the grace period.
func TestSecretWebhookURL(t *testing.T) {
	e := apptest.New(t, "hooks_secreturl", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("acme")
	res := e.Do("POST", "/api/v1/sources", ten.Token, map[string]any{"slug": "unbounce", "name": "Unbounce", "kind": "token"})
	if res.Status != 201 {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var v struct {
		ID               string `json:"id"`
		Secret           string `json:"secret"`
		WebhookURL       string `json:"webhook_url"`
		SecretWebhookURL string `json:"secret_webhook_url"`
	}
	if err := json.Unmarshal(res.Body, &v); err != nil || v.SecretWebhookURL == "" {
		t.Fatalf("no secret_webhook_url: %s", res.Body)
	}
	seg := v.SecretWebhookURL[strings.LastIndex(v.SecretWebhookURL, "/")+1:]
	if len(seg) < 32 || strings.Contains(v.SecretWebhookURL, v.Secret) {
		t.Fatalf("secret URL segment %q", seg)
	}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	body := func(i int) []byte {
		return []byte(url.Values{"email": {fmt.Sprintf("u%d@example.com", i)}, "name": {"Una"}}.Encode())
	}
	if r := post(t, v.SecretWebhookURL, form, body(1)); r.Status != 200 || r.Ack.Status != "accepted" {
		t.Fatalf("secret URL: %d %s", r.Status, r.Body)
	}
	unknown := post(t, e.URL+"/hooks/acme/nothing", form, body(2))
	for name, u := range map[string]string{
		"wrong":     v.WebhookURL + "/" + strings.Repeat("0", len(seg)),
		"truncated": v.WebhookURL + "/" + seg[:len(seg)-1],
	} {
		r := post(t, u, form, body(2))
		if r.Status != 404 || !bytes.Equal(r.Body, unknown.Body) {
			t.Fatalf("%s: %d %s, want the unknown source's %s", name, r.Status, r.Body, unknown.Body)
		}
	}
	if got := e.Do("GET", "/api/v1/sources/"+v.ID, ten.Token, nil); !bytes.Contains(got.Body, []byte(seg)) {
		t.Fatalf("GET lacks the secret URL: %s", got.Body)
	}
	rot := e.Do("POST", "/api/v1/sources/"+v.ID+"/rotate-secret", ten.Token, map[string]any{"grace_seconds": 3600})
	var nv struct {
		SecretWebhookURL string `json:"secret_webhook_url"`
	}
	_ = json.Unmarshal(rot.Body, &nv)
	if rot.Status != 200 || nv.SecretWebhookURL == "" || nv.SecretWebhookURL == v.SecretWebhookURL {
		t.Fatalf("rotate: %d %s", rot.Status, rot.Body)
	}
	for i, u := range []string{v.SecretWebhookURL, nv.SecretWebhookURL} {
		if r := post(t, u, form, body(10+i)); r.Status != 200 {
			t.Fatalf("URL %d during the grace period: %d %s", i, r.Status, r.Body)
		}
	}
	if rot := e.Do("POST", "/api/v1/sources/"+v.ID+"/rotate-secret", ten.Token, map[string]any{"grace_seconds": 0}); rot.Status != 200 {
		t.Fatal(rot.Status)
	}
	if r := post(t, v.SecretWebhookURL, form, body(20)); r.Status != 404 {
		t.Fatalf("revoked URL: %d %s", r.Status, r.Body)
	}
}

// TestFormBodies: form-encoded and multipart bodies are stored as the JSON
// object they stand for (Unbounce's data.json unpacked); too many fields,
// a too large field and a file part are clear 4xx, recorded, claim nothing,
// and valid traffic beside them goes through.
func TestFormBodies(t *testing.T) {
	e := apptest.New(t, "hooks_forms", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("acme")
	s := newSource(t, e, ten.ID, "forms", kinds.Token)
	auth := func(ct string) http.Header {
		return http.Header{"Content-Type": {ct}, "Authorization": {"Bearer " + s.Secret}}
	}
	u := e.URL + "/hooks/acme/forms"
	cfg := json.RawMessage(`{}`) // natural key: the email
	if _, err := e.App.Sources.Patch(context.Background(), ten.ID, s.ID, sources.PatchInput{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	// Contact Form 7 / Gravity Forms style.
	cf7 := url.Values{"your-name": {"Cora Seven"}, "your-email": {"cora@example.com"}, "your-phone": {"+15550101"}, "interests[]": {"a", "b"}}
	if r := post(t, u, auth("application/x-www-form-urlencoded"), []byte(cf7.Encode())); r.Status != 200 {
		t.Fatalf("urlencoded: %d %s", r.Status, r.Body)
	}
	// Unbounce: data.json holds the fields as lists.
	ub := url.Values{"page_id": {"a1b2"}, "data.json": {`{"email":["una@example.com"],"name":["Una Bounce"],"company_name":["Pages Inc"]}`}}
	if r := post(t, u, auth("application/x-www-form-urlencoded; charset=utf-8"), []byte(ub.Encode())); r.Status != 200 {
		t.Fatalf("unbounce: %d %s", r.Status, r.Body)
	}
	// Jotform: multipart without files.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("q3_email", "jo@example.com")
	_ = mw.WriteField("email", "jo@example.com")
	_ = mw.WriteField("name", "Jo Form")
	_ = mw.Close()
	if r := post(t, u, auth(mw.FormDataContentType()), mp.Bytes()); r.Status != 200 {
		t.Fatalf("multipart: %d %s", r.Status, r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "three leads", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, ten.ID, s.ID) == 3
	})
	for _, c := range []struct{ ref, name, company string }{
		{"cora@example.com", "Cora Seven", ""}, {"una@example.com", "Una Bounce", "Pages Inc"}, {"jo@example.com", "Jo Form", ""},
	} {
		if count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_ref = ? AND email = ? AND name = ? AND company = ?`,
			ten.ID, c.ref, c.ref, c.name, c.company) != 1 {
			t.Fatalf("lead %s not mapped", c.ref)
		}
	}
	var payload string
	if err := e.App.DB.GetContext(context.Background(), &payload, `SELECT payload FROM deliveries WHERE tenant_id = ? AND payload LIKE '%cora%'`, ten.ID); err != nil {
		t.Fatalf("stored payload: %v", err)
	}
	if !strings.Contains(payload, `"interests[]": ["a", "b"]`) && !strings.Contains(payload, `"interests[]":["a","b"]`) {
		t.Fatalf("stored payload is not the form's JSON object: %s", payload)
	}

	before := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID)
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("f%d=x", i)
	}
	var file bytes.Buffer
	fw := multipart.NewWriter(&file)
	_ = fw.WriteField("email", "f@example.com")
	part, _ := fw.CreateFormFile("cv", "cv.pdf")
	_, _ = part.Write([]byte("%PDF-1.4"))
	_ = fw.Close()
	for _, c := range []struct {
		name, ct string
		body     []byte
		status   int
	}{
		{"10,000 fields", "application/x-www-form-urlencoded", []byte(strings.Join(many, "&")), 413},
		{"a 100 KiB field", "application/x-www-form-urlencoded", []byte("email=a@example.com&note=" + strings.Repeat("x", 100<<10)), 413},
		{"a 1 MiB field", "application/x-www-form-urlencoded", []byte("email=a@example.com&note=" + strings.Repeat("x", 1<<20)), 413},
		{"a file part", fw.FormDataContentType(), file.Bytes(), 415},
	} {
		r := post(t, u, auth(c.ct), c.body)
		if r.Status != c.status {
			t.Fatalf("%s: %d %s", c.name, r.Status, r.Body)
		}
		// Valid traffic beside it is not lost.
		ok := url.Values{"email": {fmt.Sprintf("%d@example.com", len(c.body))}}
		if r := post(t, u, auth("application/x-www-form-urlencoded"), []byte(ok.Encode())); r.Status != 200 {
			t.Fatalf("valid beside %s: %d %s", c.name, r.Status, r.Body)
		}
	}
	if c := count(t, e, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ?`, ten.ID); c != before+4 {
		t.Fatalf("%d deliveries, want %d: a refused body was claimed or a valid one lost", c, before+4)
	}
	got := reasons(t, e, ten.ID, s.ID)
	if strings.Count(strings.Join(got, ","), "bad_form") != 3 || !strings.Contains(strings.Join(got, ","), "too_large") {
		t.Fatalf("rejections %v", got)
	}
}

// TestLinkedInChallenge: the GET challenge answers with the HMAC of the
// code keyed by the source's secret; without a code it is a 400.
func TestLinkedInChallenge(t *testing.T) {
	e := apptest.New(t, "hooks_linkedin", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten := e.Tenant("acme")
	s := newSource(t, e, ten.ID, "linkedin", kinds.LinkedIn)
	code := "890e4665-4dfe-4ab1-b689-ed553bceeed0"
	want, _ := kinds.LinkedInChallenge(code, []string{s.Secret})
	for i := 0; i < 2; i++ { // the first from the database, the second from memory
		res, err := http.Get(s.URL + "?challengeCode=" + code)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(b, want) || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("challenge: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	}
	res, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("no code: %d", res.StatusCode)
	}
}
