package notify_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apptest"
	"leadpipe/internal/db"
	"leadpipe/internal/notify"
	"leadpipe/internal/notify/smtptest"
)

// redisNotify is this package's Redis database number (apptest's list
// names the others').
const redisNotify = 14

const from = "Leadpipe <leads@acme.test>"

func newApp(t *testing.T, prefix, smtpURL string, worker bool) *apptest.Env {
	t.Helper()
	env := map[string]string{"LEADPIPE_MAIL_FROM": from}
	if smtpURL != "" {
		env["LEADPIPE_SMTP_URL"] = smtpURL
	}
	return apptest.New(t, prefix, apptest.Options{RedisDB: redisNotify, Worker: worker, Env: env})
}

type nrow struct {
	ID        string    `db:"id"`
	Key       string    `db:"nkey"`
	Kind      string    `db:"kind"`
	UserID    string    `db:"user_id"`
	State     string    `db:"state"`
	Attempts  int       `db:"attempts"`
	LastError *string   `db:"last_error"`
	Text      *string   `db:"body_text"`
	HTML      *string   `db:"body_html"`
	Subject   *string   `db:"subject"`
	NextAt    time.Time `db:"next_at"`
}

func rows(t *testing.T, e *apptest.Env, tenantID string) map[string]nrow {
	t.Helper()
	var rs []nrow
	if err := e.App.DB.SelectContext(context.Background(), &rs, `SELECT id, nkey, kind, user_id, state, attempts, last_error,
		body_text, body_html, subject, next_at FROM notifications WHERE tenant_id = ?`, tenantID); err != nil {
		t.Fatal(err)
	}
	out := map[string]nrow{}
	for _, r := range rs {
		out[r.Key] = r
	}
	return out
}

