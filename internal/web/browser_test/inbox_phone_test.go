package browser_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
)

// phone switches the tab to a 390×844 phone.
func (tb *tab) phone() {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
}

// screenshotViewport saves what the window shows now, at its current size
// (artifacts/screenshots/<name>.png): a sticky bar or an open menu as a
// person sees them, where a full-page capture would move them.
func (tb *tab) screenshotViewport(name string) {
	tb.t.Helper()
	buf := run(tb, chromedp.CaptureScreenshot())
	file := filepath.Join(artifactsDir(tb.t), name+".png")
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot %s", file)
}

// rect is an element's box in the viewport, nil when absent or not drawn.
func (tb *tab) rect(sel string) map[string]float64 {
	tb.t.Helper()
	res := run(tb, chromedp.Evaluate[map[string]float64](fmt.Sprintf(`(function(){
		var e = document.querySelector(%q); if (!e) return null;
		var r = e.getBoundingClientRect(); if (r.width === 0 && r.height === 0) return null;
		return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, vh: innerHeight, vw: innerWidth};
	})()`, sel)))
	return res
}

// key presses one key on whatever has the focus (the page itself when
// nothing does).
func (tb *tab) key(k string) {
	tb.t.Helper()
	tb.do(chromedp.KeyEvent(k))
}

