package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// browser is a cookie-keeping client that does not follow redirects, so
// tests see every 303.
type browser struct {
	t   *testing.T
	e   *apptest.Env
	c   *http.Client
	url string
}

func newBrowser(t *testing.T, e *apptest.Env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, url: e.URL, c: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
	doc    *goquery.Document
}

func (b *browser) do(method, path string, form url.Values, hdr ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.url+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res := apptest.Send(b.t, b.c, req, hdr...)
	p := page{status: res.Status, header: res.Header, body: string(res.Body)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		p.doc, err = goquery.NewDocumentFromReader(strings.NewReader(p.body))
		if err != nil {
			b.t.Fatal(err)
		}
	}
	return p
}

func (b *browser) get(path string) page { b.t.Helper(); return b.do("GET", path, nil) }

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	return b.do("POST", path, form)
}

func (b *browser) login(email, password string) {
	b.t.Helper()
	p := b.post("/login", url.Values{"email": {email}, "password": {password}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/leads" {
		b.t.Fatalf("login %s: %d %s", email, p.status, p.header.Get("Location"))
	}
}

func (p page) testid(id string) *goquery.Selection { return p.doc.Find(`[data-testid="` + id + `"]`) }

// field reads a hidden or visible input's value from the first form that
// matches sel.
func (p page) input(sel, name string) string {
	v, _ := p.doc.Find(sel).First().Find(`[name="` + name + `"]`).Attr("value")
	return v
}

// uiEnv is the app of one test of this package, on its Redis database.
func uiEnv(t *testing.T, prefix string) *apptest.Env {
	t.Helper()
	return apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisWeb})
}

// seedLead stores a lead as a webhook would (through the sender upsert).
func seedLead(t *testing.T, e *apptest.Env, tenantID, sourceID, ref, name, email string) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as senders post it: raw < and >
	_ = enc.Encode(map[string]any{"id": ref, "name": name, "email": email, "note": "<b>bold?</b>"})
	payload := bytes.TrimSpace(buf.Bytes())
	id, _, err := leads.UpsertFromSender(context.Background(), e.App.DB, tenantID, sourceID,
		leads.SenderRecord{SourceRef: ref, Name: name, Email: email, Company: "Acme & Co", Payload: payload}, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestUILoginLogoutAndRedirects(t *testing.T) {
	e := uiEnv(t, "ui_login")
	ten := e.Tenant("acme")
	b := newBrowser(t, e)

	// Signed out: pages send the browser to /login and back.
	p := b.get("/leads?status=new")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/login?next="+url.QueryEscape("/leads?status=new") {
		t.Fatalf("signed out /leads: %d %q", p.status, p.header.Get("Location"))
	}
	if p := b.get("/"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/login" {
		t.Fatalf("/ signed out: %d %q", p.status, p.header.Get("Location"))
	}
	p = b.get("/login")
	if p.status != 200 || p.doc.Find(`form[action="/login"] input[name=email]`).Length() != 1 ||
		p.doc.Find(`form[action="/login"] input[name=password][type=password]`).Length() != 1 {
		t.Fatalf("login page: %d", p.status)
	}
	for _, lbl := range []string{"f-email", "f-password"} {
		if p.doc.Find(`label[for="`+lbl+`"]`).Length() != 1 {
			t.Fatalf("no label for %s", lbl)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}

	// Wrong password: the form again, with the email kept and no session.
	p = b.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {"nope-nope-nope"}})
	if p.status != http.StatusUnprocessableEntity || p.testid("problem").Length() != 1 || p.input("form", "email") != ten.Admin.Email {
		t.Fatalf("bad login: %d", p.status)
	}

	// Right password: a HttpOnly, SameSite=Lax session cookie, then /next.
	p = b.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {ten.AdminPassword}, "next": {"/leads?status=new"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/leads?status=new" {
		t.Fatalf("login: %d %q", p.status, p.header.Get("Location"))
	}
	sc := ""
	for _, c := range p.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "leadpipe_session=") {
			sc = c
		}
	}
	if !strings.Contains(sc, "leadpipe_session=") || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Lax") || strings.Contains(sc, "Secure") {
		t.Fatalf("cookie %q", sc)
	}
	p = b.get("/leads")
	if p.status != 200 || strings.TrimSpace(p.testid("user-name").Text()) != ten.Admin.Name || p.testid("tenant-name").Text() != "ACME" {
		t.Fatalf("inbox after login: %d %s", p.status, p.body[:min(len(p.body), 400)])
	}
	if p.testid("empty-state").Length() != 1 {
		t.Fatal("empty inbox has no empty state")
	}

	// An open redirect is refused.
	b2 := newBrowser(t, e)
	p = b2.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {ten.AdminPassword}, "next": {"//evil.example/x"}})
	if p.header.Get("Location") != "/leads" {
		t.Fatalf("next=//evil: %q", p.header.Get("Location"))
	}

	// Logout ends the session server-side.
	if p := b.post("/logout", url.Values{}); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/login") {
		t.Fatalf("logout: %d", p.status)
	}
	if p := b.get("/leads"); p.status != http.StatusSeeOther {
		t.Fatalf("after logout: %d", p.status)
	}

	// A cross-site form post is refused (CSRF).
	p = b2.do("POST", "/logout", url.Values{}, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if p.status != http.StatusForbidden {
		t.Fatalf("cross-site post: %d", p.status)
	}

	// Secure cookies behind a trusted https proxy need LEADPIPE_TRUST_PROXY.
	p = newBrowser(t, e).do("POST", "/login", url.Values{"email": {ten.Admin.Email}, "password": {ten.AdminPassword}}, "X-Forwarded-Proto", "https")
	if strings.Contains(p.header.Get("Set-Cookie"), "Secure") {
		t.Fatal("untrusted X-Forwarded-Proto made the cookie Secure")
	}
}

