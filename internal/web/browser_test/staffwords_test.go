package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// plumbingWords are an admin's words: a staff page shows none of them
// outside the lead page's collapsed "Technical details".
var plumbingWords = []string{"repeat", "delivery", "deliveries", "payload", "signature"}

// wordsOutsideTechnical lists the plumbing words and sender ids the page's
// text holds outside [data-technical].
func (tb *tab) wordsOutsideTechnical(ids []string) []string {
	tb.t.Helper()
	text := run(tb, chromedp.Evaluate[string](`(function(){
		var c = document.body.cloneNode(true);
		c.querySelectorAll("[data-technical], script").forEach(function(e){ e.remove(); });
		return c.textContent.toLowerCase();
	})()`))
	var found []string
	for _, w := range append(plumbingWords, ids...) {
		if strings.Contains(text, strings.ToLower(w)) {
			found = append(found, w)
		}
	}
	return found
}

// smallTargets measures every interactive element the page draws and
// returns those a thumb would miss: a target passes at 44×44 px or more,
// or at 24×24 px or more with 8 px clear of every other target (WCAG
// 2.5.8's spacing). A link inside a sentence is exempt (WCAG's inline
// exception), as is what is not drawn (closed menus, hidden bars) or lies
// under the sticky bulk bar for now.
func (tb *tab) smallTargets() []string {
	tb.t.Helper()
	return run(tb, chromedp.Evaluate[[]string](`(function(){
		var sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])';
		var els = Array.prototype.filter.call(document.querySelectorAll(sel), function(e){
			if (e.closest("[hidden], .skip-link")) return false;
			var r = e.getBoundingClientRect(), cs = getComputedStyle(e);
			if (r.width === 0 || r.height === 0 || cs.visibility === "hidden" || !e.checkVisibility()) return false;
			// Under a sticky bar: not a target now (it scrolls out from under it).
			var x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
			if (x >= 0 && y >= 0 && x < innerWidth && y < innerHeight) {
				var top = document.elementFromPoint(x, y);
				if (top && !e.contains(top) && !top.contains(e) && top.closest(".bulk-bar, .flash-area")) return false;
			}
			return true;
		});
		var rects = els.map(function(e){ return e.getBoundingClientRect(); });
		function inline(e){
			var p = e.parentElement;
			return e.tagName === "A" && getComputedStyle(e).display === "inline" && p &&
				p.textContent.trim().length > e.textContent.trim().length + 3;
		}
		var bad = [];
		els.forEach(function(e, i){
			var r = rects[i];
			if (r.width >= 43.5 && r.height >= 43.5) return;
			if (inline(e)) return;
			if (r.width >= 23.5 && r.height >= 23.5) {
				var clear = rects.every(function(o, j){
					if (j === i || els[j].contains(e) || e.contains(els[j])) return true;
					var dx = Math.max(o.left - r.right, r.left - o.right, 0), dy = Math.max(o.top - r.bottom, r.top - o.bottom, 0);
					return Math.hypot(dx, dy) >= 8;
				});
				if (clear) return;
			}
			var name = (e.getAttribute("data-testid") || e.getAttribute("aria-label") || e.textContent || e.name || "").trim().replace(/\s+/g, " ").slice(0, 40);
			bad.push(e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ")[0] : "") + " \"" + name + "\" " + Math.round(r.width) + "×" + Math.round(r.height));
		});
		return bad;
	})()`))
}