// waitFor waits until the JavaScript expression is true.
func (tb *tab) waitFor(what, js string) {
	tb.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !run(tb, chromedp.Evaluate[bool](js)) {
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: timed out waiting for %s", tb.name, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pointerDrag drags from the center of one element to the center of
// another with real mouse events (Input.dispatchMouseEvent), which the page
// receives as pointerdown, pointermove and pointerup.
func (tb *tab) pointerDrag(fromSel, toSel string) {
	tb.t.Helper()
	from, to := tb.rect(fromSel), tb.rect(toSel)
	if from == nil || to == nil {
		tb.t.Fatalf("%s: drag %s → %s: an end is not on the page", tb.name, fromSel, toSel)
	}
	fx, fy := (from["left"]+from["right"])/2, (from["top"]+from["bottom"])/2
	tx, ty := (to["left"]+to["right"])/2, min((to["top"]+to["bottom"])/2, to["top"]+120)
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	mouse := func(typ input.DispatchMouseEventType, x, y float64, buttons int64) {
		p := input.DispatchMouseEventParams{Type: typ, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: buttons, ClickCount: 1}
		if typ == input.DispatchMouseEventTypeMouseMoved {
			p.ClickCount = 0
		}
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, p); err != nil {
			tb.t.Fatalf("%s: mouse %s: %v", tb.name, typ, err)
		}
	}
	mouse(input.DispatchMouseEventTypeMousePressed, fx, fy, 1)
	const steps = 12
	for i := 1; i <= steps; i++ {
		f := float64(i) / steps
		mouse(input.DispatchMouseEventTypeMouseMoved, fx+(tx-fx)*f, fy+(ty-fy)*f, 1)
		time.Sleep(15 * time.Millisecond)
	}
	mouse(input.DispatchMouseEventTypeMouseReleased, tx, ty, 0)
}

// TestBrowserInboxOnAPhone is the inbox at 390×844: the first lead
// is on the first screen; no bulk bar until a lead is ticked, then it
// stays in view wherever the page is scrolled; "Select all N matching"
// changes every lead the filters match (1,100 leads: three chunks of at
// most 500), not only the 50 on the page; Last seen is each lead's own.
func TestBrowserInboxOnAPhone(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_inbox_phone")
	ctx := context.Background()
	src, _ := d.e.Source(d.acme.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	const n = 1100
	if _, err := leads.Seed(ctx, d.e.App.DB, d.acme.ID, leads.SeedOptions{N: n, SourceID: src.ID, RandSeed: 28}); err != nil {
		t.Fatal(err)
	}
	// The newest lead was last seen three days ago; one lead has an overdue
	// next step.
	var newest string
	if err := d.e.App.DB.GetContext(ctx, &newest, `SELECT id FROM leads WHERE tenant_id = ? ORDER BY id DESC LIMIT 1`, d.acme.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.e.App.DB.ExecContext(ctx, `UPDATE leads SET last_seen_at = ?, next_step = 'Call back about pricing', due_at = ? WHERE tenant_id = ? AND id = ?`,
		time.Now().Add(-72*time.Hour), time.Now().Add(-2*time.Hour), d.acme.ID, newest); err != nil {
		t.Fatal(err)
	}

	_, admin := adminTab(t, d.e, d.acme)
	admin.phone()
	admin.open("/leads")
	row := admin.rect(`[data-testid="lead-row"]`)
	if row == nil || row["top"] >= 844 || row["bottom"] > 844 {
		t.Fatalf("the first lead row is at %v: not within the first 844 px", row)
	}
	if got := admin.text(`[data-lead-id="` + newest + `"] [data-testid="reltime"]`); got != "3 days ago" {
		t.Errorf("the newest lead says last seen %q, want its own last_seen_at (3 days ago)", got)
	}
	if got := admin.text(`[data-lead-id="` + newest + `"] .lead-next`); !strings.Contains(got, "Overdue") || !strings.Contains(got, "Call back about pricing") {
		t.Errorf("the phone card's next step says %q", got)
	}
	if admin.count(`[data-testid="lead-row"]:not([data-lead-id="`+newest+`"]) [data-testid="next-step-add"]`) == 0 {
		t.Error("a lead without a next step offers none to set")
	}
	if admin.rect(`[data-testid="bulk-bar"]`) != nil {
		t.Fatal("the bulk bar shows with nothing selected")
	}
	admin.screenshotViewport("inbox-first-screen-390")
	admin.screenshot("inbox-phone")

	t.Log("tick one lead, scroll to the bottom: the bulk bar is in view")
	admin.phone() // the screenshot went back to the desktop size
	admin.do(chromedp.Sleep(150 * time.Millisecond))
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="lead-row"]:nth-child(2) [data-testid="select-lead"]`), chromedp.NodeVisible))
	for _, scroll := range []string{`window.scrollTo(0, document.documentElement.scrollHeight)`, `window.scrollTo(0, 900)`} {
		admin.do(chromedp.Evaluate[chromedp.Void](scroll), chromedp.Sleep(150*time.Millisecond))
		bar := admin.rect(`[data-testid="bulk-bar"]`)
		if bar == nil || bar["top"] < 0 || bar["bottom"] > bar["vh"] || bar["right"] > bar["vw"] {
			t.Fatalf("after %s the bulk bar is at %v, outside the 390×844 viewport", scroll, bar)
		}
	}
	if got := admin.text(`[data-testid="bulk-count"]`); got != "1 selected" {
		t.Errorf("bulk count %q", got)
	}
	if got := admin.text(`[data-testid="select-matching"]`); got != "Select all 1,100 matching" {
		t.Errorf("select all says %q", got)
	}
	admin.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 1200)`))
	admin.screenshotViewport("inbox-bulk-selected-390")

	t.Log("select all matching, set Lost: every lead changes, in chunks")
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="select-matching"]`), chromedp.NodeVisible))
	admin.waitText(`[data-testid="bulk-count"]`, "All 1,100 matching selected")
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="bulk-menu"] summary`), chromedp.NodeVisible))
	admin.screenshotViewport("inbox-bulk-menu-390")
	admin.do(chromedp.Evaluate[chromedp.Void](`(function(){var s=document.querySelector('[data-testid="bulk-status"]'); s.value="lost"; s.dispatchEvent(new Event("change",{bubbles:true}));})()`))
	deadline := time.Now().Add(90 * time.Second)
	for {
		var lost int
		if err := d.e.App.DB.GetContext(ctx, &lost, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND status = 'lost'`, d.acme.ID); err != nil {
			t.Fatal(err)
		}
		if lost == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d leads lost after select all matching", lost, n)
		}
		time.Sleep(300 * time.Millisecond)
	}
	admin.waitText(`[data-testid="flash"]`, "set to Lost")
	var keys int
	if err := d.e.App.DB.GetContext(ctx, &keys, `SELECT COUNT(*) FROM idempotency_keys WHERE tenant_id = ? AND idem_key LIKE 'bulk-%' AND state = 'completed'`, d.acme.ID); err != nil {
		t.Fatal(err)
	} else if keys != 3 {
		t.Errorf("%d bulk requests, want 3 chunks of at most 500", keys)
	}
	admin.do(chromedp.EmulateViewport(1280, 900))
}

// TestBrowserTimeZone: a browser in New York signs in; its zone becomes the
// user's; a due date typed as 09:00 on a winter day is stored as 14:00Z
// and shown as 09:00 on the lead page, in the inbox and on the board. The
// zone can be changed in My settings (an unknown name is refused).
func TestBrowserTimeZone(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_tz", "Dana Scully")
	ctx := context.Background()
	browser := startBrowser(t)
	sam := newTab(t, browser, d.e.URL, "sam")
	if _, err := chromedp.Call(sam.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	sam.login("sam@acme.test", staffPassword)
	var tz string
	if err := d.e.App.DB.GetContext(ctx, &tz, `SELECT time_zone FROM users WHERE tenant_id = ? AND id = ?`, d.acme.ID, d.staff.ID); err != nil || tz != "America/New_York" {
		t.Fatalf("stored time zone %q (%v)", tz, err)
	}
	dana := d.leads["Dana Scully"]
	sam.open("/leads/" + dana)
	if got := sam.text(`[data-testid="due-zone"]`); got != "(America/New_York)" {
		t.Errorf("the due field says %q", got)
	}
	year := time.Now().Year() + 1
	sam.do(chromedp.SetValue(chromedp.CSS(`[data-testid="next-step-input"]`), "Demo call"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="due-input"]`), fmt.Sprintf("%d-01-15T09:00", year)))
	sam.submit(`[data-testid="save-next-step"]`)
	var due time.Time
	if err := d.e.App.DB.GetContext(ctx, &due, `SELECT due_at FROM leads WHERE tenant_id = ? AND id = ?`, d.acme.ID, dana); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(year, 1, 15, 14, 0, 0, 0, time.UTC); !due.Equal(want) {
		t.Fatalf("stored due %s, want %s", due.UTC(), want)
	}
	if got := run(sam, chromedp.Evaluate[string](`document.querySelector('[data-testid="due-input"]').value`)); got != fmt.Sprintf("%d-01-15T09:00", year) {
		t.Errorf("the due field shows %q", got)
	}
	if got := sam.text(`[data-testid="due"]`); !strings.Contains(got, "Jan 15") || !strings.Contains(got, "09:00") {
		t.Errorf("the due chip says %q, want Jan 15 … 09:00", got)
	}
	if got := run(sam, chromedp.Evaluate[string](`document.querySelector('[data-testid="timeline"] [data-kind="next_step_changed"]').textContent`)); !strings.Contains(got, "09:00") {
		t.Errorf("the timeline says %q", strings.Join(strings.Fields(got), " "))
	}
	sam.screenshot("lead-due-new-york")
	for _, path := range []string{"/leads?view=all", "/leads/board"} {
		sam.open(path)
		if got := sam.text(`[data-lead-id="` + dana + `"] [data-testid="due"]`); !strings.Contains(got, "09:00") {
			t.Errorf("%s shows the due date as %q", path, got)
		}
	}

	t.Log("My settings: change the zone; a bad name is refused")
	sam.open("/settings/me")
	sam.do(chromedp.SetValue(chromedp.CSS(`#f-time_zone`), "Mars/Olympus"))
	sam.submit(`[data-testid="save-timezone"]`)
	if sam.count(`[data-testid="field-error"]`) != 1 {
		t.Fatal("an unknown zone was not refused on its field")
	}
	sam.do(chromedp.SetValue(chromedp.CSS(`#f-time_zone`), "Europe/Berlin"))
	sam.submit(`[data-testid="save-timezone"]`)
	if got := sam.text(`[data-testid="flash"]`); !strings.Contains(got, "Europe/Berlin") {
		t.Fatalf("after saving: %q", got)
	}
	sam.screenshot("settings-me")
	sam.open("/leads/" + dana)
	if got := run(sam, chromedp.Evaluate[string](`document.querySelector('[data-testid="due-input"]').value`)); got != fmt.Sprintf("%d-01-15T15:00", year) {
		t.Errorf("in Berlin the due field shows %q, want 15:00", got)
	}
}

