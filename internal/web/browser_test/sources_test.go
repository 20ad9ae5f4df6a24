package browser_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestBrowserDeadLetters: a generic source whose delivery id
// path is wrong turns deliveries into dead letters. Their headers show as
// a table; after the path is fixed, Resend on a row makes the lead;
// Discard removes the other. A badly signed request shows under Rejected
// requests with its reason (no secret on the page), and "Send a test
// delivery" answers with the endpoint's real outcome. Both widths fit.
func TestBrowserDeadLetters(t *testing.T) {
	e := browserApp(t, "ui_dead", true)
	ctx := context.Background()
	ten := e.Tenant("acme")
	good := kinds.SampleConfig(kinds.Generic)
	wrong := []byte(strings.Replace(string(good), `"$.event.id"`, `"$.event.uuid"`, 1))
	src, secret := e.Source(ten.ID, sources.CreateInput{Slug: "form", Name: "Landing form", Kind: kinds.Generic, Config: wrong})
	post := func(body []byte, h http.Header) int {
		t.Helper()
		req, _ := http.NewRequest("POST", e.URL+"/hooks/acme/form", bytes.NewReader(body))
		req.Header = h
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for i, name := range []string{"Grace Hopper", "Junk Row"} {
		id := fmt.Sprintf("evt-%d", i)
		body := kinds.SampleBody(kinds.Generic, id, fmt.Sprintf("lead-%d", i), kinds.Lead{Email: fmt.Sprintf("p%d@example.com", i), Name: name}, time.Now())
		h, b, err := kinds.Sign(kinds.Generic, wrong, secret, id, body, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if st := post(b, h); st != 422 {
			t.Fatalf("dead letter %d: %d", i, st)
		}
	}
	// A badly signed request for the inspector.
	if st := post([]byte(`{"event":{"id":"x"}}`), http.Header{"X-Signature": {"sha256=" + strings.Repeat("ab", 32)}, "Content-Type": {"application/json"}}); st != 401 {
		t.Fatalf("bad signature: %d", st)
	}
	if err := e.App.Ingest.Rejections.(*rejections.Recorder).Flush(ctx); err != nil {
		t.Fatal(err)
	}

	_, admin := adminTab(t, e, ten)
	page := "/sources/" + src.ID
	admin.open(page)
	if n := admin.count(`[data-testid="dead-letter-row"]`); n != 2 {
		t.Fatalf("%d dead letters listed", n)
	}
	if admin.count(`[data-testid="dead-letter-headers"] tr`) == 0 {
		t.Error("dead letter headers are not a table")
	}
	if got := admin.text(`[data-testid="rejection"]`); !strings.Contains(got, "Wrong signature") || !strings.Contains(got, "127.0.0.1") {
		t.Errorf("rejection reads %q", got)
	}
	if body := run(admin, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(body, secret) {
		t.Error("the source's secret is on its page")
	}
	for _, vp := range widths {
		admin.viewport(vp.w, vp.h, vp.mobile)
		admin.open(page)
		admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('[data-testid="dead-letter"], [data-testid="rejection"] details').forEach(function(d){d.open=true})`))
		admin.fitsWidth(fmt.Sprintf("%s at %d px with the dead letters open", page, vp.w))
	}
	admin.viewport(1280, 900, false)
	admin.open(page)
	admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('[data-testid="dead-letter"], [data-testid="rejection"] details').forEach(function(d){d.open=true})`))
	admin.screenshot("source-dead-letters")

	t.Log("fix the delivery id path, then Resend the first dead letter from the page")
	if _, err := e.App.Sources.Patch(ctx, ten.ID, src.ID, sources.PatchInput{Config: good}); err != nil {
		t.Fatal(err)
	}
	admin.open(page)
	// The rows are newest first: Grace Hopper's is the second.
	admin.submit(`[data-testid="dead-letter-row"]:nth-child(2) [data-testid="dl-resend"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "1 dead letter resent") {
		t.Fatalf("flash after resend %q", got)
	}
	var leadID string
	apptest.Eventually(t, 20*time.Second, "the resent dead letter's lead", func() bool {
		return e.App.DB.Get(&leadID, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND name = 'Grace Hopper'`, ten.ID, src.ID) == nil
	})
	admin.eventually(page, "the lead linked from Recent deliveries", func() bool {
		return admin.count(`a[href="/leads/`+leadID+`"]`) > 0
	})
	if n := admin.count(`[data-testid="dead-letter-row"]`); n != 1 {
		t.Errorf("%d dead letters left after the resend", n)
	}

	t.Log("discard the other one (the confirmation accepted)")
	admin.do(chromedp.Evaluate[chromedp.Void](`window.confirm = function(){ return true; }`))
	admin.submit(`[data-testid="dl-discard"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "1 dead letter discarded") {
		t.Errorf("flash after discard %q", got)
	}
	if admin.count(`[data-testid="no-dead-letters"]`) != 1 {
		t.Error("the discarded dead letter is still listed")
	}

	t.Log("send a test delivery through the real endpoint")
	admin.sendTestDelivery(e, ten.ID, `name = 'Leadpipe test delivery'`)
	admin.screenshot("source-after")
}