func TestUILoginRateLimit(t *testing.T) {
	e := uiEnv(t, "ui_limit")
	ten := e.Tenant("acme")
	b := newBrowser(t, e)
	b.get("/login") // the form sets the throttle's client cookie
	for i := range 10 {
		if p := b.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {"wrong-password"}}); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("attempt %d: %d", i+1, p.status)
		}
	}
	// The 11th try is refused even with the right password.
	p := b.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {ten.AdminPassword}})
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" || p.testid("problem").Length() != 1 {
		t.Fatalf("11th attempt: %d", p.status)
	}
	// Another account from the same address is not locked.
	other, err := e.App.Tenants.CreateUser(context.Background(), ten.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam", Password: "sam-password-1", Role: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	b.login(other.Email, "sam-password-1")
}

func TestUIRolesAndTenants(t *testing.T) {
	e := uiEnv(t, "ui_roles")
	a := e.Tenant("acme")
	bt := e.Tenant("beta")
	ctx := context.Background()
	if _, err := e.App.Tenants.CreateUser(ctx, a.ID, tenants.CreateUserInput{Email: "staff@acme.test", Name: "Sam Staff", Password: "staff-password-1", Role: "staff"}); err != nil {
		t.Fatal(err)
	}
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	leadID := seedLead(t, e, a.ID, src.ID, "r1", "Dana Lead", "dana@example.com")

	staff := newBrowser(t, e)
	staff.login("staff@acme.test", "staff-password-1")
	if p := staff.get("/leads/" + leadID); p.status != 200 {
		t.Fatalf("staff lead page: %d", p.status)
	}
	if p := staff.get("/definitely-not-a-page"); p.status != http.StatusNotFound {
		t.Fatalf("staff on an unknown page: %d", p.status)
	}
	for _, path := range []string{"/sources", "/sources/" + src.ID, "/settings/users", "/settings/tokens", "/settings/endpoints", "/monitor", "/alerts", "/monitor/sources/" + src.ID} {
		p := staff.get(path)
		if p.status != http.StatusForbidden || p.testid("error-page").Length() != 1 {
			t.Fatalf("staff %s: %d", path, p.status)
		}
		// An admin page says so, with a way back to the inbox.
		if txt := p.testid("error-page").Text(); !strings.Contains(txt, "Admins only") || p.doc.Find(`[data-testid="error-page"] a[href="/leads"]`).Length() != 1 {
			t.Fatalf("staff %s: %q", path, txt)
		}
	}
	if p := staff.post("/settings/tokens", url.Values{"name": {"x"}}); p.status != http.StatusForbidden {
		t.Fatalf("staff create token: %d", p.status)
	}
	if nav := staff.get("/leads").testid("nav-sources"); nav.Length() != 0 {
		t.Fatal("staff sees the sources tab")
	}

	admin := newBrowser(t, e)
	admin.login(a.Admin.Email, a.AdminPassword)
	if p := admin.get("/sources"); p.status != 200 || p.testid("source-row").Length() != 1 {
		t.Fatalf("admin sources: %d", p.status)
	}

	// Tenant B's admin cannot open tenant A's lead or source.
	other := newBrowser(t, e)
	other.login(bt.Admin.Email, bt.AdminPassword)
	for _, path := range []string{"/leads/" + leadID, "/sources/" + src.ID, "/leads/not-an-id"} {
		if p := other.get(path); p.status != http.StatusNotFound {
			t.Fatalf("tenant B %s: %d", path, p.status)
		}
	}
	if p := other.post("/leads/"+leadID+"/status", url.Values{"status": {"won"}, "version": {"1"}}); p.status != http.StatusNotFound {
		t.Fatalf("tenant B post status: %d", p.status)
	}
	if p := other.post("/leads/"+leadID+"/notes", url.Values{"body": {"hi"}, "key": {"k1"}}); p.status != http.StatusNotFound {
		t.Fatalf("tenant B post note: %d", p.status)
	}
	if l, _ := e.App.Tenants.Tenant(ctx, a.ID); l.ID == "" {
		t.Fatal("tenant lookup")
	}
}