// TestBrowserKeyboard: on the inbox j/k move, x ticks, s opens the status
// and a choice applies it; ? lists the keys; on a lead's page s is the
// status, n the next step and j the next lead of the list.
func TestBrowserKeyboard(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_keys", "Dana Scully", "Fox Mulder", "Walter Skinner")
	_, admin := adminTab(t, d.e, d.acme)
	admin.open("/leads")
	// Newest first: Walter, Fox, Dana.
	admin.key("j")
	admin.key("j")
	admin.key("k")
	admin.key("j")
	fox := d.leads["Fox Mulder"]
	if got := run(admin, chromedp.Evaluate[string](`(document.querySelector("tr.is-current")||{}).getAttribute ? document.querySelector("tr.is-current").getAttribute("data-lead-id") : ""`)); got != fox {
		t.Fatalf("after j j k j the current row is %q, want Fox %q", got, fox)
	}
	admin.key("x")
	if got := admin.text(`[data-testid="bulk-count"]`); got != "1 selected" {
		t.Fatalf("after x: %q", got)
	}
	admin.key("s")
	if got := run(admin, chromedp.Evaluate[string](`document.activeElement.id`)); got != "bulk-status" {
		t.Fatalf("after s the focus is on %q", got)
	}
	// Arrows walk the statuses without applying each; Enter applies.
	admin.key(kb.ArrowDown) // New
	admin.key(kb.ArrowDown) // Contacted
	if got := d.status(fox); got != "new" {
		t.Fatalf("arrowing through the statuses already set %q", got)
	}
	func() {
		cctx, cancel := context.WithTimeout(admin.ctx, stepTimeout)
		defer cancel()
		if _, err := chromedp.Run(cctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.KeyEvent(kb.Enter))); err != nil {
			t.Fatalf("choose a status with the keyboard: %v", err)
		}
	}()
	if got := d.status(fox); got != "contacted" {
		t.Fatalf("Fox is %q after the keyboard flow", got)
	}
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "1 lead set to Contacted") {
		t.Errorf("flash %q", got)
	}
	admin.screenshot("inbox-keyboard")
	admin.key("?")
	if !run(admin, chromedp.Evaluate[bool](`document.getElementById("shortcuts").open`)) {
		t.Fatal("? does not list the shortcuts")
	}
	admin.screenshot("inbox-shortcuts")
	admin.key(kb.Escape)

	t.Log("the lead page: s, n, j")
	admin.open("/leads/" + fox)
	admin.key("s")
	if got := run(admin, chromedp.Evaluate[string](`document.activeElement.id`)); got != "f-status" {
		t.Errorf("s on the lead page focuses %q", got)
	}
	admin.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	admin.key("n")
	if got := run(admin, chromedp.Evaluate[string](`document.activeElement.id`)); got != "f-next" {
		t.Errorf("n on the lead page focuses %q", got)
	}
	admin.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	func() {
		cctx, cancel := context.WithTimeout(admin.ctx, stepTimeout)
		defer cancel()
		if _, err := chromedp.Run(cctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.KeyEvent("j"))); err != nil {
			t.Fatalf("j on the lead page: %v", err)
		}
	}()
	if loc := admin.location(); !strings.HasSuffix(loc, "/leads/"+d.leads["Dana Scully"]) {
		t.Errorf("j on Fox's page went to %s, want Dana's", loc)
	}
}

