package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestRejectionsInspector: every reason is recorded with its fields; no
// secret and no full signature reaches the API; the cap of 100 per source
// holds under a burst; bad limits are 422 and another tenant's source 404.
func TestRejectionsInspector(t *testing.T) {
	e := uiEnv(t, "web_reject")
	ctx := context.Background()
	acme, other := e.Tenant("acme"), e.Tenant("other")
	src, secret := e.Source(acme.ID, sources.CreateInput{Slug: "site", Name: "Site", Kind: "standard"})
	legacy, _ := e.Source(acme.ID, sources.CreateInput{Slug: "legacy", Name: "Legacy", Kind: "standard"})
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE sources SET kind = 'retired-kind' WHERE tenant_id = ? AND id = ?`, acme.ID, legacy.ID); err != nil {
		t.Fatal(err)
	}
	otherSrc, _ := e.Source(other.ID, sources.CreateInput{Slug: "site", Name: "Site", Kind: "standard"})
	rec := e.App.Ingest.Rejections.(*rejections.Recorder)

	post := func(path string, body []byte, h http.Header) int {
		t.Helper()
		req, _ := http.NewRequest("POST", e.URL+path, bytes.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	now := time.Now()
	body := kinds.SampleBody(kinds.Standard, "evt-1", "ref-1", kinds.Lead{Name: "Dana", Email: "dana@example.test"}, now)
	signed := func(at time.Time) (http.Header, []byte) {
		h, b, err := kinds.Sign(kinds.Standard, nil, secret, "evt-1", body, at)
		if err != nil {
			t.Fatal(err)
		}
		h.Set("Authorization", "Bearer should-not-be-kept")
		return h, b
	}
	fullSig := ""
	{ // missing_signature: no signature headers at all
		if st := post("/hooks/acme/site", body, http.Header{"Content-Type": {"application/json"}}); st != 401 {
			t.Fatalf("missing: %d", st)
		}
	}
	{ // bad_signature: signed with another secret
		h, b, _ := kinds.Sign(kinds.Standard, nil, "whsec_"+strings.Repeat("QUJD", 8), "evt-1", body, now)
		if st := post("/hooks/acme/site", b, h); st != 401 {
			t.Fatalf("bad: %d", st)
		}
		fullSig = h.Get("webhook-signature")
	}
	{ // stale_timestamp: correctly signed an hour ago
		h, b := signed(now.Add(-time.Hour))
		if st := post("/hooks/acme/site", b, h); st != 401 {
			t.Fatalf("stale: %d", st)
		}
	}
	{ // too_large
		h, _ := signed(now)
		if st := post("/hooks/acme/site", bytes.Repeat([]byte("x"), 1<<20+10), h); st != 413 {
			t.Fatalf("too large: %d", st)
		}
	}
	{ // unknown_kind
		h, b := signed(now)
		if st := post("/hooks/acme/legacy", b, h); st < 400 {
			t.Fatalf("unknown kind: %d", st)
		}
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	res := e.Do("GET", "/api/v1/sources/"+src.ID+"/rejections", acme.Token, nil)
	if res.Status != 200 {
		t.Fatalf("list: %d %s", res.Status, res.Body)
	}
	if bytes.Contains(res.Body, []byte(secret)) || bytes.Contains(res.Body, []byte(strings.TrimPrefix(secret, "whsec_"))) ||
		bytes.Contains(res.Body, []byte(fullSig)) || bytes.Contains(res.Body, []byte(fullSig[3:])) || bytes.Contains(res.Body, []byte("should-not-be-kept")) {
		t.Fatalf("a secret, a full signature or a credential reached the API: %s", res.Body)
	}
	var page struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	res.JSON(t, &page)
	byReason := map[string]map[string]json.RawMessage{}
	for _, it := range page.Items {
		var reason string
		_ = json.Unmarshal(it["reason"], &reason)
		byReason[reason] = it
		for _, k := range []string{"at", "reason", "ip", "headers", "size", "body_sha256"} {
			if _, ok := it[k]; !ok {
				t.Errorf("%s lacks %q: %v", reason, k, it)
			}
		}
	}
	for _, reason := range []string{"missing_signature", "bad_signature", "stale_timestamp", "too_large"} {
		if byReason[reason] == nil {
			t.Errorf("no %s recorded: %s", reason, res.Body)
		}
	}
	var skew int64
	if err := json.Unmarshal(byReason["stale_timestamp"]["skew_seconds"], &skew); err != nil || skew < 3590 || skew > 3610 {
		t.Errorf("stale skew_seconds %s", byReason["stale_timestamp"]["skew_seconds"])
	}
	if _, ok := byReason["bad_signature"]["skew_seconds"]; ok {
		t.Error("skew_seconds on a bad signature")
	}
	var size int64
	_ = json.Unmarshal(byReason["too_large"]["size"], &size)
	if size <= 1<<20 {
		t.Errorf("too_large size %d", size)
	}
	var hdrs map[string]string
	_ = json.Unmarshal(byReason["bad_signature"]["headers"], &hdrs)
	if sig := hdrs["Webhook-Signature"]; !strings.HasPrefix(sig, fullSig[:12]) || strings.Contains(sig, fullSig) {
		t.Errorf("signature header kept as %q (full %q)", sig, fullSig)
	}
	if hdrs["Webhook-Id"] != "evt-1" || hdrs["Authorization"] != "" && hdrs["Authorization"] != "[redacted]" {
		t.Errorf("headers %v", hdrs)
	}
	var ip string
	_ = json.Unmarshal(byReason["bad_signature"]["ip"], &ip)
	if ip != "127.0.0.1" {
		t.Errorf("ip %q", ip)
	}
	res = e.Do("GET", "/api/v1/sources/"+legacy.ID+"/rejections", acme.Token, nil)
	if !bytes.Contains(res.Body, []byte(`"unknown_kind"`)) {
		t.Errorf("unknown kind not recorded: %s", res.Body)
	}

	t.Log("the cap: a burst of 300 from 30 senders at once keeps at most 100")
	var wg sync.WaitGroup
	for g := range 30 {
		wg.Go(func() {
			for i := range 10 {
				req, _ := http.NewRequest("POST", e.URL+"/hooks/acme/site", strings.NewReader(fmt.Sprintf(`{"n":%d}`, g*10+i)))
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM rejections WHERE tenant_id = ? AND source_id = ?`, acme.ID, src.ID); err != nil || n != 100 {
		t.Fatalf("rows kept for the source: %d %v", n, err)
	}
	res = e.Do("GET", "/api/v1/sources/"+src.ID+"/rejections?limit=100", acme.Token, nil)
	res.JSON(t, &page)
	if len(page.Items) != 100 {
		t.Fatalf("API lists %d", len(page.Items))
	}
	res = e.Do("GET", "/api/v1/sources/"+src.ID+"/rejections?limit=5", acme.Token, nil)
	res.JSON(t, &page)
	if len(page.Items) != 5 {
		t.Fatalf("limit=5 lists %d", len(page.Items))
	}

	for _, bad := range []string{"0", "101", "x", "-1"} {
		if res := e.Do("GET", "/api/v1/sources/"+src.ID+"/rejections?limit="+bad, acme.Token, nil); res.Status != 422 ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("limit=%s: %d %s", bad, res.Status, res.Body)
		}
	}
	if res := e.Do("GET", "/api/v1/sources/"+otherSrc.ID+"/rejections", acme.Token, nil); res.Status != 404 {
		t.Errorf("another tenant's source: %d", res.Status)
	}
	if res := e.Do("GET", "/api/v1/sources/"+src.ID+"/rejections", "", nil); res.Status != 401 {
		t.Errorf("no token: %d", res.Status)
	}
}
