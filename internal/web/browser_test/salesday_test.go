package browser_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor/monitortest"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

// salesDay is a tenant with an admin, a staff member and a few leads made
// through the API, the way a salesperson finds them in the morning.
type salesDay struct {
	e     *apptest.Env
	acme  apptest.Tenant
	staff tenants.User
	leads map[string]string // name → id
}

const staffPassword = "sam-staff-password"

func newSalesDay(t *testing.T, prefix string, names ...string) *salesDay {
	t.Helper()
	return newSalesDayWith(t, prefix, apptest.Options{RedisDB: apptest.RedisUI}, names...)
}

func newSalesDayWith(t *testing.T, prefix string, opts apptest.Options, names ...string) *salesDay {
	t.Helper()
	e := apptest.New(t, prefix, opts)
	acme := e.Tenant("acme")
	staff, err := e.App.Tenants.CreateUser(context.Background(), acme.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam Rivera",
		Password: staffPassword, Role: tenants.RoleStaff})
	if err != nil {
		t.Fatal(err)
	}
	d := &salesDay{e: e, acme: acme, staff: staff, leads: map[string]string{}}
	for i, n := range names {
		d.addLead(n, fmt.Sprintf("%s@example.test", strings.ToLower(strings.ReplaceAll(n, " ", "."))), fmt.Sprintf("Company %d", i))
	}
	return d
}

func (d *salesDay) addLead(name, email, company string) string {
	d.e.T.Helper()
	res := d.e.Do("POST", "/api/v1/leads", d.acme.Token, map[string]any{"name": name, "email": email, "company": company},
		"Idempotency-Key", "lead-"+name)
	if res.Status != 201 {
		d.e.T.Fatalf("create lead %s: %d %s", name, res.Status, res.Body)
	}
	var l struct{ ID string }
	res.JSON(d.e.T, &l)
	d.leads[name] = l.ID
	return l.ID
}

func (d *salesDay) status(id string) string {
	d.e.T.Helper()
	var st string
	if err := d.e.App.DB.GetContext(context.Background(), &st, `SELECT status FROM leads WHERE tenant_id = ? AND id = ?`, d.acme.ID, id); err != nil {
		d.e.T.Fatal(err)
	}
	return st
}

// dragToContacted drags the named lead's card by its grip onto the
// Contacted column of the board open in tb, and checks the move: the
// flash names it, the lead is contacted, its card is in the column, and
// the page swapped in place rather than reloading. It returns the lead's id.
func (d *salesDay) dragToContacted(tb *tab, name string) string {
	tb.t.Helper()
	id := d.leads[name]
	tb.do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	grip := `[data-lead-id="` + id + `"] [data-grip]`
	tb.do(chromedp.ScrollIntoView(chromedp.CSS(grip)))
	tb.pointerDrag(grip, `[data-testid="column-contacted"]`)
	tb.waitText(`[data-testid="flash"]`, "Moved "+name+" to Contacted")
	if got := d.status(id); got != "contacted" {
		tb.t.Fatalf("after the drop %s is %q", name, got)
	}
	if !run(tb, chromedp.Evaluate[bool](`window.__sameDocument === true`)) {
		tb.t.Error("the drop reloaded the page instead of swapping it")
	}
	if tb.count(`[data-testid="column-contacted"] [data-lead-id="`+id+`"]`) != 1 {
		tb.t.Fatalf("%s's card is not in the Contacted column", name)
	}
	return id
}