// TestBrowserBoardDrag: a card dragged with real pointer events (mouse
// down on its grip, moves, up over another column) changes the lead's
// status; a card whose lead was edited meanwhile is not moved and the board
// says so; a column loads more cards on demand.
func TestBrowserBoardDrag(t *testing.T) {
	requireChromium(t)
	var names []string // the three people last: the newest, on the first page
	for i := range 22 {
		names = append(names, fmt.Sprintf("Agent %02d", i))
	}
	names = append(names, "Dana Scully", "Fox Mulder", "Walter Skinner")
	d := newSalesDay(t, "ui_board_drag", names...)
	browser := startBrowser(t)
	sam := newTab(t, browser, d.e.URL, "sam")
	sam.login("sam@acme.test", staffPassword)
	sam.open("/leads/board")
	if got := sam.text(`[data-testid="column-new"] [data-testid="column-count"]`); got != "25" {
		t.Errorf("the New column counts %q", got)
	}
	if n := sam.count(`[data-testid="column-new"] [data-testid="card"]`); n != 20 {
		t.Fatalf("the New column shows %d cards, want 20 and Load more", n)
	}
	sam.do(chromedp.Click(chromedp.CSS(`[data-testid="column-new"] [data-testid="load-more"]`), chromedp.NodeVisible))
	sam.waitFor("the next cards", `document.querySelectorAll('[data-testid="column-new"] [data-testid="card"]').length === 25`)
	if sam.count(`[data-testid="column-new"] [data-testid="load-more"]`) != 0 {
		t.Error("Load more stays after the last card")
	}
	cursor := run(sam, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('[data-testid="card"] [data-grip]')).cursor`))
	if cursor != "grab" {
		t.Errorf("the grip's cursor is %q", cursor)
	}
	// All six columns fit 1280 px: the four worked ones wide enough for a
	// card, Won and Lost folded to their counts.
	cols := run(sam, chromedp.Evaluate[[]float64](`[document.querySelector('[data-testid="column-contacted"]').getBoundingClientRect().width, document.querySelector('[data-testid="column-lost"]').getBoundingClientRect().right]`))
	if cols[0] < 200 || cols[1] > 1280 {
		t.Errorf("a worked column is %v px wide (want at least 200) and the last ends at %v px (want within 1280)", cols[0], cols[1])
	}

	t.Log("drag Dana to Contacted by her grip")
	sam.open("/leads/board")
	d.dragToContacted(sam, "Dana Scully")
	sam.screenshot("board-dragged")

	t.Log("the drop column lights up while dragging")
	fox := d.leads["Fox Mulder"]
	func() {
		from := sam.rect(`[data-lead-id="` + fox + `"] [data-grip]`)
		to := sam.rect(`[data-testid="column-qualified"]`)
		ctx, cancel := context.WithTimeout(sam.ctx, stepTimeout)
		defer cancel()
		fx, fy := (from["left"]+from["right"])/2, (from["top"]+from["bottom"])/2
		tx, ty := (to["left"]+to["right"])/2, to["top"]+80
		for _, p := range []input.DispatchMouseEventParams{
			{Type: input.DispatchMouseEventTypeMousePressed, X: fx, Y: fy, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
			{Type: input.DispatchMouseEventTypeMouseMoved, X: fx + 20, Y: fy + 5, Button: input.MouseButtonLeft, Buttons: 1},
			{Type: input.DispatchMouseEventTypeMouseMoved, X: tx, Y: ty, Button: input.MouseButtonLeft, Buttons: 1},
		} {
			if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, p); err != nil {
				t.Fatal(err)
			}
		}
		if !run(sam, chromedp.Evaluate[bool](`document.querySelector('[data-testid="column-qualified"]').classList.contains("is-drop-target")`)) {
			t.Error("the column under the card is not highlighted")
		}
		sam.screenshotViewport("board-dragging-1280")
		sam.key(kb.Escape) // cancels the drag
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: tx, Y: ty, Button: input.MouseButtonLeft, ClickCount: 1}); err != nil {
			t.Fatal(err)
		}
	}()
	if got := d.status(fox); got != "new" {
		t.Fatalf("a cancelled drag moved Fox to %q", got)
	}

	t.Log("someone edits Walter meanwhile: the drop shows the conflict and overwrites nothing")
	walter := d.leads["Walter Skinner"]
	sam.open("/leads/board")
	res := d.e.Do("PATCH", "/api/v1/leads/"+walter, d.acme.Token, map[string]any{"status": "qualified"}, "If-Match", `"1"`)
	if res.Status != 200 {
		t.Fatalf("edit meanwhile: %d %s", res.Status, res.Body)
	}
	grip := `[data-lead-id="` + walter + `"] [data-grip]`
	sam.do(chromedp.ScrollIntoView(chromedp.CSS(grip)))
	sam.pointerDrag(grip, `[data-testid="column-unqualified"]`)
	sam.waitText(`[data-testid="flash-error"]`, "Not moved")
	if msg := sam.text(`[data-testid="flash-error"]`); !strings.Contains(msg, "changed Walter Skinner") || !strings.Contains(msg, "now Qualified") || !strings.Contains(msg, "not saved") {
		t.Errorf("conflict message %q", msg)
	}
	if got := d.status(walter); got != "qualified" {
		t.Fatalf("the stale drop overwrote: Walter is %q", got)
	}
	if sam.count(`[data-testid="column-qualified"] [data-lead-id="`+walter+`"]`) != 1 {
		t.Error("the board does not show Walter where he now is")
	}
	sam.screenshot("board-conflict")

	t.Log("without a mouse: the card's status select")
	sam.open("/leads/board")
	sam.do(chromedp.Evaluate[chromedp.Void](`(function(){var s=document.querySelector('[data-lead-id="` + fox + `"] [data-testid="move-select"]'); s.value="unqualified"; s.dispatchEvent(new Event("change",{bubbles:true}));})()`))
	sam.waitText(`[data-testid="flash"]`, "Moved Fox Mulder to Unqualified")
	if got := d.status(fox); got != "unqualified" {
		t.Fatalf("after the select Fox is %q", got)
	}

	t.Log("on a phone the board scrolls sideways inside itself, the page does not")
	sam.phoneFits("/leads/board")
	sam.phone()
	sam.open("/leads/board")
	if !run(sam, chromedp.Evaluate[bool](`(function(){var b=document.querySelector('[data-board]'); return b.scrollWidth > b.clientWidth && getComputedStyle(b).overflowX === "auto";})()`)) {
		t.Error("the board does not scroll sideways on a phone")
	}
	sam.screenshotViewport("board-phone-390")
	sam.do(chromedp.EmulateViewport(1280, 900))
}
