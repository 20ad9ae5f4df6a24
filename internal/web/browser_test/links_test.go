package browser_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/notify/smtptest"
)

// mailText is the decoded text of every part of a raw message (what a
// person reads, quoted-printable and base64 undone).
func mailText(t *testing.T, raw []byte) string {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		b, _ := io.ReadAll(m.Body)
		return string(b)
	}
	var out strings.Builder
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart() // undoes quoted-printable itself
		if err != nil {
			break
		}
		var r io.Reader = p
		if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "base64") {
			r = base64.NewDecoder(base64.StdEncoding, p)
		}
		b, _ := io.ReadAll(r)
		out.Write(b)
		out.WriteString("\n")
	}
	return out.String()
}

var linkRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+/(?:invite|reset)/[A-Za-z0-9._-]+`)

// waitMail waits for the SMTP server to accept a message to rcpt whose
// subject holds subject, and returns the link in it.
func waitMail(t *testing.T, srv *smtptest.Server, rcpt, subject string, seen map[string]bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range srv.Messages() {
			if seen[m.MessageID] || !strings.Contains(m.Subject, subject) || len(m.To) != 1 || m.To[0] != rcpt {
				continue
			}
			seen[m.MessageID] = true
			text := mailText(t, m.Raw)
			link := linkRE.FindString(text)
			if link == "" {
				t.Fatalf("no link in the message %q:\n%s", m.Subject, text)
			}
			return link
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no message %q to %s within 30 s", subject, rcpt)
	return ""
}

// TestBrowserInvitationAndReset runs both flows end to end in Chromium on
// a 390 px phone, with a real SMTP server in the test process and the
// real worker sending the outbox: an admin invites Kim on the users page,
// Kim opens the link from the e-mail, chooses a password and lands signed
// in; later Kim forgets it, asks on the sign-in page, follows the new
// mail's link, sets a new password and signs in with it; the old link and
// the old password no longer work. The admin also sets Kim away on the
// users page. Screenshots links-* at 390 and 1280 px.
func TestBrowserInvitationAndReset(t *testing.T) {
	requireChromium(t)
	srv := smtptest.Start(t, smtptest.Options{})
	e := apptest.New(t, "ui_browser_links", apptest.Options{RedisDB: apptest.RedisUI, Worker: true,
		Env: map[string]string{"LEADPIPE_SMTP_URL": "smtp://" + srv.Addr, "LEADPIPE_MAIL_FROM": "Leadpipe <leads@acme.test>"}})
	acme := e.Tenant("acme")
	seen := map[string]bool{}

	browser, admin := adminTab(t, e, acme)

	t.Log("the admin invites Kim on the users page")
	admin.open("/settings/users")
	admin.do(
		chromedp.SendKeys(chromedp.CSS(`[data-testid="user-form"] input[name=name]`), "Kim Park", chromedp.NodeVisible),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="user-form"] input[name=email]`), "kim@acme.test", chromedp.NodeVisible),
	)
	admin.submit(`[data-testid="add-user"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "Invited Kim Park") {
		t.Fatalf("flash after inviting: %q", got)
	}
	if got := admin.text(`[data-email="kim@acme.test"] [data-testid="user-status"]`); !strings.Contains(got, "Invited") {
		t.Fatalf("Kim's status: %q", got)
	}
	admin.screenshot("links-users-invited")
	noSideways(t, admin, "users page")

	t.Log("Kim reads the invitation, chooses a password on a phone and lands signed in")
	invite := waitMail(t, srv, "kim@acme.test", "invited", seen)
	kim := newTab(t, browser, e.URL, "kim")
	kim.phone()
	if st := kim.open(strings.TrimPrefix(invite, e.URL)); st != 200 {
		t.Fatalf("invitation page: %d", st)
	}
	if got := kim.text(`[data-testid="set-password-title"]`); got != "Welcome to ACME" {
		t.Fatalf("invitation title %q", got)
	}
	kim.choosePassword("links-invite-page", "invitation page", "kim-first-password")
	if loc := kim.location(); !strings.HasSuffix(loc, "/leads") {
		t.Fatalf("after accepting the invitation at %s", loc)
	}
	if st := kim.open(strings.TrimPrefix(invite, e.URL)); st != 410 {
		t.Fatalf("the invitation opens again: %d", st)
	}

	t.Log("the admin sets Kim away on the users page")
	admin.open("/settings/users")
	admin.do(chromedp.Click(chromedp.CSS(`[data-email="kim@acme.test"] [data-testid="away-control"] summary`), chromedp.NodeVisible))
	until := time.Now().Add(72 * time.Hour).UTC().Format("2006-01-02T15:04")
	admin.do(chromedp.SetValue(chromedp.CSS(`[data-email="kim@acme.test"] [data-testid="user-away-until"]`), until))
	admin.submit(`[data-email="kim@acme.test"] [data-testid="user-away-save"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "Kim Park is away until") {
		t.Fatalf("flash after setting away: %q", got)
	}
	if got := admin.text(`[data-email="kim@acme.test"] [data-testid="user-status"]`); !strings.Contains(got, "Away") {
		t.Fatalf("Kim's status after away: %q", got)
	}
	admin.screenshot("links-users-away")

	t.Log("Kim forgets the password: Forgot password? on the sign-in page, on a phone")
	kim2 := newTab(t, browser, e.URL, "kim-again")
	kim2.phone()
	kim2.open("/login")
	kim2.submit(`[data-testid="forgot-link"]`)
	kim2.do(chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "kim@acme.test", chromedp.NodeVisible))
	kim2.screenshot("links-forgot")
	kim2.phone()
	kim2.submit(`[data-testid="forgot-submit"]`)
	if kim2.count(`[data-testid="reset-sent"]`) != 1 {
		t.Fatal("no confirmation after asking for a reset")
	}
	kim2.screenshot("links-forgot-sent")
	kim2.phone()

	reset := waitMail(t, srv, "kim@acme.test", "Reset your Leadpipe password", seen)
	if st := kim2.open(strings.TrimPrefix(reset, e.URL)); st != 200 {
		t.Fatalf("reset page: %d", st)
	}
	kim2.choosePassword("links-reset-page", "reset page", "kim-second-password")
	if got := kim2.text(`[data-testid="flash"]`); !strings.Contains(got, "Your new password is set") {
		t.Fatalf("after the reset: %q at %s", got, kim2.location())
	}
	kim2.screenshot("links-reset-done")
	kim2.phone()
	kim2.login("kim@acme.test", "kim-second-password")
	if st := kim2.open(strings.TrimPrefix(reset, e.URL)); st != 410 {
		t.Fatalf("the reset link opens again: %d", st)
	}
	if _, err := e.App.Tenants.Authenticate(t.Context(), "kim@acme.test", "kim-first-password", ""); err == nil {
		t.Fatal("the old password still opens")
	}
	// Kim's first session (the invitation's) ended with the reset.
	if loc := func() string { kim.open("/leads"); return kim.location() }(); !strings.Contains(loc, "/login") {
		t.Fatalf("the session from before the reset still works: %s", loc)
	}
	kim2.screenshot("links-gone")
}

// choosePassword saves the set-password page (what) as the screenshot
// shot, checks it fits a phone, and there fills both its fields with pw
// and submits it.
func (tb *tab) choosePassword(shot, what, pw string) {
	tb.t.Helper()
	tb.screenshot(shot)
	tb.phone()
	noSideways(tb.t, tb, what)
	tb.phone()
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), pw, chromedp.NodeVisible),
		chromedp.SendKeys(chromedp.CSS(`input[name=confirm]`), pw, chromedp.NodeVisible),
	)
	tb.submit(`[data-testid="set-password-submit"]`)
}