// waitText waits until the element's text contains want.
func (tb *tab) waitText(sel, want string) {
	tb.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := run(tb, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||""`, sel)))
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: %s says %q, want %q", tb.name, sel, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserBoardMoves: a card dragged to another column changes the
// lead's status in place (htmx, no reload), the confirmation names the
// lead and Undo moves it back; the card's status select does the same
// from the keyboard.
func TestBrowserBoardMoves(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_board", "Dana Scully", "Fox Mulder", "Walter Skinner")
	browser := startBrowser(t)
	sam := newTab(t, browser, d.e.URL, "sam")
	sam.login("sam@acme.test", staffPassword)
	sam.open("/leads/board")
	if n := sam.count(`[data-testid="column-new"] [data-testid="card"]`); n != 3 {
		t.Fatalf("new column has %d cards", n)
	}
	sam.screenshot("board")

	t.Log("drag Dana to Contacted")
	dana := d.dragToContacted(sam, "Dana Scully")
	// The focus moves on htmx:afterSettle, a moment after the swap that
	// showed the flash: wait for it (a busy machine settles later).
	focused := ""
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		focused = run(sam, chromedp.Evaluate[string](`document.activeElement && document.activeElement.getAttribute("data-testid") || ""`))
		if focused == "undo" || time.Now().After(deadline) {
			break
		}
	}
	if focused != "undo" {
		t.Errorf("focus after the move is on %q, want the Undo button", focused)
	}
	sam.screenshot("board-moved")

	t.Log("Undo puts her back")
	sam.submit(`[data-testid="undo"]`)
	sam.waitText(`[data-testid="flash"]`, "Moved Dana Scully back to New")
	if got := d.status(dana); got != "new" {
		t.Fatalf("after Undo the lead is %q", got)
	}
	if sam.count(`[data-testid="undo"]`) != 0 {
		t.Error("an undo offers another undo")
	}

	t.Log("keyboard: the card's status select → Qualified")
	fox := d.leads["Fox Mulder"]
	sam.do(chromedp.Focus(chromedp.CSS(`[data-lead-id="` + fox + `"] [data-testid="move-select"]`)))
	sam.do(chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown)) // New → Contacted → Qualified, not yet saved
	if got := d.status(fox); got != "new" {
		t.Fatalf("arrowing through the statuses moved the card to %q", got)
	}
	sam.do(chromedp.KeyEvent(kb.Enter))
	sam.waitText(`[data-testid="flash"]`, "Moved Fox Mulder to Qualified")
	if got := d.status(fox); got != "qualified" {
		t.Fatalf("after the keyboard move the lead is %q", got)
	}
}

// phoneFits opens path on a 390 px phone and fails unless the page fits
// its width (pageFits).
func (tb *tab) phoneFits(path string) {
	tb.t.Helper()
	tb.pageFits(path, 390, 844, true)
}

// pageFits opens path at a width and fails unless the page fits it:
// document.documentElement.scrollWidth <= innerWidth, and no table hides
// columns past its scrolling frame (.table-wrap; on a phone a table's rows
// become cards, components.CardTable). It names the elements that stick
// out.
func (tb *tab) pageFits(path string, w, h int64, mobile bool) {
	tb.t.Helper()
	tb.viewport(w, h, mobile)
	defer tb.do(chromedp.EmulateViewport(1280, 900))
	tb.open(path)
	tb.do(chromedp.Sleep(150 * time.Millisecond))
	res := run(tb, chromedp.Evaluate[map[string]any](`(function(){
		var w = window.innerWidth, sw = document.documentElement.scrollWidth, out = [];
		if (sw > w) {
			var all = document.querySelectorAll("body *");
			for (var i = 0; i < all.length && out.length < 8; i++) {
				var r = all[i].getBoundingClientRect();
				if (r.right > w + 0.5 && r.width > 0) out.push(all[i].tagName.toLowerCase() + "." + (all[i].className.baseVal !== undefined ? all[i].className.baseVal : all[i].className) + " right=" + Math.round(r.right));
			}
		}
		var cut = [];
		document.querySelectorAll(".table-wrap").forEach(function(e){
			if (e.scrollWidth > e.clientWidth + 1) cut.push((e.getAttribute("aria-label") || e.querySelector("table").className) + " " + e.scrollWidth + ">" + e.clientWidth);
		});
		return {w: w, sw: sw, out: out.join("; "), cut: cut.join("; ")};
	})()`))
	iw, sw := res["w"].(float64), res["sw"].(float64)
	if sw > iw {
		tb.t.Errorf("%s at %d px: scrollWidth %v > innerWidth %v; sticking out: %v", path, w, sw, iw, res["out"])
	}
	if cut := res["cut"].(string); cut != "" {
		tb.t.Errorf("%s at %d px: tables wider than their frame (columns cut off): %s", path, w, cut)
	}
}

// TestBrowserEveryPage opens every page as an admin, at 390 and 1280 px
// (nothing may stick out sideways, no table may hide columns), and saves
// screenshots at both (artifacts/screenshots/page-*.png). The pages hold
// what makes them wide: long names and slugs, an endpoint with a long URL
// whose first answer failed with a long body, a generic source's mapping,
// a Typeform source's pull settings.
func TestBrowserEveryPage(t *testing.T) {
	requireChromium(t)
	d := newSalesDayWith(t, "ui_pages", apptest.Options{RedisDB: apptest.RedisUI, Worker: true})
	ctx := context.Background()
	// An endpoint subscribed before the leads exist, so their lead.created
	// events have attempts: the first fails with a long answer.
	recv := &hookReceiver{}
	hooks := httptest.NewServer(recv)
	t.Cleanup(hooks.Close)
	res := d.e.Do("POST", "/api/v1/endpoints", d.acme.Token, map[string]any{
		"url":    hooks.URL + "/integrations/leadpipe/a-rather-long-path-for-the-crm-sync-endpoint?tenant=acme-corporation&region=eu-west-1",
		"events": []string{"lead.created", "lead.updated", "lead.status_changed", "alert.fired"}})
	if res.Status != 201 {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	var ep struct{ ID string }
	res.JSON(t, &ep)
	for i, n := range []string{"Dana Scully", "Fox Mulder", "Walter Skinner", "Monica Reyes-Villanueva de la Cruz Longname"} {
		d.addLead(n, fmt.Sprintf("%s@example.test", strings.ToLower(strings.ReplaceAll(n, " ", "."))), fmt.Sprintf("Company %d", i))
	}
	apptest.Eventually(t, 30*time.Second, "the endpoint's first attempts", func() bool { return recv.count() >= 2 })
	var eventID string
	if err := d.e.App.DB.GetContext(ctx, &eventID, `SELECT id FROM events WHERE tenant_id = ? ORDER BY sequence LIMIT 1`, d.acme.ID); err != nil {
		t.Fatal(err)
	}
	gen, _, err := d.e.App.Sources.Create(ctx, d.acme.ID, sources.CreateInput{Slug: "partner-feed", Name: "Partner feed (generic HMAC)", Kind: kinds.Generic,
		Config: kinds.SampleConfig(kinds.Generic)})
	if err != nil {
		t.Fatal(err)
	}
	base, tok, form := "https://api.typeform.com", "tfp_example", "a1B2c3D4"
	tf, _, err := d.e.App.Sources.Create(ctx, d.acme.ID, sources.CreateInput{Slug: "demo-request", Name: "Typeform demo request", Kind: "typeform",
		Reconcile: &sources.ReconcileInput{BaseURL: &base, AccessToken: &tok, FormID: &form}})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := d.e.Source(d.acme.ID, sources.CreateInput{Slug: "website-contact-form-with-a-long-slug", Name: "Website contact form", Kind: "standard"})
	fb, _ := d.e.Source(d.acme.ID, sources.CreateInput{Slug: "fb", Name: "Facebook Lead Ads", Kind: "meta", VerifyToken: "verify-me"})
	// A Meta lead as its webhook leaves it: only ids (this source has no
	// access token to fetch the rest).
	metaID, _, err := leads.UpsertFromSender(ctx, d.e.App.DB, d.acme.ID, fb.ID, leads.SenderRecord{SourceRef: "987654321012345",
		Payload: []byte(`{"leadgen_id":"987654321012345","form_id":"560000000000001","page_id":"101","created_time":1764580000}`), Sightings: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A retry storm so /alerts and the chart have something to show.
	mon := d.e.App.Web.Monitor
	now := time.Now().UTC().Truncate(time.Minute)
	stormFrom := now.Add(-10 * time.Minute)
	monitortest.Traffic{TenantID: d.acme.ID, SourceID: src.ID, PerMinute: 12, DupRate: 0.02, Seed: 1}.Add(d.e.App.Stats, now.Add(-24*time.Hour), stormFrom)
	monitortest.Traffic{TenantID: d.acme.ID, SourceID: src.ID, PerMinute: 40, DupRate: 0.40, Seed: 2}.Add(d.e.App.Stats, stormFrom, now)
	evaluateEachMinute(t, mon, stormFrom, now)

	browser := startBrowser(t)
	anon := newTab(t, browser, d.e.URL, "anonymous")
	for _, vp := range widths {
		anon.pageFits("/login", vp.w, vp.h, vp.mobile)
	}
	anon.screenshot("page-login")

	admin := newTab(t, browser, d.e.URL, "admin")
	admin.login(d.acme.Admin.Email, d.acme.AdminPassword)
	pages := []struct{ name, path string }{
		{"inbox", "/leads"},
		{"board", "/leads/board"},
		{"lead", "/leads/" + d.leads["Dana Scully"]},
		{"lead-new", "/leads/new"},
		{"sources", "/sources"},
		{"lead-long", "/leads/" + d.leads["Monica Reyes-Villanueva de la Cruz Longname"]},
		{"lead-meta", "/leads/" + metaID},
		{"sources", "/sources"},
		{"source", "/sources/" + src.ID},
		{"source-meta", "/sources/" + fb.ID},
		{"source-generic", "/sources/" + gen.ID},
		{"source-typeform", "/sources/" + tf.ID},
		{"monitor", "/monitor"},
		{"monitor-source", "/monitor/sources/" + src.ID},
		{"alerts", "/alerts"},
		{"alerts-all", "/alerts?state=all"},
		{"users", "/settings/users"},
		{"tokens", "/settings/tokens"},
		{"endpoints", "/settings/endpoints"},
		{"audit", "/settings/audit"},
		{"imports", "/imports"},
		{"endpoint", "/settings/endpoints/" + ep.ID},
		{"event", "/settings/events/" + eventID},
		{"settings-me", "/settings/me"},
		{"not-found", "/no/such/page"},
	}
	for _, p := range pages {
		for _, vp := range widths {
			admin.pageFits(p.path, vp.w, vp.h, vp.mobile)
		}
		admin.screenshot("page-" + p.name)
	}

	t.Log("a Meta lead waiting for its details: a chip and its source everywhere, its ids under Technical details")
	for _, path := range []string{"/leads", "/leads/board", "/leads/" + metaID} {
		admin.open(path)
		if got := admin.text(`[data-testid="pending"]`); !strings.Contains(got, "connect a Meta access token") {
			t.Errorf("%s: pending chip %q", path, got)
		}
		text := run(admin, chromedp.Evaluate[string](`document.body.innerText`))
		if !strings.Contains(text, "Lead from Facebook Lead Ads") || strings.Contains(text, "Unnamed lead") || strings.Contains(text, "987654321012345") {
			t.Errorf("%s does not call it by its source, or shows its leadgen id", path)
		}
	}
	if got := admin.liveText(`[data-testid="technical-details"]`); !strings.Contains(got, "987654321012345") || !strings.Contains(got, "560000000000001") {
		t.Errorf("the technical details say %q, want the leadgen and form ids", got)
	}
	admin.screenshot("lead-meta-pending")

	t.Log("on a phone every page is reachable through More")
	admin.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	admin.open("/leads")
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="more"]`), chromedp.NodeVisible))
	for _, key := range []string{"sources", "imports", "monitor", "alerts", "users", "tokens", "endpoints", "audit"} {
		if !run(admin, chromedp.Evaluate[bool](fmt.Sprintf(`(function(){var a=document.querySelector('[data-testid="more-%s"]'); if(!a) return false; var r=a.getBoundingClientRect(); return r.width>0 && r.right<=innerWidth;})()`, key))) {
			t.Errorf("More does not show %s on a phone", key)
		}
	}
	if !strings.Contains(admin.text(`[data-testid="more-identity"]`), d.acme.Admin.Email) {
		t.Error("More does not say who is signed in")
	}
	admin.screenshot("page-more-menu")
	admin.do(chromedp.EmulateViewport(1280, 900))
}

