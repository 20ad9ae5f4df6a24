package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// liveProbe runs before every page's own scripts: it records each lead
// event the page's EventSource receives (window.__events) and stands in
// for the Notification API (headless Chromium shows none), recording
// what would be shown (window.__notes); permission starts at "default".
const liveProbe = `(function(){
  window.__events = []; window.__notes = [];
  var ES = window.EventSource;
  window.EventSource = function (u, o) {
    var es = new ES(u, o);
    es.addEventListener("lead", function (m) { window.__events.push(m.data); });
    return es;
  };
  function N(title, opts) { window.__notes.push(title + "|" + (opts && opts.body)); }
  N.permission = sessionStorage.getItem("perm") || "default";
  N.requestPermission = function () { N.permission = "granted"; sessionStorage.setItem("perm", "granted"); return Promise.resolve("granted"); };
  window.Notification = N;
})()`

// TestBrowserLiveInbox: an inbox open in the browser shows a lead posted by
// webhook within 2 s without a reload, with the count in the tab title and
// a notification for the user the lead is assigned to; a user of another
// tenant, signed in at the same time, receives nothing. On the board the
// lead waits behind "1 new lead — Show".
func TestBrowserLiveInbox(t *testing.T) {
	e := browserApp(t, "ui_live", true)
	ctx := context.Background()
	acme, globex := e.Tenant("acme"), e.Tenant("globex")
	_, secret := e.Source(acme.ID, sources.CreateInput{Slug: "website", Name: "Website", Kind: "standard"})
	adminID := acme.Admin.ID
	if _, err := e.App.Web.Leads.PutAssignment(ctx, acme.ID, leads.Assignment{FirstResponseMinutes: 60,
		Rules: []leads.AssignmentRule{{Name: "Everything to the admin", Strategy: leads.StrategyOwner, OwnerID: &adminID}}}); err != nil {
		t.Fatal(err)
	}
	hook := e.Hook("acme", "website", kinds.Standard, secret)
	if st := hook.Post("evt-seed", "seed-1", kinds.Lead{Name: "Seed Lead", Email: "seed@example.com"}); st != 200 {
		t.Fatalf("seed webhook: %d", st)
	}
	waitLead(t, e, acme.ID, "seed-1")

	browser := startBrowser(t)
	a := newTab(t, browser, e.URL, "acme")
	g := newTab(t, browser, e.URL, "globex")
	for _, tb := range []*tab{a, g} {
		if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: liveProbe}); err != nil {
			t.Fatal(err)
		}
	}
	a.login(acme.Admin.Email, acme.AdminPassword)
	g.login(globex.Admin.Email, globex.AdminPassword)
	waitSubscribers(t, e, 2)

	// The opt-in: a button until the user allows notifications.
	if a.count(`[data-testid="live-notify"]:not([hidden])`) != 1 {
		t.Fatal("no visible 'Notify me' button before permission")
	}
	a.screenshot("live-inbox-optin")
	a.do(chromedp.Click(chromedp.CSS(`[data-testid="live-notify"]`), chromedp.NodeVisible))
	waitFor(t, a, "the notify button to hide once allowed", 2*time.Second, func() bool {
		return a.count(`[data-testid="live-bar"][hidden]`) == 1
	})
	aTitle, gTitle := a.liveText("title"), g.liveText("title")
	gRows := g.count(`[data-testid="lead-row"]`)

	start := time.Now()
	if st := hook.Post("evt-live", "live-1", kinds.Lead{Name: "Grace Hopper", Email: "grace@navy.example"}); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	waitFor(t, a, "the new lead in the open inbox", 2*time.Second, func() bool {
		return strings.Contains(a.liveText(`#inbox-results`), "Grace Hopper")
	})
	took := time.Since(start)
	t.Logf("webhook to row in the open inbox: %v", took.Round(time.Millisecond))
	waitFor(t, a, "the count in the title", 500*time.Millisecond, func() bool { return a.liveText("title") == "(1) "+aTitle })
	if n := run(a, chromedp.Evaluate[int](`window.__notes.length`)); n != 1 {
		t.Errorf("%d notifications for a lead assigned to me, want 1", n)
	} else if s := run(a, chromedp.Evaluate[string](`window.__notes[0]`)); s != "New lead assigned to you|Grace Hopper" {
		t.Errorf("notification %q", s)
	}
	waitFor(t, a, "the new row marked new", 500*time.Millisecond, func() bool { return a.count(`[data-testid="lead-row"].is-live-new`) == 1 })
	a.screenshot("live-inbox-arrived")

	// The other tenant's open inbox heard nothing.
	time.Sleep(time.Second)
	if n := run(g, chromedp.Evaluate[int](`window.__events.length`)); n != 0 {
		t.Errorf("globex's page received %d lead events of acme", n)
	}
	if got := g.liveText("title"); got != gTitle {
		t.Errorf("globex's title changed to %q", got)
	}
	if n := g.count(`[data-testid="lead-row"]`); n != gRows || strings.Contains(g.liveText("body"), "Grace Hopper") {
		t.Errorf("globex's inbox changed: %d rows", n)
	}

	// A click in the tab marks the count seen.
	a.do(chromedp.Click(chromedp.CSS(`h1`), chromedp.NodeVisible))
	if got := a.liveText("title"); got != aTitle {
		t.Errorf("title after a click %q, want %q", got, aTitle)
	}

	// The board does not move cards under the user: a strip offers them.
	a.open("/leads/board")
	waitSubscribers(t, e, 2)
	if st := hook.Post("evt-board", "board-1", kinds.Lead{Name: "Katherine Johnson", Email: "kj@nasa.example"}); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	waitFor(t, a, "the 'new lead' strip on the board", 2*time.Second, func() bool {
		return a.liveText(`[data-testid="live-show"]`) == "1 new lead — Show" && a.count(`[data-testid="live-bar"]:not([hidden])`) == 1
	})
	if !strings.HasPrefix(a.liveText("title"), "(1) ") {
		t.Errorf("board title %q has no count", a.liveText("title"))
	}
	a.screenshot("live-board-strip")
	a.do(chromedp.Click(chromedp.CSS(`[data-testid="live-show"]`), chromedp.NodeVisible))
	waitFor(t, a, "the card after Show", 2*time.Second, func() bool {
		return strings.Contains(a.liveText(`[data-testid="board"]`), "Katherine Johnson") && a.count(`[data-testid="live-bar"][hidden]`) == 1
	})
	waitFor(t, a, "the title without a count after Show", 500*time.Millisecond, func() bool { return !strings.HasPrefix(a.liveText("title"), "(") })
	if n := run(g, chromedp.Evaluate[int](`window.__events.length`)); n != 0 {
		t.Errorf("globex's page received %d lead events of acme", n)
	}
}

func waitLead(t *testing.T, e *apptest.Env, tenantID, ref string) {
	t.Helper()
	apptest.Eventually(t, 20*time.Second, "lead "+ref+" stored", func() bool {
		var id string
		return e.App.DB.GetContext(context.Background(), &id, `SELECT id FROM leads WHERE tenant_id = ? AND source_ref = ?`, tenantID, ref) == nil
	})
}

func waitSubscribers(t *testing.T, e *apptest.Env, n int) {
	t.Helper()
	apptest.Eventually(t, 10*time.Second, fmt.Sprintf("%d open streams", n), func() bool { return e.App.LiveHub.Subscribers() == n })
}

// waitFor polls cond in the open page (no reload) for up to d.
func waitFor(t *testing.T, tb *tab, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s within %v", tb.name, what, d)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