// TestBrowserStaffPagesSpeakSales is the sales day at 390 and 1280 px as
// a staff user: no plumbing words or sender ids outside "Technical
// details"; thumb-sized targets on a phone; inbox rows at most 48 px and
// all six board columns at 1280 px; "Select all N matching" selects N ids;
// a duplicate pair the rep owns merged from the list in two clicks; quick
// due dates and "and assign to me"; 403 "Admins only" on an admin page.
func TestBrowserStaffPagesSpeakSales(t *testing.T) {
	requireChromium(t)
	d := newSalesDayWith(t, "ui_staff_words", apptest.Options{RedisDB: apptest.RedisUI, Worker: true})
	ctx := context.Background()
	db := d.e.App.DB
	src, secret := d.e.Source(d.acme.ID, sources.CreateInput{Slug: "checkout", Name: "Checkout (Stripe-style signature)", Kind: "standard"})
	if _, err := leads.Seed(ctx, db, d.acme.ID, leads.SeedOptions{N: 60, SourceID: src.ID, RandSeed: 44}); err != nil {
		t.Fatal(err)
	}
	hook := d.e.Hook("acme", "checkout", kinds.Standard, secret)
	leadOf := func(ref string) string {
		var id string
		deadline := time.Now().Add(20 * time.Second)
		for db.GetContext(ctx, &id, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ?`, d.acme.ID, src.ID, ref) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("lead %s never stored", ref)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return id
	}
	// A sender's retry: one delivery twice (a repeat), the lead Sam's.
	const ref, evt = "lead-1796000-198", "evt-1796000-198"
	for range 2 {
		if st := hook.Post(evt, ref, kinds.Lead{Name: "Riley Retry", Email: "riley@retry.example", Company: "Retry Works"}); st != 200 {
			t.Fatalf("webhook: %d", st)
		}
	}
	retried := leadOf(ref)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var seen int
		_ = db.GetContext(ctx, &seen, `SELECT times_seen FROM leads WHERE tenant_id = ? AND id = ?`, d.acme.ID, retried)
		if seen == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retry was never counted (times_seen %d)", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A pair Sam owns with the same email: the older one he contacted.
	older := d.addLead("Dana Scully", "dana@fbi.example", "FBI")
	time.Sleep(5 * time.Millisecond)
	newer := d.addLead("Dana K. Scully", "DANA@fbi.example", "FBI Field Office")
	// An unassigned lead to pick up.
	open := d.addLead("Una Assigned", "una@example.test", "Nobody Inc")
	if _, err := db.ExecContext(ctx, `UPDATE leads SET owner_id = ? WHERE tenant_id = ? AND id IN (?, ?, ?)`, d.staff.ID, d.acme.ID, retried, older, newer); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE leads SET owner_id = ?, status = 'contacted', next_step = 'Send the pricing sheet', due_at = ? WHERE tenant_id = ? AND id = ?`,
		d.staff.ID, time.Now().Add(-2*time.Hour), d.acme.ID, older); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE leads SET owner_id = ? WHERE tenant_id = ? AND id IN (SELECT id FROM (SELECT id FROM leads WHERE tenant_id = ? AND owner_id IS NULL ORDER BY id LIMIT 30) t)`,
		d.staff.ID, d.acme.ID, d.acme.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE leads SET owner_id = NULL, status = 'new' WHERE tenant_id = ? AND id = ?`, d.acme.ID, open); err != nil {
		t.Fatal(err)
	}
	// Three of Sam's leads a rule gave him an hour ago, unanswered.
	if _, err := db.ExecContext(ctx, `UPDATE leads SET assigned_at = ?, first_response_due_at = ? WHERE tenant_id = ? AND owner_id = ? AND status = 'new' AND id <> ? ORDER BY id LIMIT 3`,
		time.Now().Add(-time.Hour), time.Now().Add(-30*time.Minute), d.acme.ID, d.staff.ID, retried); err != nil {
		t.Fatal(err)
	}
	senderIDs := []string{ref, evt}

	browser := startBrowser(t)
	sam := newTab(t, browser, d.e.URL, "sam")
	sam.login("sam@acme.test", staffPassword)

	pages := []struct{ name, path string }{
		{"inbox", "/leads"},
		{"inbox-all", "/leads?view=all"},
		{"inbox-first-reply-overdue", "/leads?view=overdue"},
		{"inbox-duplicates", "/leads?view=duplicates"},
		{"board", "/leads/board"},
		{"lead-retried", "/leads/" + retried},
		{"lead-dana", "/leads/" + older},
		{"merge-picker", "/leads/" + older + "/merge?with=" + newer},
		{"new-lead", "/leads/new"},
	}
	for _, w := range widths {
		for _, p := range pages {
			sam.viewport(w.w, w.h, w.mobile)
			if st := sam.open(p.path); st != http.StatusOK {
				t.Fatalf("%s: %d", p.path, st)
			}
			if found := sam.wordsOutsideTechnical(senderIDs); len(found) > 0 {
				t.Errorf("%s at %d px shows %q outside Technical details", p.path, w.w, found)
			}
			sam.fitsWidth(p.path)
		}
	}
	sam.viewport(1280, 900, false)
	for _, p := range pages {
		sam.open(p.path)
		sam.screenshot("staff-" + p.name)
	}

	t.Log("the technical details keep what support needs, collapsed")
	sam.open("/leads/" + retried)
	if run(sam, chromedp.Evaluate[bool](`document.querySelector('[data-testid="technical-details"]').open`)) {
		t.Error("Technical details are open by default")
	}
	sam.do(chromedp.Click(chromedp.CSS(`[data-testid="technical-details"] > summary`), chromedp.NodeVisible))
	if got := sam.text(`[data-testid="technical-details"]`); !strings.Contains(got, ref) || !strings.Contains(got, evt) || !strings.Contains(got, "1 repeat") ||
		!strings.Contains(got, "Checkout (Stripe-style signature)") {
		t.Errorf("technical details say %q", got)
	}
	if got := sam.text(`.lead-sub`); !strings.Contains(got, "Checkout") || strings.Contains(got, "Stripe") {
		t.Errorf("the lead's source reads %q, want the plain name", got)
	}

	t.Log("every control a thumb uses at 390 px is big enough")
	sam.viewport(390, 844, true)
	for _, p := range []string{"/leads", "/leads?view=duplicates", "/leads/" + older, "/leads/board"} {
		sam.open(p)
		if bad := sam.smallTargets(); len(bad) > 0 {
			t.Errorf("%s at 390 px: %d targets too small: %s", p, len(bad), strings.Join(bad, "; "))
		}
	}
	sam.open("/leads")
	sam.do(chromedp.Click(chromedp.CSS(`[data-testid="lead-row"] [data-testid="select-lead"]`), chromedp.NodeVisible))
	if bad := sam.smallTargets(); len(bad) > 0 {
		t.Errorf("/leads at 390 px with a lead ticked (the bulk bar): %d targets too small: %s", len(bad), strings.Join(bad, "; "))
	}
	sam.screenshotViewport("staff-inbox-bulk-390")
	sam.viewport(1280, 900, false)

	t.Log("dense rows at 1280 px, the whole board")
	for _, p := range []string{"/leads", "/leads?view=all", "/leads?view=overdue"} {
		sam.open(p)
		if sam.count(`[data-testid="lead-row"]`) == 0 {
			t.Fatalf("%s lists no leads", p)
		}
		h := run(sam, chromedp.Evaluate[float64](`Math.max.apply(null, Array.prototype.map.call(document.querySelectorAll('[data-testid="lead-row"]'), function(r){ return r.getBoundingClientRect().height; }))`))
		if h > 48 {
			t.Errorf("%s: a row is %.1f px tall at 1280 px, want at most 48", p, h)
		}
		t.Logf("%s: the tallest row is %.1f px at 1280 px", p, h)
	}
	sam.open("/leads/board")
	cols := run(sam, chromedp.Evaluate[[]float64](`Array.prototype.map.call(document.querySelectorAll('.board-col'), function(c){ return c.getBoundingClientRect().right; })`))
	if len(cols) != 6 {
		t.Fatalf("%d board columns", len(cols))
	}
	t.Logf("board columns end at %v px", cols)
	for i, right := range cols {
		if right > 1280 {
			t.Errorf("board column %d ends at %.0f px, past 1280", i+1, right)
		}
	}
	if got := sam.text(`[data-testid="column-won"] [data-testid="column-count"]`); got == "" {
		t.Error("the folded Won column shows no count")
	}
	sam.do(chromedp.Click(chromedp.CSS(`[data-testid="fold-won"] > summary`), chromedp.NodeVisible))
	if !run(sam, chromedp.Evaluate[bool](`document.querySelector('[data-testid="fold-won"]').open`)) {
		t.Error("the Won toggle does not open its cards")
	}
	boardTop := run(sam, chromedp.Evaluate[float64](`document.querySelector("[data-board]").getBoundingClientRect().top`))
	sam.do(chromedp.Evaluate[chromedp.Void](`(function(){var s=document.querySelector('[data-testid="column-new"] [data-testid="move-select"]'); s.value="qualified"; s.dispatchEvent(new Event("change",{bubbles:true}));})()`))
	sam.waitText(`[data-testid="flash"]`, "Moved")
	if top := run(sam, chromedp.Evaluate[float64](`document.querySelector("[data-board]").getBoundingClientRect().top`)); top != boardTop {
		t.Errorf("the flash after a move pushed the board from %.0f to %.0f px", boardTop, top)
	}
	sam.screenshotViewport("staff-board-moved-1280")

	t.Log("\"Select all N matching\" selects N ids")
	for _, p := range []string{"/leads?view=duplicates", "/leads?view=all"} {
		sam.open(p)
		sam.do(chromedp.Click(chromedp.CSS(`[data-testid="lead-row"] [data-testid="select-lead"]`), chromedp.NodeVisible))
		matching := run(sam, chromedp.Evaluate[string](`document.querySelector('[data-testid="select-matching"]').dataset.matching`))
		ids := run(sam, chromedp.Evaluate[int](`(async function(){
			var q = document.querySelector("[data-bulk-form]").dataset.query, n = 0, cursor = "";
			for (;;) {
				var res = await fetch("/leads/ids?" + q + (cursor ? "&cursor=" + cursor : ""), {headers: {Accept: "application/json"}});
				var body = await res.json(); n += body.ids.length;
				if (!body.next_cursor) return n;
				cursor = body.next_cursor;
			}
		})()`, chromedp.EvalAwaitPromise))
		if matching != fmt.Sprint(ids) {
			t.Errorf("%s: \"Select all\" says %s matching, the ids behind it are %d", p, matching, ids)
		}
		listed := sam.count(`[data-testid="lead-row"]`)
		if p == "/leads?view=duplicates" && fmt.Sprint(listed) != matching {
			t.Errorf("the duplicates view lists %d leads and counts %s", listed, matching)
		}
	}

	t.Log("a duplicate pair Sam owns, merged from the list in two clicks")
	sam.open("/leads?view=duplicates")
	group := fmt.Sprintf(`[data-testid="dup-group"]:has([data-lead-id="%s"])`, older)
	if got := sam.text(group + ` [data-testid="dup-reason"]`); got != "Same email" {
		t.Errorf("the pair's reason is %q", got)
	}
	sam.submit(group + ` [data-testid="dup-merge"]`) // click 1
	if loc := sam.location(); !strings.Contains(loc, "/leads/"+older+"/merge?with="+newer) {
		t.Fatalf("Merge opened %s, want the contacted lead kept", loc)
	}
	if n := sam.count(`[data-testid="pick-email"]`); n != 0 {
		t.Error("the picker offers the email both leads share")
	}
	if got := sam.text(`[data-testid="pick-company"]`); !strings.Contains(got, "FBI Field Office") || !strings.Contains(got, "Added by hand · ") {
		t.Errorf("the company choices read %q, want each value with its source and date", got)
	}
	sam.screenshot("staff-merge-picker-pair")
	sam.submit(`[data-testid="merge-submit"]`) // click 2
	if loc := sam.location(); !strings.HasSuffix(loc, "/leads/"+older) {
		t.Fatalf("after the merge at %s", loc)
	}
	var into string
	if err := db.GetContext(ctx, &into, `SELECT COALESCE(merged_into, '') FROM leads WHERE tenant_id = ? AND id = ?`, d.acme.ID, newer); err != nil || into != older {
		t.Fatalf("the newer lead is merged into %q (%v), want %s", into, err, older)
	}

	t.Log("quick due dates, in Sam's zone")
	sam.submit(`[data-testid="quick-tomorrow"]`)
	if got := run(sam, chromedp.Evaluate[string](`document.querySelector('[data-testid="due-input"]').value`)); !strings.HasSuffix(got, "T09:00") {
		t.Errorf("Tomorrow 09:00 saved due %q", got)
	}

	t.Log("a status change on an unassigned lead takes it")
	sam.open("/leads/" + open)
	if !run(sam, chromedp.Evaluate[bool](`document.querySelector('[data-testid="status-assign-me-input"]').checked`)) {
		t.Error("\"and assign to me\" is not offered ticked")
	}
	sam.screenshot("staff-lead-unassigned")
	sam.choose(`#f-status`, "contacted")
	var owner string
	if err := db.GetContext(ctx, &owner, `SELECT COALESCE(owner_id, '') FROM leads WHERE tenant_id = ? AND id = ?`, d.acme.ID, open); err != nil || owner != d.staff.ID {
		t.Errorf("after the status change the owner is %q (%v), want Sam", owner, err)
	}

	t.Log("an admin page says Admins only, with a way back")
	if st := sam.open("/sources"); st != http.StatusForbidden || sam.text(`[data-testid="error-page"] h1`) != "Admins only" ||
		sam.count(`[data-testid="error-page"] a[href="/leads"]`) != 1 {
		t.Errorf("staff on /sources: %d %q", st, sam.text(`[data-testid="error-page"]`))
	}
	sam.screenshot("staff-admins-only")
}