const xss = `<script>alert(1)</script>`

func TestUIEscapesLeadFields(t *testing.T) {
	e := uiEnv(t, "ui_xss")
	a := e.Tenant("acme")
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: xss + " source", Kind: "standard"})
	leadID := seedLead(t, e, a.ID, src.ID, "r1", xss, "x@example.com")
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)

	// A note and a status change by a user named like the attack too.
	p := b.get("/leads/" + leadID)
	if p := b.post("/leads/"+leadID+"/notes", url.Values{"body": {xss}, "key": {p.input(`[data-testid="note-form"]`, "key")}}); p.status != http.StatusSeeOther {
		t.Fatalf("note: %d %s", p.status, p.body)
	}

	for _, path := range []string{"/leads", "/leads/board", "/leads/" + leadID, "/leads?q=" + url.QueryEscape(xss), "/sources", "/sources/" + src.ID} {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("%s: %d", path, p.status)
		}
		if strings.Contains(p.body, xss) {
			t.Fatalf("%s contains the raw script tag", path)
		}
		p.doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			if src, ok := s.Attr("src"); !ok || !strings.HasPrefix(src, "/assets/") || strings.TrimSpace(s.Text()) != "" {
				t.Fatalf("%s: unexpected script element %q", path, s.Text())
			}
		})
		if !strings.Contains(p.doc.Text(), xss) && path != "/sources" && path != "/sources/"+src.ID {
			t.Fatalf("%s does not show the name as text", path)
		}
	}
	p = b.get("/leads/" + leadID)
	if got := p.testid("lead-name").Text(); got != xss {
		t.Fatalf("lead name %q", got)
	}
	if got := p.testid("note-body").First().Text(); got != xss {
		t.Fatalf("note %q", got)
	}
	if !strings.Contains(p.testid("payload").Text(), `"<b>bold?</b>"`) {
		t.Fatalf("payload: %q", p.testid("payload").Text())
	}
	if got := b.get("/leads").testid("lead-link").First().Text(); got != xss {
		t.Fatalf("inbox link %q", got)
	}
}

