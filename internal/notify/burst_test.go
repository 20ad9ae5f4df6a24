package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/notify/smtptest"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

// 200 leads posted at once through the webhook route with the worker
// running, assigned round robin among three people: exactly 200 "assigned
// to you" messages reach the SMTP server, one per lead, each to its owner.
func TestBurstOfAssignmentsSendsEachOnce(t *testing.T) {
	ctx := context.Background()
	s := smtptest.Start(t, smtptest.Options{})
	e := newApp(t, "notify_burst", "smtp://"+s.Addr, true)
	ten := e.Tenant("burst")
	var members []string
	emails := map[string]string{}
	for _, name := range []string{"ada", "bob", "cy"} {
		u, err := e.App.Tenants.CreateUser(ctx, ten.ID, tenants.CreateUserInput{Email: name + "@burst.test", Name: name, Role: "staff", Password: "a-long-password-1"})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, u.ID)
		emails[u.ID] = u.Email
	}
	if r := e.Do("PUT", "/api/v1/assignment", ten.Token, map[string]any{"rules": []any{
		map[string]any{"name": "Everyone", "when": map[string]any{}, "strategy": "round_robin", "members": members}}}); r.Status != 200 {
		t.Fatalf("rules: %d %s", r.Status, r.Body)
	}
	src, secret := e.Source(ten.ID, sources.CreateInput{Slug: "std", Name: "Site", Kind: kinds.Standard, Config: kinds.SampleConfig(kinds.Standard)})
	hook := e.Hook("burst", "std", src.Kind, secret)
	hook.Config = kinds.SampleConfig(src.Kind)

	const n = 200
	apptest.FanOut(n, 16, func(i int) {
		id, ref := fmt.Sprintf("dlv-%d", i), fmt.Sprintf("ref-%d", i)
		now := time.Now()
		body := kinds.SampleBody(src.Kind, id, ref, kinds.Lead{Email: fmt.Sprintf("p%d@example.com", i), Name: fmt.Sprintf("P%d", i)}, now)
		status, rb, err := hook.Try(id, body, now)
		if err != nil {
			t.Error(err)
			return
		}
		if status != 200 {
			t.Errorf("%d: %d %s", i, status, rb)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	start := time.Now()
	apptest.Eventually(t, 60*time.Second, "200 messages", func() bool { return len(s.Messages()) >= n })
	t.Logf("200 messages within %s of the last delivery", time.Since(start).Round(time.Millisecond))
	time.Sleep(5 * time.Second) // two more pumps and scans: nothing more may come
	msgs := s.Messages()
	if len(msgs) != n {
		t.Fatalf("%d messages, want %d", len(msgs), n)
	}
	ids := map[string]bool{}
	per := map[string]int{}
	for _, m := range msgs {
		if ids[m.MessageID] {
			t.Fatalf("%s twice", m.MessageID)
		}
		ids[m.MessageID] = true
		per[m.To[0]]++
	}
	var owners []struct {
		Owner string `db:"owner_id"`
		N     int    `db:"n"`
	}
	if err := e.App.DB.SelectContext(ctx, &owners, `SELECT owner_id, COUNT(*) AS n FROM leads WHERE tenant_id = ? GROUP BY owner_id`, ten.ID); err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		if per[emails[o.Owner]] != o.N {
			t.Fatalf("%s owns %d leads, got %d messages (%v)", emails[o.Owner], o.N, per[emails[o.Owner]], per)
		}
	}
	var sent int
	if err := e.App.DB.GetContext(ctx, &sent, `SELECT COUNT(*) FROM notifications WHERE tenant_id = ? AND state = 'sent' AND kind = 'assigned'`, ten.ID); err != nil || sent != n {
		t.Fatalf("%d sent rows (%v)", sent, err)
	}
}
