package layouts

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

const xss = `<script>alert(1)</script>`

var body = templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
	_, err := io.WriteString(w, `<h1 data-testid="child">Inbox</h1>`)
	return err
})

func render(t *testing.T, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(templ.WithChildren(context.Background(), body), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, buf.String()
}

var (
	admin = &User{Name: "Dana Okafor", Email: "dana@acme.test", Role: "admin"}
	staff = &User{Name: "Sam Rivera", Email: "sam@acme.test", Role: "staff"}
)

func navKeys(doc *goquery.Document) []string {
	var keys []string
	doc.Find(`[data-testid="nav"] .nav-list > li > a`).Each(func(_ int, s *goquery.Selection) {
		keys = append(keys, strings.TrimPrefix(s.AttrOr("data-testid", ""), "nav-"))
	})
	return keys
}

func TestAppNavigationByRole(t *testing.T) {
	t.Run("staff", func(t *testing.T) {
		doc, _ := render(t, App(Page{Title: "Inbox", User: staff, TenantName: "Acme", Active: "leads", OpenAlerts: 4}))
		if got := strings.Join(navKeys(doc), ","); got != "leads,board" {
			t.Fatalf("staff nav = %s", got)
		}
		for _, href := range []string{"/sources", "/monitor", "/alerts", "/settings/users", "/settings/tokens", "/settings/endpoints", "/settings/audit"} {
			if doc.Find(`a[href="`+href+`"]`).Length() != 0 {
				t.Errorf("staff sees a link to %s", href)
			}
		}
		if doc.Find(`[data-testid="alert-banner"]`).Length() != 0 {
			t.Error("staff sees the alert banner")
		}
	})
	t.Run("admin", func(t *testing.T) {
		doc, _ := render(t, App(Page{Title: "Sources", User: admin, TenantName: "Acme", Active: "sources"}))
		if got := strings.Join(navKeys(doc), ","); got != "leads,board,sources,forms,imports,monitor,alerts,users,tokens,endpoints,audit,retention,assignment,mail" {
			t.Fatalf("admin nav = %s", got)
		}
		want := map[string]string{
			"leads": "/leads", "board": "/leads/board", "sources": "/sources", "monitor": "/monitor",
			"alerts": "/alerts", "users": "/settings/users", "tokens": "/settings/tokens", "endpoints": "/settings/endpoints",
			"audit": "/settings/audit",
		}
		for key, href := range want {
			if got := doc.Find(`[data-testid="nav-`+key+`"]`).AttrOr("href", ""); got != href {
				t.Errorf("nav %s → %q, want %q", key, got, href)
			}
		}
		current := doc.Find(`.nav-list > li > [aria-current="page"]`)
		if current.Length() != 1 || current.AttrOr("data-testid", "") != "nav-sources" {
			t.Fatalf("aria-current on %d elements", current.Length())
		}
		if doc.Find(`[data-testid="alert-banner"]`).Length() != 0 {
			t.Error("banner without open alerts")
		}
	})
}

// The phone navigation keeps two tabs and moves every other page, who is
// signed in and Log out into "More", so nothing is out of reach at 390 px.
func TestMoreMenu(t *testing.T) {
	doc, _ := render(t, App(Page{Title: "Sources", User: admin, TenantName: "Acme", Active: "sources", OpenAlerts: 2}))
	more := doc.Find(`[data-testid="more-menu"]`)
	var keys []string
	more.Find(`a`).Each(func(_ int, s *goquery.Selection) {
		keys = append(keys, strings.TrimPrefix(s.AttrOr("data-testid", ""), "more-"))
	})
	if got := strings.Join(keys, ","); got != "sources,forms,imports,monitor,alerts,users,tokens,endpoints,audit,retention,assignment,mail,me" {
		t.Fatalf("more menu = %s", got)
	}
	if id := more.Find(`[data-testid="more-identity"]`).Text(); !strings.Contains(id, "Dana Okafor") || !strings.Contains(id, "dana@acme.test") || !strings.Contains(id, "Admin") {
		t.Errorf("identity in More: %q", id)
	}
	if more.Find(`form[action="/logout"] button`).Length() != 1 {
		t.Error("no Log out in More")
	}
	if more.Find(`summary .nav-count`).Text() != "2" {
		t.Error("More does not show the open alerts")
	}
	if n := doc.Find(`.nav-list > li.nav-extra`).Length(); n != 12 {
		t.Errorf("%d tabs fold away on phones, want 12", n)
	}
	sdoc, _ := render(t, App(Page{Title: "Inbox", User: staff, Active: "leads"}))
	if n := sdoc.Find(`[data-testid="more-menu"] a`).Length(); n != 1 || sdoc.Find(`[data-testid="more-me"]`).Length() != 1 {
		t.Errorf("staff More lists %d pages, want only My settings", n)
	}
	if doc.Find(`[data-testid="more"][data-current]`).Length() != 1 || sdoc.Find(`[data-testid="more"][data-current]`).Length() != 0 {
		t.Error("More is marked current on a page outside it, or not on one inside it")
	}
	if !strings.Contains(sdoc.Find(`[data-testid="more-identity"]`).Text(), "Sam Rivera") {
		t.Error("staff More lacks the identity")
	}
}

func TestFlashUndo(t *testing.T) {
	doc, _ := render(t, App(Page{Title: "Board", User: staff, Active: "board", Flash: "Moved Dana to Won.",
		Undo: &Undo{Action: "/leads/x/status", Fields: []Field{{Name: "status", Value: "new"}, {Name: "version", Value: "3"}}}}))
	f := doc.Find(`[data-testid="flash"] form[action="/leads/x/status"]`)
	if f.Length() != 1 || f.Find(`input[name="status"][value="new"]`).Length() != 1 || f.Find(`[data-testid="undo"]`).Text() != "Undo" {
		t.Fatal("no Undo form in the flash")
	}
}

func TestOpenAlertBanner(t *testing.T) {
	for n, want := range map[int]string{1: "1 open alert", 3: "3 open alerts"} {
		doc, _ := render(t, App(Page{Title: "Inbox", User: admin, Active: "leads", OpenAlerts: n}))
		b := doc.Find(`[data-testid="alert-banner"]`)
		if b.Length() != 1 {
			t.Fatalf("no banner for %d alerts", n)
		}
		if got := b.Find("strong").Text(); got != want {
			t.Errorf("banner says %q, want %q", got, want)
		}
		if b.Find(`a[href="/alerts"]`).Length() != 1 {
			t.Error("banner does not link /alerts")
		}
		if got := doc.Find(`[data-testid="nav-alerts"] .nav-count`).Text(); got == "" {
			t.Error("alerts nav item lacks the count")
		}
	}
}

func TestAppDocument(t *testing.T) {
	doc, html := render(t, App(Page{
		Title: xss, User: &User{Name: xss, Email: xss, Role: "staff"}, TenantName: xss,
		Active: "board", Flash: xss, FlashError: xss,
	}))
	if doc.Find("script:not([src])").Length() != 0 || strings.Contains(html, "<script>") {
		t.Fatal("user data rendered as a script element")
	}
	if doc.Find(`[data-testid="tenant-name"]`).Text() != xss || doc.Find(`[data-testid="user-name"]`).Text() != xss {
		t.Fatal("tenant or user name not shown as text")
	}
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(html)), "<!doctype html>") {
		t.Fatal("missing doctype")
	}
	if doc.Find("html").AttrOr("lang", "") != "en" {
		t.Fatal(`missing <html lang="en">`)
	}
	if !strings.Contains(doc.Find(`meta[name="viewport"]`).AttrOr("content", ""), "width=device-width") {
		t.Fatal("missing viewport meta")
	}
	if got := doc.Find("title").Text(); got != xss+" · Leadpipe" {
		t.Fatalf("title %q", got)
	}
	versioned := regexp.MustCompile(`^/assets/(htmx\.min|app)\.js\?v=[0-9a-f]{12}$`)
	scripts := doc.Find("script[src]")
	if scripts.Length() != 2 {
		t.Fatalf("%d scripts", scripts.Length())
	}
	scripts.Each(func(_ int, s *goquery.Selection) {
		if !versioned.MatchString(s.AttrOr("src", "")) {
			t.Errorf("script src %q", s.AttrOr("src", ""))
		}
		if _, ok := s.Attr("defer"); !ok {
			t.Errorf("script %q not deferred", s.AttrOr("src", ""))
		}
	})
	if !strings.HasPrefix(doc.Find(`link[rel="stylesheet"]`).AttrOr("href", ""), "/assets/app.css?v=") {
		t.Fatal("stylesheet not versioned")
	}
	// No inline event handlers or javascript: URLs anywhere (CSP friendly).
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("inline handler %s on <%s>", a.Key, s.Nodes[0].Data)
			}
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
				t.Errorf("javascript: URL in %s", a.Key)
			}
		}
	})

	skip := doc.Find("a.skip-link")
	if skip.AttrOr("href", "") != "#main" || doc.Find("main#main").Length() != 1 {
		t.Fatal("skip link does not target the main landmark")
	}
	if doc.Find(`main [data-testid="child"]`).Length() != 1 {
		t.Fatal("children not rendered inside <main>")
	}
	if doc.Find(`nav[aria-label="Main"]`).Length() != 1 {
		t.Fatal("nav landmark not labelled")
	}
	form := doc.Find(`form[action="/logout"]`)
	if strings.ToLower(form.AttrOr("method", "")) != "post" || form.Find(`button[type="submit"][data-testid="logout"]`).Length() != 1 {
		t.Fatal("logout must be a POST form with a submit button")
	}
	if f := doc.Find(`[data-testid="flash"]`); f.AttrOr("role", "") != "status" || strings.TrimSpace(f.Text()) != xss {
		t.Fatalf("flash %q role %q", f.Text(), f.AttrOr("role", ""))
	}
	if f := doc.Find(`[data-testid="flash-error"]`); f.AttrOr("role", "") != "alert" || strings.TrimSpace(f.Text()) != xss {
		t.Fatalf("flash error %q", f.Text())
	}
}