// ownerRule gives every new lead to userID.
func ownerRule(t *testing.T, e *apptest.Env, token, userID string) {
	t.Helper()
	if r := e.Do("PUT", "/api/v1/assignment", token, map[string]any{"first_response_minutes": 30, "rules": []any{
		map[string]any{"name": "All to Ada", "when": map[string]any{}, "strategy": "owner", "owner_id": userID}}}); r.Status != 200 {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
}

// adminOwnsLeads starts an app without mail and a tenant "acme" whose
// admin is given every new lead.
func adminOwnsLeads(t *testing.T, prefix string) (*apptest.Env, apptest.Tenant) {
	t.Helper()
	e := newApp(t, prefix, "", false)
	ten := e.Tenant("acme")
	ownerRule(t, e, ten.Token, ten.Admin.ID)
	return e, ten
}

func createLead(t *testing.T, e *apptest.Env, token, name string) string {
	t.Helper()
	r := e.Do("POST", "/api/v1/leads", token, map[string]any{"name": name, "email": strings.ToLower(name) + "@example.com"},
		"Idempotency-Key", "create-"+name)
	if r.Status != 201 {
		t.Fatalf("create lead: %d %s", r.Status, r.Body)
	}
	var l struct {
		ID string `json:"id"`
	}
	r.JSON(t, &l)
	return l.ID
}

func age(t *testing.T, e *apptest.Env, tenantID, id string, q string) {
	t.Helper()
	if _, err := e.App.DB.ExecContext(context.Background(), `UPDATE notifications SET `+q+` WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		t.Fatal(err)
	}
}

// The outbox against a real SMTP server with STARTTLS and AUTH: a lead's
// assignment writes "assigned to you" in its transaction; a 421 is retried
// later with the same Message-ID, then accepted; a 550 fails at once; a
// connection cut after DATA is retried; a notification still failing 24 h
// after it was written is marked failed. Times are in the recipient's zone.
func TestOutboxSendsRetriesAndGivesUp(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	plan := map[string][]error{} // by lead name in the Message-ID's lead: replies in order
	replies := map[string]int{}
	s := smtptest.Start(t, smtptest.Options{TLS: true, User: "lp", Pass: "pw", Script: func(_ int, id string) error {
		mu.Lock()
		defer mu.Unlock()
		for lead, rs := range plan {
			if strings.Contains(id, lead) {
				n := replies[id]
				replies[id]++
				if n < len(rs) {
					return rs[n]
				}
			}
		}
		return nil
	}})
	e := newApp(t, "notify_outbox", "smtp://lp:pw@"+s.Addr, false)
	n := e.App.Web.Notify
	n.Mailer = mailer(t, "smtp://lp:pw@"+s.Addr, s) // trusts the test server's certificate
	ten := e.Tenant("acme")
	if err := e.App.Tenants.SetTimeZone(ctx, ten.ID, ten.Admin.ID, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	ownerRule(t, e, ten.Token, ten.Admin.ID)
	leads := map[string]string{}
	for _, name := range []string{"Ok", "Busy", "Refused", "Cut", "Stuck"} {
		leads[name] = createLead(t, e, ten.Token, name)
	}
	e421 := &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"}
	mu.Lock()
	plan[leads["Busy"]] = []error{e421}
	plan[leads["Refused"]] = []error{&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}}
	plan[leads["Cut"]] = []error{smtptest.Cut}
	plan[leads["Stuck"]] = []error{e421, e421, e421}
	mu.Unlock()

	rs := rows(t, e, ten.ID)
	if len(rs) != 5 {
		t.Fatalf("%d notifications, want 5: %+v", len(rs), rs)
	}
	key := func(name string) string { return "assigned:" + leads[name] + ":new" }
	for name := range leads {
		r, ok := rs[key(name)]
		if !ok || r.State != notify.StatePending || r.UserID != ten.Admin.ID {
			t.Fatalf("%s: %+v", name, r)
		}
		if err := n.Send(ctx, ten.ID, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	rs = rows(t, e, ten.ID)
	want := map[string]struct {
		state    string
		attempts int
	}{"Ok": {"sent", 1}, "Busy": {"pending", 1}, "Refused": {"failed", 1}, "Cut": {"pending", 1}, "Stuck": {"pending", 1}}
	for name, w := range want {
		if r := rs[key(name)]; r.State != w.state || r.Attempts != w.attempts {
			t.Fatalf("%s after the first attempt: %s/%d, want %s/%d (%v)", name, r.State, r.Attempts, w.state, w.attempts, r.LastError)
		}
	}
	if r := rs[key("Busy")]; !r.NextAt.After(time.Now().Add(20*time.Second)) || r.LastError == nil || !strings.Contains(*r.LastError, "421") {
		t.Fatalf("Busy not backed off: %+v", r)
	}
	if r := rs[key("Refused")]; r.LastError == nil || !strings.Contains(*r.LastError, "550") {
		t.Fatalf("Refused: %+v", r)
	}
	// Not due yet: a send now does nothing.
	if err := n.Send(ctx, ten.ID, rs[key("Busy")].ID); err != nil {
		t.Fatal(err)
	}
	// Due again; Stuck was written 25 h ago.
	for _, name := range []string{"Busy", "Cut", "Stuck"} {
		age(t, e, ten.ID, rs[key(name)].ID, "next_at = NOW(6) - INTERVAL 1 SECOND")
	}
	age(t, e, ten.ID, rs[key("Stuck")].ID, "created_at = NOW(6) - INTERVAL 25 HOUR")
	for _, name := range []string{"Busy", "Cut", "Stuck"} {
		if err := n.Send(ctx, ten.ID, rs[key(name)].ID); err != nil {
			t.Fatal(err)
		}
	}
	rs = rows(t, e, ten.ID)
	want = map[string]struct {
		state    string
		attempts int
	}{"Ok": {"sent", 1}, "Busy": {"sent", 2}, "Refused": {"failed", 1}, "Cut": {"sent", 2}, "Stuck": {"failed", 2}}
	for name, w := range want {
		if r := rs[key(name)]; r.State != w.state || r.Attempts != w.attempts {
			t.Fatalf("%s at the end: %s/%d, want %s/%d", name, r.State, r.Attempts, w.state, w.attempts)
		}
	}
	// Delivered: Ok, Busy, Cut, once each, with the key as Message-ID.
	got := map[string]int{}
	for _, m := range s.Messages() {
		got[m.MessageID]++
	}
	for _, name := range []string{"Ok", "Busy", "Cut"} {
		id := notify.MessageID(key(name), from)
		if got[id] != 1 {
			t.Fatalf("%s delivered %d times (%v)", name, got[id], got)
		}
	}
	if len(got) != 3 {
		t.Fatalf("delivered %v", got)
	}
	if id := notify.MessageID(key("Busy"), from); s.Tried(id) != 2 {
		t.Fatalf("Busy reached DATA %d times", s.Tried(id))
	}
	// The message: the recipient's zone, both parts, a link to the lead.
	ok := rs[key("Ok")]
	if ok.Subject == nil || *ok.Subject != "New lead for you: Ok" {
		t.Fatalf("subject %v", ok.Subject)
	}
	for _, want := range []string{"Hello Admin acme", "CET", "All to Ada", "/leads/" + leads["Ok"], "ok@example.com"} {
		if !strings.Contains(*ok.Text, want) || !strings.Contains(*ok.HTML, want) {
			t.Fatalf("message lacks %q:\n%s\n%s", want, *ok.Text, *ok.HTML)
		}
	}
}

// Without SMTP every message is kept, rendered, for the preview; a kind
// the user turned off is skipped; quiet hours hold a message back to
// their end in the user's zone.
func TestPreviewPreferencesQuietHours(t *testing.T) {
	ctx := context.Background()
	e, ten := adminOwnsLeads(t, "notify_preview")
	n := e.App.Web.Notify
	first := createLead(t, e, ten.Token, "First")
	rs := rows(t, e, ten.ID)
	r := rs["assigned:"+first+":new"]
	if err := n.Send(ctx, ten.ID, r.ID); err != nil {
		t.Fatal(err)
	}
	if r = rows(t, e, ten.ID)[r.Key]; r.State != notify.StatePreview || r.Text == nil || !strings.Contains(*r.Text, "First") {
		t.Fatalf("preview: %+v", r)
	}

	if _, err := notify.PutPreferences(ctx, e.App.DB, ten.ID, ten.Admin.ID, notify.Preferences{Off: []string{notify.KindAssigned}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	second := createLead(t, e, ten.Token, "Second")
	r = rows(t, e, ten.ID)["assigned:"+second+":new"]
	if err := n.Send(ctx, ten.ID, r.ID); err != nil {
		t.Fatal(err)
	}
	if r = rows(t, e, ten.ID)[r.Key]; r.State != notify.StateSkipped {
		t.Fatalf("turned off but %+v", r)
	}

	// Quiet from an hour ago to an hour from now, in New York.
	if err := e.App.Tenants.SetTimeZone(ctx, ten.ID, ten.Admin.ID, "America/New_York"); err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	local := time.Now().In(ny)
	hm := func(t time.Time) string { return t.Format("15:04") }
	if _, err := notify.PutPreferences(ctx, e.App.DB, ten.ID, ten.Admin.ID, notify.Preferences{
		QuietFrom: hm(local.Add(-time.Hour)), QuietTo: hm(local.Add(time.Hour))}, time.Now()); err != nil {
		t.Fatal(err)
	}
	third := createLead(t, e, ten.Token, "Third")
	r = rows(t, e, ten.ID)["assigned:"+third+":new"]
	if err := n.Send(ctx, ten.ID, r.ID); err != nil {
		t.Fatal(err)
	}
	r = rows(t, e, ten.ID)[r.Key]
	if until := time.Until(r.NextAt); r.State != notify.StatePending || until < 58*time.Minute || until > 61*time.Minute {
		t.Fatalf("quiet hours: %+v (in %s)", r, time.Until(r.NextAt))
	}
	if _, err := notify.PutPreferences(ctx, e.App.DB, ten.ID, ten.Admin.ID, notify.Preferences{Off: []string{"invitation"}}, time.Now()); err == nil {
		t.Fatal("an invitation cannot be turned off")
	}
}

// Many writers of one key at once (the same cause seen twice): one row.
func TestWriteOneKeyOnce(t *testing.T) {
	ctx := context.Background()
	e := newApp(t, "notify_once", "", false)
	ten := e.Tenant("acme")
	other := e.Tenant("other")
	var g apptest.Group
	var won atomic.Int64
	for i := 0; i < 30; i++ {
		g.Go(func() error {
			var k int64
			err := db.InTx(ctx, e.App.DB, func(tx *sqlx.Tx) error {
				var err error
				k, err = notify.Write(ctx, tx, ten.ID, time.Now(), []notify.Notification{{Kind: notify.KindDigest,
					UserID: ten.Admin.ID, Subject: ten.Admin.ID, Cause: "2026-12-05", Data: map[string]string{"day": "2026-12-05"}}})
				return err
			})
			won.Add(k)
			return err
		})
	}
	g.Wait(t)
	if won.Load() != 1 || len(rows(t, e, ten.ID)) != 1 {
		t.Fatalf("won %d, rows %d", won.Load(), len(rows(t, e, ten.ID)))
	}
	// The same key in another tenant is another notification.
	if k, err := notify.Write(ctx, e.App.DB, other.ID, time.Now(), []notify.Notification{{Kind: notify.KindDigest,
		UserID: other.Admin.ID, Subject: ten.Admin.ID, Cause: "2026-12-05"}}); err != nil || k != 1 {
		t.Fatalf("other tenant: %d %v", k, err)
	}
	if len(rows(t, e, ten.ID)) != 1 || len(rows(t, e, other.ID)) != 1 {
		t.Fatal("tenants mixed")
	}
}