func TestUIFormsCreateOnce(t *testing.T) {
	e := uiEnv(t, "ui_once")
	a := e.Tenant("acme")
	ctx := context.Background()
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	leadID := seedLead(t, e, a.ID, src.ID, "r1", "Dana Lead", "dana@example.com")
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)

	// A double-clicked "Add note": the same rendered key, sent twice at once.
	key := b.get("/leads/"+leadID).input(`[data-testid="note-form"]`, "key")
	if len(key) != 32 {
		t.Fatalf("note form key %q", key)
	}
	form := url.Values{"body": {"Called, no answer."}, "key": {key}}
	done := make(chan page, 2)
	for range 2 {
		go func() { done <- b.post("/leads/"+leadID+"/notes", form) }()
	}
	for range 2 {
		if p := <-done; p.status != http.StatusSeeOther || p.header.Get("Location") != "/leads/"+leadID+"#timeline" {
			t.Fatalf("note post: %d %q %s", p.status, p.header.Get("Location"), p.body)
		}
	}
	// And once more later (a reload of the POST).
	if p := b.post("/leads/"+leadID+"/notes", form); p.status != http.StatusSeeOther {
		t.Fatalf("replayed note post: %d", p.status)
	}
	var n int
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM lead_notes WHERE tenant_id = ? AND lead_id = ?`, a.ID, leadID); err != nil || n != 1 {
		t.Fatalf("notes: %d %v", n, err)
	}
	// An empty note is refused and the key stays usable.
	p := b.post("/leads/"+leadID+"/notes", url.Values{"body": {"  "}, "key": {b.get("/leads/"+leadID).input(`[data-testid="note-form"]`, "key")}})
	if p.status != http.StatusUnprocessableEntity || p.testid("field-error").Length() != 1 {
		t.Fatalf("empty note: %d", p.status)
	}
	// A tampered key is refused.
	if p := b.post("/leads/"+leadID+"/notes", url.Values{"body": {"x"}, "key": {"nope"}}); p.status != http.StatusBadRequest {
		t.Fatalf("bad key: %d", p.status)
	}

	// New lead: twice with one key → one lead, both answers go to it.
	key = b.get("/leads/new").input(`[data-testid="new-lead-form"]`, "key")
	lf := url.Values{"name": {"Walk-in Customer"}, "phone": {"+44 20 7946 0000"}, "key": {key}}
	p1 := b.post("/leads", lf)
	p2 := b.post("/leads", lf)
	if p1.status != http.StatusSeeOther || p1.header.Get("Location") != p2.header.Get("Location") {
		t.Fatalf("new lead: %d %q %q", p1.status, p1.header.Get("Location"), p2.header.Get("Location"))
	}
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND name = 'Walk-in Customer'`, a.ID); err != nil || n != 1 {
		t.Fatalf("manual leads: %d %v", n, err)
	}
	// Invalid: nothing to identify the lead by.
	if p := b.post("/leads", url.Values{"key": {newKey(b)}}); p.status != http.StatusUnprocessableEntity || p.testid("field-error").Length() == 0 {
		t.Fatalf("empty lead: %d", p.status)
	}

	// Users: a double submit makes one user and no "email taken" error.
	uf := url.Values{"name": {"Sam Staff"}, "email": {"sam@acme.test"}, "password": {"sam-password-1"}, "role": {"staff"},
		"key": {b.get("/settings/users").input(`[data-testid="user-form"]`, "key")}}
	for i := range 2 {
		if p := b.post("/settings/users", uf); p.status != http.StatusSeeOther {
			t.Fatalf("add user %d: %d %s", i, p.status, p.body)
		}
	}
	if p := b.get("/settings/users"); p.doc.Find(`[data-email="sam@acme.test"]`).Length() != 1 {
		t.Fatal("user not listed once")
	}
	// ... and one invitation, written with the user.
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM notifications n JOIN users u ON u.tenant_id = n.tenant_id AND u.id = n.user_id
		WHERE n.tenant_id = ? AND u.email = 'sam@acme.test' AND n.kind = 'invitation'`, a.ID); err != nil || n != 1 {
		t.Fatalf("invitations after a double submit: %d %v", n, err)
	}

	// Tokens: the secret shows once; the repeat says it was shown.
	tk := b.get("/settings/tokens").input(`[data-testid="token-form"]`, "key")
	p = b.post("/settings/tokens", url.Values{"name": {"CRM sync"}, "scopes": {"sources:manage"}, "expires": {"30"}, "key": {tk}})
	secret, _ := p.testid("new-token").Find("input").Attr("value")
	if p.status != 200 || !strings.HasPrefix(secret, "lp_") {
		t.Fatalf("token: %d %q", p.status, secret)
	}
	if r := e.Do("GET", "/api/v1/sources", secret, nil); r.Status != 200 {
		t.Fatalf("new token does not work: %d", r.Status)
	}
	if r := e.Do("GET", "/api/v1/leads", secret, nil); r.Status != http.StatusForbidden {
		t.Fatalf("a sources:manage token reads leads: %d", r.Status)
	}
	if row := p.testid("token-row").First(); !strings.Contains(row.Find(`[data-testid="token-scopes"]`).Text(), "sources:manage") ||
		row.Find(`[data-testid="token-expires"] time`).Length() != 1 {
		t.Fatalf("the new token's scopes and expiry are not shown: %q", row.Text())
	}
	p = b.post("/settings/tokens", url.Values{"name": {"CRM sync"}, "scopes": {"sources:manage"}, "expires": {"30"}, "key": {tk}})
	if p.testid("new-token").Length() != 0 || p.testid("token-row").Length() != 2 {
		t.Fatalf("repeat token post: secret shown again or second token (%d rows)", p.testid("token-row").Length())
	}
	// Revoke it.
	id, _ := p.doc.Find(`[data-testid="token-row"] form`).First().Attr("action")
	if p := b.post(id, url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.status)
	}
	if r := e.Do("GET", "/api/v1/sources", secret, nil); r.Status != 401 {
		t.Fatalf("revoked token: %d", r.Status)
	}

	// Sources: created once; the repeat shows the same secret again.
	sk := b.get("/sources").input(`[data-testid="source-form"]`, "key")
	sf := url.Values{"name": {"Typeform"}, "slug": {"tf"}, "kind": {"typeform"}, "key": {sk}}
	p1 = b.post("/sources", sf)
	p2 = b.post("/sources", sf)
	s1, _ := p1.testid("new-secret").Find("input").Attr("value")
	s2, _ := p2.testid("new-secret").Find("input").Attr("value")
	if p1.status != 200 || s1 == "" || s1 != s2 {
		t.Fatalf("source create: %d %q %q", p1.status, s1, s2)
	}
	if p := b.get("/sources"); p.testid("source-row").Length() != 2 {
		t.Fatalf("sources listed: %d", p.testid("source-row").Length())
	}
	// A taken slug is a field error, not a crash.
	p = b.post("/sources", url.Values{"name": {"Again"}, "slug": {"tf"}, "kind": {"typeform"}, "key": {newKey(b)}})
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.testid("field-slug").Text(), "already uses") {
		t.Fatalf("taken slug: %d", p.status)
	}
}

func newKey(b *browser) string {
	return b.get("/leads/new").input(`[data-testid="new-lead-form"]`, "key")
}

// Every visible form control on every page has a label (or aria-label).
func TestUIControlsAreLabelled(t *testing.T) {
	e := uiEnv(t, "ui_labels")
	a := e.Tenant("acme")
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	leadID := seedLead(t, e, a.ID, src.ID, "r1", "Dana Lead", "dana@example.com")
	b := newBrowser(t, e)
	for _, path := range []string{"/login"} {
		checkLabels(t, path, b.get(path))
	}
	b.login(a.Admin.Email, a.AdminPassword)
	for _, path := range []string{"/leads", "/leads/board", "/leads/new", "/leads/" + leadID, "/sources", "/sources/" + src.ID,
		"/settings/users", "/settings/tokens", "/settings/endpoints", "/monitor", "/monitor/sources/" + src.ID, "/alerts"} {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("%s: %d", path, p.status)
		}
		checkLabels(t, path, p)
		if p.doc.Find("h1").Length() != 1 {
			t.Errorf("%s: %d h1 elements", path, p.doc.Find("h1").Length())
		}
	}
}

func checkLabels(t *testing.T, path string, p page) {
	t.Helper()
	p.doc.Find("input, select, textarea").Each(func(_ int, s *goquery.Selection) {
		if typ, _ := s.Attr("type"); typ == "hidden" {
			return
		}
		if _, ok := s.Attr("aria-label"); ok {
			return
		}
		id, _ := s.Attr("id")
		if id == "" || p.doc.Find(`label[for="`+id+`"]`).Length() != 1 {
			name, _ := s.Attr("name")
			t.Errorf("%s: control %q (id %q) has no label", path, name, id)
		}
	})
}

func TestUIReconcileNow(t *testing.T) {
	e := uiEnv(t, "ui_reconcile")
	a := e.Tenant("acme")
	ctx := context.Background()
	base, token, form := "http://127.0.0.1:9", "tf-token", "form1"
	src, _, err := e.App.Sources.Create(ctx, a.ID, sources.CreateInput{Slug: "tf", Name: "Typeform", Kind: "typeform",
		Reconcile: &sources.ReconcileInput{BaseURL: &base, AccessToken: &token, FormID: &form}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)
	if p := b.get("/sources/" + plain.ID); p.testid("reconcile").Length() != 0 {
		t.Fatal("a standard source offers reconcile")
	}
	p := b.get("/sources/" + src.ID)
	if p.testid("reconcile-now").Length() != 1 || p.testid("reconcile-run").Length() != 0 {
		t.Fatal("no Reconcile now button")
	}
	for range 2 { // a double click joins the running run
		if p := b.post("/sources/"+src.ID+"/reconcile", url.Values{}); p.status != http.StatusSeeOther {
			t.Fatalf("reconcile now: %d %s", p.status, p.body)
		}
	}
	if p := b.get("/sources/" + src.ID); p.testid("reconcile-run").Length() != 1 {
		t.Fatalf("runs listed: %d", p.testid("reconcile-run").Length())
	}
}

func TestUIInboxPagingAndFilters(t *testing.T) {
	e := uiEnv(t, "ui_inbox")
	a := e.Tenant("acme")
	ctx := context.Background()
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	if _, err := leads.Seed(ctx, e.App.DB, a.ID, leads.SeedOptions{N: 120, SourceID: src.ID, RandSeed: 3}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)

	// Keyset pages: 50 + 50 + 20, no lead twice, newest first throughout.
	seen := map[string]bool{}
	var last string
	path, pages := "/leads", 0
	for path != "" {
		p := b.get(path)
		pages++
		p.testid("lead-row").Each(func(_ int, s *goquery.Selection) {
			id, _ := s.Attr("data-lead-id")
			if seen[id] || (last != "" && id >= last) {
				t.Fatalf("page %d: lead %s out of order or repeated", pages, id)
			}
			seen[id], last = true, id
		})
		path, _ = p.testid("pagination-next").Attr("href")
	}
	if len(seen) != 120 || pages != 3 {
		t.Fatalf("%d leads over %d pages", len(seen), pages)
	}

	// Status counts add up; a status filter lists only that status.
	p := b.get("/leads")
	if got := p.testid("count-all").AttrOr("data-count", ""); got != "120" {
		t.Fatalf("All count %q", got)
	}
	n, _ := strconv.Atoi(p.testid("count-new").AttrOr("data-count", ""))
	p = b.get("/leads?status=new")
	if _, selected := p.testid("count-new").Attr("selected"); p.testid("lead-row").Length() != min(n, 50) || !selected {
		t.Fatalf("status=new: %d rows, count %d", p.testid("lead-row").Length(), n)
	}
	p.doc.Find(`[data-testid="lead-row"] [data-testid="status-badge"]`).Each(func(_ int, s *goquery.Selection) {
		if s.AttrOr("data-status", "") != "new" {
			t.Fatalf("status filter shows %s", s.AttrOr("data-status", ""))
		}
	})

	// "Assigned to me" after assigning one lead to me.
	id := p.testid("lead-row").First().AttrOr("data-lead-id", "")
	lp := b.get("/leads/" + id)
	if r := b.post("/leads/"+id+"/owner", url.Values{"owner": {a.Admin.ID}, "version": {lp.input(`[data-testid="owner-form"]`, "version")}}); r.status != http.StatusSeeOther {
		t.Fatalf("assign: %d", r.status)
	}
	p = b.get("/leads?owner=me")
	if p.testid("lead-row").Length() != 1 || p.testid("lead-row").AttrOr("data-lead-id", "") != id {
		t.Fatalf("owner=me: %d rows", p.testid("lead-row").Length())
	}
	if got := b.get("/leads/" + id).testid("field-owner").Text(); strings.TrimSpace(got) != a.Admin.Name {
		t.Fatalf("owner shown %q", got)
	}

	// A filter from a stale bookmark is dropped with a note, not a 422.
	p = b.get("/leads?status=bogus&source=nope")
	if p.status != 200 || p.testid("problem").Length() != 1 || p.testid("lead-row").Length() != 50 {
		t.Fatalf("bad filters: %d", p.status)
	}
	// The htmx request gets the same page (htmx selects #inbox-results).
	p = b.do("GET", "/leads?q=zzzz-no-match", nil, "HX-Request", "true")
	if p.doc.Find("#inbox-results").Length() != 1 || p.testid("empty-state").Length() != 1 {
		t.Fatal("no-match search")
	}
}

// TestUIInboxViewsWithSearch: every quick view answers with a search too
// (the open-status views put the status condition in the search's index
// ranges once, not twice).
func TestUIInboxViewsWithSearch(t *testing.T) {
	e := uiEnv(t, "ui_views")
	a := e.Tenant("views")
	for _, n := range []string{"Dana Scully", "Fox Mulder"} {
		createLead(t, e, a.Token, map[string]any{"name": n})
	}
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)
	for _, v := range []string{"mine", "due", "unassigned", "all"} {
		for _, q := range []string{"", "dan", "zzz"} {
			p := b.get("/leads?view=" + v + "&q=" + q)
			if p.status != 200 {
				t.Errorf("view %s q %q: %d", v, q, p.status)
			}
		}
	}
	if p := b.get("/leads?view=all&q=dan"); p.testid("lead-row").Length() != 1 {
		t.Errorf("all + dan: %d rows", p.testid("lead-row").Length())
	}
}

// An endpoint_disabled alert is about an outbound endpoint, not a source:
// the alerts page names its URL and links to its page, with no chart.
func TestUIEndpointDisabledAlert(t *testing.T) {
	e := uiEnv(t, "ui_endpoint_alert")
	a := e.Tenant("acme")
	ctx := context.Background()
	res := e.Do("POST", "/api/v1/endpoints", a.Token, map[string]any{"url": "https://crm.example.com/hooks", "events": []string{"lead.created"}})
	if res.Status != 201 {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	var ep struct{ ID, URL string }
	res.JSON(t, &ep)
	err := db.InTx(ctx, e.App.DB, func(tx *sqlx.Tx) error {
		return e.App.Web.Monitor.OpenEndpointAlert(ctx, tx, a.ID, ep.ID, map[string]any{"summary": "outbound endpoint disabled", "url": ep.URL})
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)
	p := b.get("/alerts")
	item := p.testid("alert")
	if item.Length() != 1 {
		t.Fatalf("alerts listed: %d", item.Length())
	}
	title := item.Find(".alert-title")
	href, _ := title.Find("a").Attr("href")
	if !strings.Contains(title.Text(), "Outbound endpoint disabled") || !strings.Contains(title.Text(), ep.URL) || href != "/settings/endpoints/"+ep.ID {
		t.Fatalf("alert title %q links to %q", strings.Join(strings.Fields(title.Text()), " "), href)
	}
	if item.Find(`[data-testid="alert-chart"]`).Length() != 0 || item.Find(`[data-testid="alert-endpoint"]`).Length() != 1 {
		t.Fatal("an endpoint alert offers a source chart, or no link to the endpoint")
	}
	if p := b.get(href); p.status != http.StatusOK {
		t.Fatalf("the endpoint page: %d", p.status)
	}
	// The fire time is in the reader's own zone (PRODUCT §10).
	open, _, err := e.App.Web.Monitor.Alerts(ctx, a.ID, "open", "", 10)
	if err != nil || len(open) != 1 {
		t.Fatalf("open alerts: %v %v", open, err)
	}
	if when := p.testid("alert-when").Text(); !strings.Contains(when, open[0].FiredAt.UTC().Format("Jan 02, 15:04 MST")) {
		t.Fatalf("in UTC, the alert says %q", when)
	}
	if err := e.App.Tenants.SetTimeZone(ctx, a.ID, a.Admin.ID, "America/New_York"); err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	if when := b.get("/alerts").testid("alert-when").Text(); !strings.Contains(when, open[0].FiredAt.In(ny).Format("Jan 02, 15:04 MST")) {
		t.Fatalf("in New York, the alert says %q (fired %s)", when, open[0].FiredAt)
	}
}

// The merge picker shows a follow-up due time in the reader's own zone
// (PRODUCT §10), as the lead page does.
func TestUIMergePickerDueInReadersZone(t *testing.T) {
	e := uiEnv(t, "ui_merge_zone")
	a := e.Tenant("acme")
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"Ada One", "Ada Two"} {
		ids = append(ids, createLead(t, e, a.Token, map[string]any{"name": name, "email": "ada@example.com"}).ID)
	}
	due := time.Date(2026, 1, 15, 14, 30, 0, 0, time.UTC) // 09:30 in New York (EST)
	if res := e.Do("PATCH", "/api/v1/leads/"+ids[1], a.Token, map[string]any{"due_at": due.Format(time.RFC3339)}, "If-Match", "*",
		"Content-Type", "application/merge-patch+json"); res.Status != 200 {
		t.Fatalf("patch due: %d %s", res.Status, res.Body)
	}
	if err := e.App.Tenants.SetTimeZone(ctx, a.ID, a.Admin.ID, "America/New_York"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)
	p := b.get("/leads/" + ids[0] + "/merge?with=" + ids[1])
	if p.status != http.StatusOK {
		t.Fatalf("merge page: %d", p.status)
	}
	if got := strings.Join(strings.Fields(p.testid("pick-due_at").Text()), " "); !strings.Contains(got, "15 Jan 2026 09:30") {
		t.Fatalf("the due time in New York: %q", got)
	}
}
