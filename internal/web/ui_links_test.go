package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/notify"
	"leadpipe/internal/tenants"
)

// linkOf returns the path of the newest live link of kind for email in a
// tenant, as the outbox puts it in the message (the database holds only
// its hash).
func linkOf(t *testing.T, e *apptest.Env, tenantID, kind, email string) string {
	t.Helper()
	ctx := context.Background()
	var data string
	if err := e.App.DB.GetContext(ctx, &data, `SELECT n.data FROM notifications n JOIN users u ON u.tenant_id = n.tenant_id AND u.id = n.user_id
		WHERE n.tenant_id = ? AND n.kind = ? AND u.email = ? ORDER BY n.created_at DESC, n.id DESC LIMIT 1`, tenantID, kind, email); err != nil {
		t.Fatalf("no %s message for %s: %v", kind, email, err)
	}
	var d map[string]string
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatal(err)
	}
	token, _, err := e.App.Tenants.LinkToken(ctx, tenantID, kind, d["cause"])
	if err != nil {
		t.Fatalf("link of %s: %v", email, err)
	}
	p := "/reset/"
	if kind == tenants.LinkInvitation {
		p = "/invite/"
	}
	return p + token
}

// rawPost posts a form and returns status, headers and body bytes.
func rawPost(t *testing.T, e *apptest.Env, path string, form url.Values) (int, http.Header, []byte) {
	t.Helper()
	res, err := http.PostForm(e.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, res.Header, b.Bytes()
}

// sameAnswer fails unless two answers are identical: status, body bytes,
// and every header but Date and X-Request-Id.
func sameAnswer(t *testing.T, what string, s1 int, h1 http.Header, b1 []byte, s2 int, h2 http.Header, b2 []byte) {
	t.Helper()
	if s1 != s2 || !bytes.Equal(b1, b2) {
		t.Fatalf("%s: answers differ: %d (%d bytes) vs %d (%d bytes)\n%s\n---\n%s", what, s1, len(b1), s2, len(b2), b1, b2)
	}
	for k := range h1 {
		// Date and the request's own id differ between any two answers.
		if k != "Date" && k != "X-Request-Id" && h1.Get(k) != h2.Get(k) {
			t.Fatalf("%s: header %s differs: %q vs %q", what, k, h1.Get(k), h2.Get(k))
		}
	}
	if len(h1) != len(h2) {
		t.Fatalf("%s: header sets differ: %v vs %v", what, h1, h2)
	}
}

// Password reset: the answer is byte-identical for a known and an unknown
// address (and so is the rate limit's); the link is stored only as a
// hash (never in the kept message either); each tenant's membership gets
// its own link, which resets that tenant's password alone; using a link
// spends it and every other outstanding link of the user, and ends the
// user's sessions in that tenant only.
func TestPasswordResetFlow(t *testing.T) {
	ctx := context.Background()
	e := uiEnv(t, "ui_reset")
	a, b := e.Tenant("reset-a"), e.Tenant("reset-b")
	for _, ten := range []apptest.Tenant{a, b} {
		if _, err := e.App.Tenants.CreateUser(ctx, ten.ID, tenants.CreateUserInput{Email: "pat@example.test", Name: "Pat " + ten.Slug,
			Password: "old-password-1", Role: "staff"}); err != nil {
			t.Fatal(err)
		}
	}
	// Pat is signed in to both tenants.
	sessions := map[string]*browser{}
	for _, ten := range []apptest.Tenant{a, b} {
		br := newBrowser(t, e)
		if p := br.post("/login", url.Values{"email": {"pat@example.test"}, "password": {"old-password-1"}, "tenant": {ten.Slug}}); p.status != http.StatusSeeOther {
			t.Fatalf("sign in to %s: %d", ten.Slug, p.status)
		}
		sessions[ten.Slug] = br
	}

	if p := newBrowser(t, e).get("/login"); p.doc.Find(`a[href="/login/forgot"]`).Length() != 1 {
		t.Fatal("no Forgot password? link on the sign-in page")
	}
	s1, h1, b1 := rawPost(t, e, "/login/forgot", url.Values{"email": {"pat@example.test"}})
	s2, h2, b2 := rawPost(t, e, "/login/forgot", url.Values{"email": {"nobody@example.test"}})
	sameAnswer(t, "known vs unknown address", s1, h1, b1, s2, h2, b2)
	if s1 != http.StatusOK || !strings.Contains(string(b1), `data-testid="reset-sent"`) {
		t.Fatalf("reset answer: %d %s", s1, b1)
	}
	var n int
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM notifications WHERE kind = 'password_reset'`); err != nil || n != 2 {
		t.Fatalf("reset messages: %d %v (want one per tenant of pat)", n, err)
	}

	// A second request: two live links in tenant a.
	if s, _, _ := rawPost(t, e, "/login/forgot", url.Values{"email": {"Pat@Example.test "}}); s != http.StatusOK {
		t.Fatalf("second request: %d", s)
	}
	linkA := linkOf(t, e, a.ID, tenants.LinkPasswordReset, "pat@example.test")
	linkB := linkOf(t, e, b.ID, tenants.LinkPasswordReset, "pat@example.test")
	var older string
	if err := e.App.DB.GetContext(ctx, &older, `SELECT JSON_UNQUOTE(JSON_EXTRACT(data, '$.cause')) FROM notifications
		WHERE tenant_id = ? AND kind = 'password_reset' ORDER BY created_at, id LIMIT 1`, a.ID); err != nil {
		t.Fatal(err)
	}
	olderToken, _, err := e.App.Tenants.LinkToken(ctx, a.ID, tenants.LinkPasswordReset, older)
	if err != nil || "/reset/"+olderToken == linkA {
		t.Fatalf("older link: %v", err)
	}

	// Only a hash is stored, and the sent (here: previewed) message keeps
	// a placeholder, not the link.
	secret := linkA[strings.LastIndexByte(linkA, '.')+1:]
	var ids []string
	if err := e.App.DB.SelectContext(ctx, &ids, `SELECT id FROM notifications WHERE tenant_id = ? AND kind = 'password_reset'`, a.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := e.App.Web.Notify.Send(ctx, a.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM notifications WHERE body_text LIKE CONCAT('%', ?, '%') OR body_html LIKE CONCAT('%', ?, '%')
		OR data LIKE CONCAT('%', ?, '%')`, secret, secret, secret); err != nil || n != 0 {
		t.Fatalf("the link's secret is stored in %d messages (%v)", n, err)
	}
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM notifications WHERE tenant_id = ? AND kind = 'password_reset' AND state = 'preview'
		AND body_text LIKE CONCAT('%', ?, '%')`, a.ID, notify.LinkWithheld); err != nil || n != 2 {
		t.Fatalf("kept messages with the placeholder: %d %v", n, err)
	}
	// The admin's preview (no SMTP here) shows the live link.
	admin := newBrowser(t, e)
	admin.login(a.Admin.Email, a.AdminPassword)
	if p := admin.get("/settings/mail?id=" + ids[0]); !strings.Contains(p.testid("mail-text").Text(), "/reset/"+a.ID+".") {
		t.Fatalf("preview without the link: %s", p.testid("mail-text").Text())
	}

	// Tenant isolation: a's link with b's tenant id opens nothing.
	swapped := strings.Replace(linkA, "/reset/"+a.ID, "/reset/"+b.ID, 1)
	br := newBrowser(t, e)
	if p := br.get(swapped); p.status != http.StatusGone {
		t.Fatalf("a's link under b's id: %d", p.status)
	}
	if p := br.get(linkA); p.status != 200 || !strings.Contains(p.body, "pat@example.test") || !strings.Contains(p.body, "RESET-A") {
		t.Fatalf("reset page: %d", p.status)
	}
	if p := br.post(linkA, url.Values{"password": {"new-password-1"}, "confirm": {"new-password-2"}}); p.status != 422 {
		t.Fatalf("mismatched passwords: %d", p.status)
	}
	if p := br.post(linkA, url.Values{"password": {"short"}, "confirm": {"short"}}); p.status != 422 {
		t.Fatalf("short password: %d", p.status)
	}
	p := br.post(linkA, url.Values{"password": {"new-password-1"}, "confirm": {"new-password-1"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/login?reset=1" {
		t.Fatalf("reset: %d %s", p.status, p.header.Get("Location"))
	}
	// Spent, and so is the older link; b's link still works.
	if p := br.post(linkA, url.Values{"password": {"other-password-1"}, "confirm": {"other-password-1"}}); p.status != http.StatusGone {
		t.Fatalf("link used twice: %d", p.status)
	}
	if p := br.get("/reset/" + olderToken); p.status != http.StatusGone {
		t.Fatalf("the older link still opens: %d", p.status)
	}
	if p := br.get(linkB); p.status != 200 {
		t.Fatalf("b's link after a's reset: %d", p.status)
	}
	if ls, err := e.App.Tenants.Authenticate(ctx, "pat@example.test", "new-password-1", ""); err != nil || len(ls) != 1 || ls[0].Tenant.ID != a.ID {
		t.Fatalf("new password opens %v %v (want tenant a only)", ls, err)
	}
	if ls, err := e.App.Tenants.Authenticate(ctx, "pat@example.test", "old-password-1", ""); err != nil || len(ls) != 1 || ls[0].Tenant.ID != b.ID {
		t.Fatalf("old password opens %v %v (want tenant b only)", ls, err)
	}
	if p := sessions["reset-a"].get("/leads"); p.status != http.StatusSeeOther {
		t.Fatalf("a's session survived the reset: %d", p.status)
	}
	if p := sessions["reset-b"].get("/leads"); p.status != 200 {
		t.Fatalf("b's session ended by a's reset: %d", p.status)
	}
	var audits int
	if err := e.App.DB.GetContext(ctx, &audits, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'user.password_reset'`, a.ID); err != nil || audits != 1 {
		t.Fatalf("audit: %d %v", audits, err)
	}
	if p := br.get("/login?reset=1"); !strings.Contains(p.body, "Your new password is set") {
		t.Fatal("no notice after the reset")
	}

	// The limit: every request counts, known address or not, and its
	// answer is the same for both. Pat has asked twice.
	for i := 0; i < 3; i++ {
		if s, _, _ := rawPost(t, e, "/login/forgot", url.Values{"email": {"ghost@example.test"}}); s != 200 {
			t.Fatalf("ghost request %d: %d", i+1, s)
		}
	}
	if s, _, _ := rawPost(t, e, "/login/forgot", url.Values{"email": {"pat@example.test"}}); s != 200 {
		t.Fatalf("pat's third request: %d", s)
	}
	s1, h1, b1 = rawPost(t, e, "/login/forgot", url.Values{"email": {"pat@example.test"}})
	s2, h2, b2 = rawPost(t, e, "/login/forgot", url.Values{"email": {"ghost@example.test"}})
	if s1 != http.StatusTooManyRequests {
		t.Fatalf("fourth request: %d", s1)
	}
	sameAnswer(t, "limited known vs unknown", s1, h1, b1, s2, h2, b2)
}