// TestBrowserChartsAndAlerts: an alert links to the chart zoomed to its
// window with the span shaded; hovering or arrowing through the buckets
// shows a crosshair tooltip (time, deliveries, duplicates, rate, "—" for
// an empty bucket); 1 h and 6 h ranges exist; the rules are edited on the
// page (a bad value is shown on its field, nothing saved).
func TestBrowserChartsAndAlerts(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_charts")
	ctx := context.Background()
	src, secret := d.e.Source(d.acme.ID, sources.CreateInput{Slug: "landing", Name: "Landing page", Kind: "standard"})
	mon := d.e.App.Web.Monitor
	now := time.Now().UTC().Truncate(time.Minute)
	stormFrom := now.Add(-10 * time.Minute)
	// Steady traffic with a quiet gap (empty buckets) 30 minutes ago, then a storm.
	monitortest.Traffic{TenantID: d.acme.ID, SourceID: src.ID, PerMinute: 12, DupRate: 0.02, Seed: 1}.Add(d.e.App.Stats, now.Add(-24*time.Hour), now.Add(-35*time.Minute))
	monitortest.Traffic{TenantID: d.acme.ID, SourceID: src.ID, PerMinute: 12, DupRate: 0.02, Seed: 3}.Add(d.e.App.Stats, now.Add(-25*time.Minute), stormFrom)
	monitortest.Traffic{TenantID: d.acme.ID, SourceID: src.ID, PerMinute: 40, DupRate: 0.40, Seed: 2}.Add(d.e.App.Stats, stormFrom, now)
	evaluateEachMinute(t, mon, stormFrom, now)
	open, _, err := mon.Alerts(ctx, d.acme.ID, "open", "", 50)
	if err != nil || len(open) != 1 {
		t.Fatalf("want one open alert: %v %v", open, err)
	}
	if _, err := mon.Ack(ctx, d.acme.ID, open[0].ID, d.acme.Admin.ID); err != nil {
		t.Fatal(err)
	}

	_, admin := adminTab(t, d.e, d.acme)
	admin.open("/alerts?state=all")
	when := admin.text(`[data-testid="alert-when"]`)
	if !strings.Contains(when, open[0].FiredAt.UTC().Format("Jan 02, 15:04")) || !strings.Contains(admin.text(`[data-testid="acked-by"]`), "Admin acme") {
		t.Errorf("alert says %q: no absolute fire time or who acknowledged", when)
	}
	if admin.count(`[data-testid="alert-spark"] svg`) != 1 {
		t.Error("no mini chart on the alert")
	}
	if admin.count(`[data-testid="alert-deliveries"][href="/monitor/sources/`+src.ID+`?alert=`+open[0].ID+`#duplicates"]`) != 1 {
		t.Error("no link to the duplicate deliveries of the alert's window")
	}
	admin.screenshot("alerts-actionable")

	t.Log("the alert's duplicate deliveries: a retry re-sent one of two")
	hook := d.e.Hook("acme", "landing", kinds.Standard, secret)
	for _, id := range []string{"evt-storm-1", "evt-storm-2", "evt-storm-1", "evt-storm-1"} {
		if st := hook.Post(id, "ref-"+id, kinds.Lead{Name: "Storm " + id, Email: id + "@example.test"}); st != 200 {
			t.Fatalf("webhook %s: %d", id, st)
		}
	}
	// Repeats of a delivery this server knows are counted in memory,
	// logged at the next flush and folded by the worker; this test runs
	// none, so it flushes and folds itself.
	apptest.Eventually(t, 10*time.Second, "the repeats of evt-storm-1 counted", func() bool {
		var n int
		if err := d.e.App.Ingest.Claimer.FlushDuplicates(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := d.e.App.DB.Get(&n, `SELECT dup_count FROM deliveries WHERE tenant_id = ? AND delivery_id = 'evt-storm-1'`, d.acme.ID)
		return err == nil && n == 2
	})
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="alert-deliveries"]`), chromedp.NodeVisible))
	admin.waitText(`[data-testid="window-duplicates"]`, "evt-storm-1")
	if n := admin.count(`[data-testid="window-duplicate"]`); n != 1 || !strings.Contains(admin.text(`[data-testid="window-duplicate"]`), "Received 3× · 1 delivery, 2 repeats") {
		t.Errorf("the alert window lists %d re-sent deliveries: %q", n, admin.text(`[data-testid="window-duplicates"]`))
	}
	admin.screenshot("alert-duplicates")
	admin.open("/alerts?state=all")

	t.Log("the alert's chart: zoomed, span shaded")
	admin.submit(`[data-testid="alert-chart"]`)
	if !strings.Contains(admin.location(), "alert="+open[0].ID) || admin.count(`[data-testid="zoom-note"]`) != 1 {
		t.Fatalf("not zoomed to the alert: %s", admin.location())
	}
	if admin.count(`[data-testid="chart-alert"]`) == 0 {
		t.Fatal("the alert's span is not shaded")
	}
	if n := admin.count(`[data-testid="chart-bucket"]`); n < 30 || n > 61 {
		t.Errorf("zoomed chart has %d buckets", n)
	}

	t.Log("hover a bucket: crosshair and tooltip")
	admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="chart-bucket"][data-alert="open"]:not([data-deliveries="0"])').dispatchEvent(new MouseEvent("mouseover",{bubbles:true}))`))
	tip := admin.text(`[data-testid="chart-tip"]`)
	if run(admin, chromedp.Evaluate[bool](`document.querySelector('[data-testid="chart-tip"]').hidden`)) ||
		!strings.Contains(tip, "Deliveries") || !strings.Contains(tip, "%") || !strings.Contains(tip, "Alert open") {
		t.Errorf("tooltip after hover: %q", tip)
	}
	if !run(admin, chromedp.Evaluate[bool](`document.querySelector('[data-testid="chart-crosshair"]').classList.contains("is-on")`)) {
		t.Error("no crosshair")
	}
	admin.screenshot("chart-tooltip")

	t.Log("keyboard: focus the newest bucket, arrow left")
	admin.do(chromedp.Focus(chromedp.CSS(`[data-testid="chart-bucket"][tabindex="0"]`)))
	first := admin.text(`.chart-tip-when`)
	admin.do(chromedp.KeyEvent(kb.ArrowLeft))
	if second := admin.text(`.chart-tip-when`); second == first || second == "" {
		t.Errorf("arrow left: tooltip %q → %q", first, second)
	}

	t.Log("the 1 h range; an empty bucket reads —")
	admin.open("/monitor/sources/" + src.ID + "?range=6h")
	if admin.count(`[data-testid="range-6h"][aria-current="page"]`) != 1 {
		t.Error("6 h range not current")
	}
	admin.open("/monitor/sources/" + src.ID + "?range=1h")
	if n := admin.count(`[data-testid="chart-bucket"]`); n != 60 && n != 61 {
		t.Errorf("1 h chart has %d buckets", n)
	}
	if admin.count(`[data-testid="chart-bucket"][data-rate="—"]`) == 0 {
		t.Error("the quiet minutes do not read —")
	}
	if admin.count(`[data-testid="chart-bucket"][data-rate="0.0%"][data-deliveries="0"]`) != 0 {
		t.Error("an empty bucket reads 0%")
	}

	t.Log("edit the rules on the page")
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="rules-edit"] summary`), chromedp.NodeVisible))
	admin.do(chromedp.SetValue(chromedp.CSS(`#r-spike_factor`), "abc"))
	admin.submit(`[data-testid="save-rules"]`)
	if got := admin.text(`[data-testid="rule-error"]`); !strings.Contains(got, "number") {
		t.Fatalf("bad factor: error %q", got)
	}
	admin.do(chromedp.SetValue(chromedp.CSS(`#r-spike_factor`), "5"), chromedp.SetValue(chromedp.CSS(`#r-window_minutes`), "10"))
	admin.submit(`[data-testid="save-rules"]`)
	if got := admin.text(`[data-testid="rules"]`); !strings.Contains(got, "more than 5×") || !strings.Contains(got, "10 minutes") {
		t.Fatalf("rules after save: %q", got)
	}
	r, err := mon.Rules(ctx, d.acme.ID, src.ID)
	if err != nil || r.SpikeFactor != 5 || r.WindowSeconds != 600 || r.Default {
		t.Fatalf("saved rules %+v %v", r, err)
	}
	admin.screenshot("monitor-rules")
}

