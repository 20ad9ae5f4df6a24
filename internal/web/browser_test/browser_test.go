package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

const xss = `<script>alert(1)</script>`

// TestBrowserAcceptance is the first acceptance run in a real Chromium:
// log in, a signed webhook's lead appears, status survives a re-delivery
// with a changed email, a stale edit shows the conflict, a double-clicked
// "Add note" makes one note, staff get 403 "Admins only" on an admin page, other tenants 404, and names
// with markup render as text. Screenshots go to artifacts/screenshots.
func TestBrowserAcceptance(t *testing.T) {
	e := browserApp(t, "ui_browser", true)
	ctx := context.Background()
	acme := e.Tenant("acme")
	beta := e.Tenant("beta")
	if _, err := e.App.Tenants.CreateUser(ctx, acme.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam Rivera",
		Password: "sam-staff-password", Role: tenants.RoleStaff}); err != nil {
		t.Fatal(err)
	}
	src, secret := e.Source(acme.ID, sources.CreateInput{Slug: "website", Name: "Website contact form", Kind: "standard"})
	if _, _, err := e.App.Sources.Create(ctx, acme.ID, sources.CreateInput{Slug: "typeform", Name: "Typeform demo request", Kind: "typeform"}); err != nil {
		t.Fatal(err)
	}
	hook := e.Hook("acme", "website", kinds.Standard, secret)
	leadID := func(ref string) string {
		var id string
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			err := e.App.DB.GetContext(ctx, &id, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref = ?`, acme.ID, src.ID, ref)
			if err == nil {
				return id
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("lead %s never stored", ref)
		return ""
	}

	browser := startBrowser(t)
	admin := newTab(t, browser, e.URL, "admin")

	t.Log("log in")
	admin.login(acme.Admin.Email, acme.AdminPassword)

	t.Log("post a signed webhook; the lead appears in the inbox")
	if st := hook.Post("evt-1", "contact-1", kinds.Lead{Name: "Dana Scully", Email: "dana@fbi.example", Company: "FBI", Phone: "+1 202 555 0101"}); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	admin.eventually("/leads", "the webhook's lead in the inbox", func() bool {
		return admin.count(`[data-testid="lead-row"]`) == 1
	})
	if got := admin.text(`[data-testid="lead-link"]`); got != "Dana Scully" {
		t.Fatalf("inbox shows %q", got)
	}

	t.Log("open it and set status qualified")
	id := leadID("contact-1")
	admin.submit(`[data-lead-id="` + id + `"] [data-testid="lead-link"]`)
	if got := admin.text(`[data-testid="lead-name"]`); got != "Dana Scully" {
		t.Fatalf("lead page name %q", got)
	}
	admin.choose(`#f-status`, "qualified") // saves on change
	if got := admin.text(`[data-testid="lead-status"]`); got != "Qualified" {
		t.Fatalf("status after save %q", got)
	}
	if admin.count(`[data-testid="flash"]`) != 1 {
		t.Fatal("no confirmation after saving the status")
	}

	t.Log("re-post the webhook with a changed email: new email, still qualified")
	if st := hook.Post("evt-2", "contact-1", kinds.Lead{Name: "Dana Scully", Email: "dana.scully@fbi.example", Company: "FBI"}); st != 200 {
		t.Fatalf("webhook 2: %d", st)
	}
	admin.eventually("/leads/"+id, "the new email on the lead page", func() bool {
		return admin.text(`[data-testid="field-email"]`) == "dana.scully@fbi.example"
	})
	if got := admin.text(`[data-testid="lead-status"]`); got != "Qualified" {
		t.Fatalf("status after re-delivery %q", got)
	}

	t.Log("two people edit the same lead: the second sees the conflict")
	staff := newTab(t, browser, e.URL, "staff")
	staff.login("sam@acme.test", "sam-staff-password")
	staff.open("/leads/" + id)
	admin.open("/leads/" + id)
	admin.choose(`#f-status`, "contacted")
	staff.choose(`#f-status`, "won")
	if staff.count(`[data-testid="conflict"]`) != 1 {
		t.Fatal("the stale edit shows no conflict")
	}
	if msg := staff.text(`[data-testid="conflict"]`); !strings.Contains(msg, "changed by "+acme.Admin.Name) || !strings.Contains(msg, "not saved") {
		t.Fatalf("conflict message %q", msg)
	}
	if got := staff.text(`[data-testid="lead-status"]`); got != "Contacted" {
		t.Fatalf("conflict page shows status %q, want the current Contacted", got)
	}
	var status string
	if err := e.App.DB.GetContext(ctx, &status, `SELECT status FROM leads WHERE tenant_id = ? AND id = ?`, acme.ID, id); err != nil || status != "contacted" {
		t.Fatalf("stored status %q (%v): the stale edit overwrote", status, err)
	}
	staff.screenshot("lead-conflict")

	t.Log("double-click Add note: one note")
	admin.open("/leads/" + id)
	admin.do(chromedp.SendKeys(chromedp.CSS(`#f-body`), "Called Dana, demo booked for Tuesday.", chromedp.NodeVisible))
	func() {
		cctx, cancel := context.WithTimeout(admin.ctx, stepTimeout)
		defer cancel()
		if _, err := chromedp.Run(cctx, chromedp.WaitEvent(page.LoadEventFired, nil,
			chromedp.DoubleClick(chromedp.CSS(`[data-testid="add-note"]`), chromedp.NodeVisible))); err != nil {
			t.Fatalf("double-click add note: %v", err)
		}
	}()
	time.Sleep(500 * time.Millisecond) // let a second request, if any, finish
	var notes int
	if err := e.App.DB.GetContext(ctx, &notes, `SELECT COUNT(*) FROM lead_notes WHERE tenant_id = ? AND lead_id = ?`, acme.ID, id); err != nil || notes != 1 {
		t.Fatalf("notes after a double click: %d (%v)", notes, err)
	}
	admin.open("/leads/" + id)
	if n := admin.count(`[data-testid="note-body"]`); n != 1 {
		t.Fatalf("timeline shows %d notes", n)
	}

	t.Log("a staff user cannot open the sources page")
	if st := staff.open("/sources"); st != http.StatusForbidden || !strings.Contains(staff.text(`[data-testid="error-page"] h1`), "Admins only") {
		t.Fatalf("staff /sources: %d", st)
	}
	if staff.count(`[data-testid="nav-sources"]`) != 0 {
		t.Fatal("staff sees the Sources tab")
	}

	t.Log("tenant B's user cannot open tenant A's lead")
	other := newTab(t, browser, e.URL, "tenant-b")
	other.login(beta.Admin.Email, beta.AdminPassword)
	if st := other.open("/leads/" + id); st != http.StatusNotFound || other.count(`[data-testid="error-page"]`) != 1 {
		t.Fatalf("tenant B /leads/{A's lead}: %d", st)
	}

	t.Log("a name with markup renders as text everywhere")
	if st := hook.Post("evt-x", "contact-x", kinds.Lead{Name: xss, Email: "x@evil.example", Company: "<b>Evil</b> & Co"}); st != 200 {
		t.Fatalf("webhook xss: %d", st)
	}
	xid := leadID("contact-x")
	for _, path := range []string{"/leads", "/leads/board", "/leads/" + xid, "/sources/" + src.ID} {
		admin.open(path)
		if n := admin.count(`body script:not([src])`); n != 0 {
			t.Fatalf("%s: %d inline script elements", path, n)
		}
		if path == "/sources/"+src.ID {
			continue
		}
		if got := run(admin, chromedp.Evaluate[bool](`document.body.textContent.includes("<script>alert(1)</script>")`)); !got {
			t.Fatalf("%s does not show the name as text", path)
		}
	}
	admin.open("/leads/" + xid)
	if got := admin.text(`[data-testid="lead-name"]`); got != xss {
		t.Fatalf("lead page title %q", got)
	}

	t.Log("more leads, a duplicate and a dead letter for the screenshots")
	people := []kinds.Lead{
		{Name: "Jordan Lee", Email: "jordan.lee@northwind.example", Company: "Northwind Traders"},
		{Name: "Priya Raman", Email: "priya@contoso.example", Company: "Contoso Ltd"},
		{Name: "Marcus Chen", Email: "m.chen@fabrikam.example", Company: "Fabrikam"},
		{Name: "Ana Souza", Email: "ana@tailspin.example", Company: "Tailspin Toys"},
		{Name: "Olu Adeyemi", Email: "olu@litware.example", Company: "Litware"},
		{Name: "Grace Hopper", Email: "grace@navy.example", Company: "US Navy"},
	}
	for i, p := range people {
		if st := hook.Post(fmt.Sprintf("evt-p%d", i), fmt.Sprintf("contact-p%d", i), p); st != 200 {
			t.Fatalf("webhook %d: %d", i, st)
		}
	}
	if st := hook.Post("evt-1", "contact-1", kinds.Lead{Name: "Dana Scully", Email: "dana@fbi.example"}); st != 200 {
		t.Fatalf("duplicate: %d", st)
	}
	if st := hook.PostBody("evt-broken", []byte(`{"type":"contact.created","data":`), time.Now()); st != http.StatusUnprocessableEntity {
		t.Fatalf("dead letter: %d", st)
	}
	for i, st := range []string{"contacted", "qualified", "won", "lost", "unqualified"} {
		pid := leadID(fmt.Sprintf("contact-p%d", i))
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET status = ?, owner_id = ?, version = version + 1 WHERE tenant_id = ? AND id = ?`,
			st, acme.Admin.ID, acme.ID, pid); err != nil {
			t.Fatal(err)
		}
	}
	leadID("contact-p5")

	t.Log("move a card on the board with buttons")
	grace := leadID("contact-p5")
	admin.open("/leads/board")
	card := `[data-testid="column-new"] [data-lead-id="` + grace + `"]`
	admin.do(chromedp.SetValue(chromedp.CSS(card+` [data-testid="move-select"]`), "contacted", chromedp.NodeVisible))
	admin.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + card + ` [data-testid="move-select"]').dispatchEvent(new Event("change",{bubbles:true}))`))
	admin.waitText(`[data-testid="flash"]`, "to Contacted") // htmx swaps the board in place
	if !strings.HasSuffix(admin.location(), "/leads/board") || admin.count(`[data-testid="column-contacted"] [data-lead-id="`+grace+`"]`) != 1 {
		t.Fatalf("card not moved (at %s)", admin.location())
	}

	admin.open("/leads")
	admin.screenshot("inbox")
	admin.open("/leads/board")
	admin.screenshot("board")
	admin.open("/leads/" + id)
	admin.screenshot("lead")
	admin.open("/sources")
	admin.screenshot("sources")
	admin.eventually("/sources/"+src.ID, "the duplicate flag on the source page", func() bool {
		return admin.count(`[data-testid="duplicate-flag"]`) == 1 && admin.count(`[data-testid="dead-letter"]`) == 1
	})
	admin.do(chromedp.Click(chromedp.CSS(`[data-testid="dead-letter"] summary`), chromedp.NodeVisible))
	if got := admin.text(`[data-testid="dead-letter-body"]`); !strings.Contains(got, `"type":"contact.created"`) {
		t.Fatalf("dead letter body %q", got)
	}
	admin.screenshot("source")
	staff.open("/leads")
	staff.screenshot("inbox-staff")
	admin.open("/monitor")
	admin.screenshot("monitor")
	admin.open("/monitor/sources/" + src.ID)
	admin.screenshot("monitor-source")
	for _, p := range []string{"alerts", "settings/users", "settings/tokens", "settings/endpoints"} {
		admin.open("/" + p)
		admin.screenshot(strings.ReplaceAll(p, "/", "-"))
	}
	staff.open("/sources")
	staff.screenshot("not-found-staff")

	t.Log("the inbox filters update in place with htmx")
	admin.open("/leads")
	admin.do(chromedp.SendKeys(chromedp.CSS(`#f-q`), "grace", chromedp.NodeVisible))
	deadline := time.Now().Add(10 * time.Second)
	for admin.count(`[data-testid="lead-row"]`) != 1 || !strings.Contains(admin.location(), "q=grace") {
		if time.Now().After(deadline) {
			t.Fatalf("search did not narrow the list in place: %d rows at %s", admin.count(`[data-testid="lead-row"]`), admin.location())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := admin.text(`[data-testid="lead-link"]`); got != "Grace Hopper" {
		t.Fatalf("search found %q", got)
	}

	t.Log("log out")
	admin.open("/leads")
	admin.submit(`[data-testid="logout"]`)
	if loc := admin.location(); !strings.Contains(loc, "/login") {
		t.Fatalf("after logout at %s", loc)
	}
	admin.screenshot("login")
	if st := admin.open("/leads"); !strings.Contains(admin.location(), "/login?next=") || st != 200 {
		t.Fatalf("signed out /leads: %d at %s", st, admin.location())
	}
}