// Two tenants' links never cross, and the users API invites: without a
// password the user gets an invitation (72 h), the page behind it sets
// the password and signs in, a new invitation replaces the old link, and
// one who has a password gets 409.
func TestInvitationFlow(t *testing.T) {
	ctx := context.Background()
	e := uiEnv(t, "ui_invite")
	a := e.Tenant("inv-a")
	res := e.Do("POST", "/api/v1/users", a.Token, map[string]any{"email": "kim@example.test", "name": "Kim", "role": "staff"})
	if res.Status != http.StatusCreated {
		t.Fatalf("invite: %d %s", res.Status, res.Body)
	}
	var kim struct {
		ID       string     `json:"id"`
		Invited  bool       `json:"invited"`
		Until    *time.Time `json:"invitation_expires_at"`
		Password string     `json:"password"`
	}
	res.JSON(t, &kim)
	if !kim.Invited || kim.Until == nil || kim.Until.Sub(time.Now()) < 71*time.Hour || kim.Until.Sub(time.Now()) > 73*time.Hour {
		t.Fatalf("invited user: %s", res.Body)
	}
	first := linkOf(t, e, a.ID, tenants.LinkInvitation, "kim@example.test")
	// Kim cannot sign in before choosing a password.
	if _, err := e.App.Tenants.Authenticate(ctx, "kim@example.test", "", ""); err == nil {
		t.Fatal("an invited user signs in with an empty password")
	}
	if r := e.Do("POST", "/api/v1/users/"+kim.ID+"/invitation", a.Token, nil); r.Status != http.StatusCreated {
		t.Fatalf("new invitation: %d %s", r.Status, r.Body)
	}
	second := linkOf(t, e, a.ID, tenants.LinkInvitation, "kim@example.test")
	// The message is written in the invitation's own transaction: an
	// invitation that fails (the email is taken) leaves neither a link
	// nor a message.
	if r := e.Do("POST", "/api/v1/users", a.Token, map[string]any{"email": "kim@example.test", "name": "Kim again", "role": "staff"}); r.Status != http.StatusConflict {
		t.Fatalf("second invite of one email: %d", r.Status)
	}
	var links, msgs int
	if err := e.App.DB.GetContext(ctx, &links, `SELECT COUNT(*) FROM user_links WHERE tenant_id = ?`, a.ID); err != nil || links != 2 {
		t.Fatalf("links after a failed invitation: %d %v", links, err)
	}
	if err := e.App.DB.GetContext(ctx, &msgs, `SELECT COUNT(*) FROM notifications WHERE tenant_id = ? AND kind = 'invitation'`, a.ID); err != nil || msgs != 2 {
		t.Fatalf("messages after a failed invitation: %d %v", msgs, err)
	}
	br := newBrowser(t, e)
	if p := br.get(first); p.status != http.StatusGone {
		t.Fatalf("the replaced invitation still opens: %d", p.status)
	}
	p := br.get(second)
	if p.status != 200 || !strings.Contains(p.body, "Welcome to INV-A") {
		t.Fatalf("invitation page: %d", p.status)
	}
	p = br.post(second, url.Values{"password": {"kim-password-1"}, "confirm": {"kim-password-1"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/leads" {
		t.Fatalf("accept: %d %s", p.status, p.header.Get("Location"))
	}
	if p := br.get("/leads"); p.status != 200 {
		t.Fatalf("not signed in after accepting: %d", p.status)
	}
	if ls, err := e.App.Tenants.Authenticate(ctx, "kim@example.test", "kim-password-1", ""); err != nil || len(ls) != 1 {
		t.Fatalf("kim signs in: %v", err)
	}
	if r := e.Do("POST", "/api/v1/users/"+kim.ID+"/invitation", a.Token, nil); r.Status != http.StatusConflict {
		t.Fatalf("inviting someone with a password: %d", r.Status)
	}
	res = e.Do("GET", "/api/v1/users", a.Token, nil)
	if strings.Contains(string(res.Body), `"invited":true`) {
		t.Fatalf("still invited after accepting: %s", res.Body)
	}
	// The admin may still set a password through the API: no invitation.
	if r := e.Do("POST", "/api/v1/users", a.Token, map[string]any{"email": "lee@example.test", "name": "Lee", "role": "staff", "password": "lee-password-1"}); r.Status != 201 || strings.Contains(string(r.Body), `"invited":true`) {
		t.Fatalf("with a password: %d %s", r.Status, r.Body)
	}
	var n int
	if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM notifications n JOIN users u ON u.tenant_id = n.tenant_id AND u.id = n.user_id
		WHERE n.tenant_id = ? AND u.email = 'lee@example.test'`, a.ID); err != nil || n != 0 {
		t.Fatalf("messages to a user whose password the admin set: %d %v", n, err)
	}
	// An invitation is not a reset link, nor the other way round.
	if p := br.get(strings.Replace(second, "/invite/", "/reset/", 1)); p.status != http.StatusGone {
		t.Fatalf("an invitation opens as a reset: %d", p.status)
	}
}

// Many uses of one link at the same moment against the real MariaDB:
// exactly one sets the password, every other gets the link gone.
func TestLinkUsedOnceUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	e := uiEnv(t, "ui_link_race")
	a := e.Tenant("race-a")
	if _, err := e.App.Tenants.CreateUser(ctx, a.ID, tenants.CreateUserInput{Email: "ron@example.test", Name: "Ron", Password: "old-password-1", Role: "staff"}); err != nil {
		t.Fatal(err)
	}
	// 12 at once: the shared test server allows 151 connections in all.
	const rounds, racers = 5, 12
	for round := range rounds {
		if err := e.App.Tenants.RequestReset(ctx, "ron@example.test"); err != nil {
			t.Fatal(err)
		}
		token := strings.TrimPrefix(linkOf(t, e, a.ID, tenants.LinkPasswordReset, "ron@example.test"), "/reset/")
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, results[i] = e.App.Tenants.UseLink(ctx, token, tenants.LinkPasswordReset, "password-of-racer-"+string(rune('a'+i)))
			}()
		}
		close(start)
		wg.Wait()
		won, winner := 0, -1
		for i, err := range results {
			switch {
			case err == nil:
				won, winner = won+1, i
			case err != tenants.ErrLinkGone:
				t.Fatalf("round %d racer %d: %v", round, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d uses of one link succeeded", round, won)
		}
		if _, err := e.App.Tenants.Authenticate(ctx, "ron@example.test", "password-of-racer-"+string(rune('a'+winner)), ""); err != nil {
			t.Fatalf("round %d: the winner's password does not open: %v", round, err)
		}
		var used int
		if err := e.App.DB.GetContext(ctx, &used, `SELECT COUNT(*) FROM user_links WHERE tenant_id = ? AND used_at IS NOT NULL`, a.ID); err != nil || used != round+1 {
			t.Fatalf("round %d: %d links used (%v)", round, used, err)
		}
	}
}