// TestBrowserSalesDay: staff land on "My open leads"; bulk-assign three
// leads to themselves (one form, applied once); "Assign to me" on a lead
// page; a next step with a due date shows in the inbox and in
// "My follow-ups due".
func TestBrowserSalesDay(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_salesday", "Dana Scully", "Fox Mulder", "Walter Skinner", "Monica Reyes")
	browser := startBrowser(t)
	sam := newTab(t, browser, d.e.URL, "sam")
	sam.login("sam@acme.test", staffPassword)
	if sam.count(`[data-testid="view-mine"][aria-current="page"]`) != 1 {
		t.Fatal("staff do not land on My open leads")
	}
	if sam.count(`[data-testid="lead-row"]`) != 0 {
		t.Fatal("My open leads lists leads nobody assigned to me")
	}
	sam.screenshot("inbox-mine-empty")

	t.Log("bulk: assign three unassigned leads to me")
	sam.open("/leads?view=unassigned")
	if n := sam.count(`[data-testid="lead-row"]`); n != 4 {
		t.Fatalf("unassigned new: %d rows", n)
	}
	for _, n := range []string{"Dana Scully", "Fox Mulder", "Walter Skinner"} {
		sam.do(chromedp.Click(chromedp.CSS(`[data-lead-id="`+d.leads[n]+`"] [data-testid="select-lead"]`), chromedp.NodeVisible))
	}
	if got := sam.text(`[data-testid="bulk-count"]`); got != "3 selected" {
		t.Errorf("selection says %q", got)
	}
	sam.do(chromedp.Click(chromedp.CSS(`[data-testid="bulk-menu"] summary`), chromedp.NodeVisible))
	sam.screenshot("inbox-bulk-selected")
	sam.choose(`[data-testid="bulk-owner"]`, d.staff.ID) // applies at once
	if got := sam.text(`[data-testid="flash"]`); !strings.Contains(got, "3 leads assigned to Sam Rivera") {
		t.Fatalf("flash after bulk assign: %q", got)
	}
	var n int
	if err := d.e.App.DB.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND owner_id = ? AND version = 2`, d.acme.ID, d.staff.ID); err != nil || n != 3 {
		t.Fatalf("%d leads assigned at version 2 (%v)", n, err)
	}
	sam.open("/leads")
	if n := sam.count(`[data-testid="lead-row"]`); n != 3 {
		t.Fatalf("My open leads after the bulk assign: %d rows", n)
	}

	t.Log("Assign to me on a lead page")
	monica := d.leads["Monica Reyes"]
	sam.open("/leads/" + monica)
	sam.submit(`[data-testid="assign-me"]`)
	if got := sam.text(`[data-testid="field-owner"]`); got != "Sam Rivera" {
		t.Fatalf("owner after Assign to me: %q", got)
	}

	t.Log("a next step with a due date shows in the inbox and in follow-ups due")
	due := time.Now().UTC().Add(-time.Hour)
	sam.do(chromedp.SetValue(chromedp.CSS(`[data-testid="next-step-input"]`), "Send the pricing sheet"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="due-input"]`), due.Format("2006-01-02T15:04")))
	sam.submit(`[data-testid="save-next-step"]`)
	if sam.count(`[data-testid="due"].is-overdue`) == 0 {
		t.Error("an overdue next step is not highlighted on the lead page")
	}
	sam.screenshot("lead-next-step")
	sam.open("/leads")
	row := `[data-lead-id="` + monica + `"] [data-testid="next-step-cell"]`
	if got := sam.text(row); !strings.Contains(got, "Send the pricing sheet") || !strings.Contains(got, "Overdue") {
		t.Fatalf("inbox next step: %q", got)
	}
	sam.screenshot("inbox-mine")
	sam.open("/leads?view=due")
	if n := sam.count(`[data-testid="lead-row"]`); n != 1 || sam.count(`[data-lead-id="`+monica+`"]`) != 1 {
		t.Fatalf("My follow-ups due: %d rows", n)
	}
	sam.screenshot("inbox-due")
	sam.phoneFits("/leads")
	sam.phoneFits("/leads/" + monica)
}