func TestAppWithoutUser(t *testing.T) {
	doc, _ := render(t, App(Page{Title: "Oops"}))
	if doc.Find("nav").Length() != 0 || doc.Find(`form[action="/logout"]`).Length() != 0 {
		t.Fatal("nav or logout without a user")
	}
	if doc.Find(`[data-testid="flash"], [data-testid="flash-error"]`).Length() != 0 {
		t.Fatal("empty flashes rendered")
	}
}

func TestBare(t *testing.T) {
	doc, _ := render(t, Bare("Sign in"))
	if doc.Find("title").Text() != "Sign in · Leadpipe" || doc.Find("html").AttrOr("lang", "") != "en" {
		t.Fatal("document head wrong")
	}
	if doc.Find(`main#main [data-testid="child"]`).Length() != 1 {
		t.Fatal("children not in main")
	}
	if doc.Find("nav").Length() != 0 {
		t.Fatal("bare layout has navigation")
	}
	if doc.Find("script[src][defer]").Length() != 2 {
		t.Fatal("scripts missing")
	}
}

func TestInitials(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"Dana Okafor", ""}:     "DO",
		{"", "sam.rivera@x"}:    "SR",
		{"", "sam@x"}:           "S",
		{"Ana Maria Souza", ""}: "AM",
		{"élodie", ""}:          "É",
		{"", ""}:                "",
	} {
		if got := initials(in[0], in[1]); got != want {
			t.Errorf("initials(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}
