package browser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// TestBrowserTimeline: a sender that retries three deliveries over and over
// is no news to sales: the timeline, the inbox and the board say nothing of
// it. Under the lead page's collapsed "Technical details" it is one "N
// repeats · last …" row that opens to show each delivery, beside the
// lead's sightings ("Received 12× · 3 deliveries, 9 repeats", times_seen =
// deliveries + repeats) and the raw payload, folded until asked for;
// people's entries (a status change, a note) stand out from the sender's.
func TestBrowserTimeline(t *testing.T) {
	e := browserApp(t, "ui_timeline", true)
	ctx := context.Background()
	acme := e.Tenant("acme")
	src, hook := e.SourceHook(acme, sources.CreateInput{Slug: "website", Name: "Website contact form", Kind: "standard"})
	dana := kinds.Lead{Name: "Dana Scully", Email: "dana@fbi.example", Company: "FBI", Phone: "+1 202 555 0101"}
	for _, id := range []string{"evt-a", "evt-b", "evt-c"} {
		if st := hook.Post(id, "contact-1", dana); st != 200 {
			t.Fatalf("webhook %s: %d", id, st)
		}
	}
	var leadID string
	deadline := time.Now().Add(20 * time.Second)
	for e.App.DB.GetContext(ctx, &leadID, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ? AND times_seen = 3`,
		acme.ID, src.ID, "contact-1") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the three deliveries were never processed")
		}
		time.Sleep(100 * time.Millisecond)
	}

	_, admin := adminTab(t, e, acme)
	admin.open("/leads/" + leadID)
	admin.choose(`#f-status`, "contacted")
	admin.do(chromedp.SendKeys(chromedp.CSS(`#f-body`), "Called Dana, left a voicemail.", chromedp.NodeVisible))
	admin.submit(`[data-testid="add-note"]`)

	t.Log("the sender retries all three: 3 + 2 + 4 repeats")
	const sightings = "Received 12× · 3 deliveries, 9 repeats"
	for id, n := range map[string]int{"evt-a": 3, "evt-b": 2, "evt-c": 4} {
		for range n {
			if st := hook.Post(id, "contact-1", dana); st != 200 {
				t.Fatalf("re-post %s: %d", id, st)
			}
		}
	}
	admin.eventually("/leads/"+leadID, "one collapsed duplicate row in the technical details", func() bool {
		return admin.count(`[data-testid="technical-details"] [data-testid="technical-item"][data-kind="duplicate"]`) == 1 &&
			strings.Contains(admin.liveText(`[data-testid="duplicate-summary"]`), "9 repeats") &&
			admin.liveText(`[data-testid="lead-sightings"]`) == sightings
	})
	if n := admin.count(`[data-testid="timeline-item"][data-kind="duplicate"]`); n != 0 {
		t.Errorf("the timeline shows %d repeat rows, want none", n)
	}
	if got := admin.liveText(`[data-testid="technical-item"][data-kind="duplicate"] .timeline-text`); !strings.Contains(got, "of 3 deliveries from Website contact form") {
		t.Errorf("duplicate row says %q", got)
	}
	var seen int
	if err := e.App.DB.GetContext(ctx, &seen, `SELECT times_seen FROM leads WHERE tenant_id = ? AND id = ?`, acme.ID, leadID); err != nil || seen != 12 {
		t.Fatalf("times_seen %d (%v), want 12 = 3 deliveries + 9 repeats", seen, err)
	}
	t.Log("the inbox and the board say nothing of the retries")
	admin.open("/leads?view=all")
	if got := admin.text(`[data-lead-id="` + leadID + `"]`); strings.Contains(got, "Received") || strings.Contains(got, "repeat") {
		t.Errorf("inbox row says %q", got)
	}
	admin.screenshot("sightings-inbox")
	admin.open("/leads/board")
	if got := admin.text(`[data-lead-id="` + leadID + `"]`); strings.Contains(got, "Received") || strings.Contains(got, "repeat") {
		t.Errorf("board card says %q", got)
	}
	admin.screenshot("sightings-board")
	admin.open("/leads/" + leadID)
	if run(admin, chromedp.Evaluate[bool](`document.querySelector('[data-testid="technical-details"]').open`)) {
		t.Error("the technical details are open by default")
	}
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="technical-details"] > summary`), chromedp.NodeVisible))
	if got := admin.text(`[data-testid="duplicate-summary"]`); !strings.Contains(got, "last") {
		t.Errorf("duplicate row says %q, want the last arrival", got)
	}
	if run(admin, chromedp.Evaluate[bool](`document.querySelector('[data-testid="duplicate-group"]').open`)) {
		t.Error("the duplicate row is open by default")
	}
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="duplicate-group"] summary`), chromedp.NodeVisible))
	if n := run(admin, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="duplicate-item"]')].filter(li => li.checkVisibility()).length`)); n != 3 {
		t.Errorf("opened duplicate row shows %d deliveries, want 3", n)
	}
	if got := admin.text(`[data-testid="duplicate-items"]`); !strings.Contains(got, "4 repeats") || !strings.Contains(got, "evt-c") {
		t.Errorf("duplicate details %q", got)
	}

	t.Log("people's entries stand out from the sender's")
	if n := admin.count(`[data-testid="timeline-item"][data-human="true"]`); n != 2 {
		t.Errorf("%d human entries, want the status change and the note", n)
	}
	look := func(sel string) string {
		return run(admin, chromedp.Evaluate[string](`(function(){var b=document.querySelector('`+sel+` .timeline-body');var s=getComputedStyle(b);return s.backgroundColor+"|"+s.borderLeftWidth;})()`))
	}
	if h, s := look(`[data-kind="note_added"]`), look(`[data-kind="delivery"]`); h == s {
		t.Errorf("a note looks like a delivery: %s", h)
	}

	t.Log("the raw payload is folded")
	if run(admin, chromedp.Evaluate[bool](`document.querySelector('[data-testid="payload-details"]').open || document.querySelector('[data-testid="payload"]').checkVisibility()`)) {
		t.Error("the raw payload is open by default")
	}
	admin.screenshot("lead-timeline")
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="payload-details"] summary`), chromedp.NodeVisible))
	if !strings.Contains(admin.text(`[data-testid="payload"]`), "dana@fbi.example") {
		t.Error("the opened payload does not show the record")
	}
	admin.phoneFits("/leads/" + leadID)
}
