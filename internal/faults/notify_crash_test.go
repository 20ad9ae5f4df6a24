//go:build faults

package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/notify"
	"leadpipe/internal/notify/smtptest"
	"leadpipe/internal/redistest"
	"leadpipe/internal/tenants"
)

// notifier writes "assigned to you" as the application's wiring does.
type notifier struct{}

func (notifier) Assigned(ctx context.Context, x db.Ext, tenantID string, as []leads.Handover) error {
	ns := make([]notify.Notification, len(as))
	for i, h := range as {
		ns[i] = notify.Notification{Kind: notify.KindAssigned, UserID: h.OwnerID, LeadID: h.LeadID, Subject: h.LeadID, Cause: h.Cause}
	}
	_, err := notify.Write(ctx, x, tenantID, time.Now(), ns)
	return err
}

// The e-mail outbox with the real worker binary SIGKILLed (a) after the
// SMTP server answered 250 and before the worker marked the notifications
// sent (held there by a gate row the test locks, reached through a
// trigger on the mark), and (b) while the worker waited at MAIL FROM,
// before any message data. After each restart every notification is
// delivered: (a) at least once and at most twice (the one window that may
// resend, with the same Message-ID), (b) exactly once.
func TestNotificationsWorkerKilled(t *testing.T) {
	_, workerBin := binaries(t)
	ctx := context.Background()
	d, dsn := dbtest.New(t, "faults_notify")
	rds := redistest.Single(t)

	var holding atomic.Bool
	var held atomic.Int32
	release := make(chan struct{})
	s := smtptest.Start(t, smtptest.Options{Hold: func() {
		if holding.Load() {
			held.Add(1)
			<-release
		}
	}})

	ten := tenants.NewService(d, nil)
	ten.PasswordCost = 4
	p, err := ten.Provision(ctx, tenants.ProvisionInput{Slug: "crash", Name: "Crash", AdminEmail: "admin@crash.test",
		AdminPassword: "a-long-password-1", AdminName: "Admin"})
	if err != nil {
		t.Fatal(err)
	}
	tenantID := p.Tenant.ID
	ls := leads.NewService(d, nil, nil, leads.WithNotifier(notifier{}))
	owner := p.Admin.ID
	if _, err := ls.PutAssignment(ctx, tenantID, leads.Assignment{FirstResponseMinutes: 60, Rules: []leads.AssignmentRule{
		{Name: "All", Strategy: leads.StrategyOwner, OwnerID: &owner}}}); err != nil {
		t.Fatal(err)
	}
	create := func(prefix string, n int) []string {
		var keys []string
		for i := 0; i < n; i++ {
			l, err := ls.Create(ctx, tenantID, tenants.Principal{TenantID: tenantID, Name: "test"},
				leads.CreateInput{Name: fmt.Sprintf("%s %d", prefix, i)}, idempotency.Once[leads.Lead]{})
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, "assigned:"+l.ID+":"+leads.CauseNew)
		}
		return keys
	}
	states := func() map[string]int {
		var rows []struct {
			State string `db:"state"`
			N     int    `db:"n"`
		}
		if err := d.SelectContext(ctx, &rows, `SELECT state, COUNT(*) AS n FROM notifications WHERE tenant_id = ? GROUP BY state`, tenantID); err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, r := range rows {
			out[r.State] = r.N
		}
		return out
	}
	waitFor := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s (states %v, %d messages)", what, timeout, states(), len(s.Messages()))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	delivered := func() map[string]int {
		out := map[string]int{}
		for _, m := range s.Messages() {
			out[m.MessageID]++
		}
		return out
	}
	const from = "Leadpipe <leads@crash.test>"
	env := map[string]string{
		"LEADPIPE_MYSQL_DSN":   dsn,
		"LEADPIPE_REDIS_ADDR":  rds.Addr(),
		"LEADPIPE_SMTP_URL":    "smtp://" + s.Addr,
		"LEADPIPE_MAIL_FROM":   from,
		"LEADPIPE_SECRET_KEY":  "ZmF1bHRzLWtleS1mYXVsdHMta2V5LWZhdWx0cy0zMmI=",
		"LEADPIPE_WORKER_ADDR": "127.0.0.1:0",
		"LEADPIPE_LOG_LEVEL":   "info",
	}
	worker := newLeadpipe(t, "notify-worker", workerBin, env, t.TempDir())

	// (a) The gate: marking an assigned notification sent first takes the
	// user-level lock notify-arrived (the test sees the arrival), then
	// waits on the gate row.
	for _, q := range []string{`CREATE TABLE notify_gate (id INT PRIMARY KEY)`, `INSERT INTO notify_gate VALUES (1)`,
		`CREATE TRIGGER notify_gate BEFORE UPDATE ON notifications FOR EACH ROW BEGIN
			DECLARE g INT;
			IF OLD.state = 'pending' AND NEW.state = 'sent' THEN
				SET g = GET_LOCK('notify-arrived', 0);
				SELECT id INTO g FROM notify_gate WHERE id = 1 FOR UPDATE;
			END IF;
		END`} {
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	gate, err := d.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.ExecContext(ctx, `SELECT id FROM notify_gate WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	const n = 20
	first := create("Gated", n)
	worker.start(t)
	waitFor("every gated message accepted by the SMTP server", 60*time.Second, func() bool { return len(s.Messages()) >= n })
	waitFor("a mark at the gate", 10*time.Second, func() bool {
		var used *int64
		_ = d.GetContext(ctx, &used, `SELECT IS_USED_LOCK('notify-arrived')`)
		return used != nil
	})
	time.Sleep(500 * time.Millisecond)
	if st := states(); st[notify.StatePending] != n {
		t.Fatalf("before the kill: %v, want %d pending (held at the gate)", st, n)
	}
	worker.signal(syscall.SIGKILL)
	// The dead worker's marks still wait in the server (inside the
	// trigger, which the process list shows): end them, as if they had
	// never arrived (else they commit once the gate opens).
	var marks []int64
	if err := d.SelectContext(ctx, &marks, `SELECT ID FROM information_schema.PROCESSLIST
		WHERE DB = DATABASE() AND INFO LIKE 'SELECT id INTO g FROM notify_gate%' AND ID <> CONNECTION_ID()`); err != nil {
		t.Fatal(err)
	}
	for _, id := range marks {
		_, _ = d.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
	}
	t.Logf("(a) %d marks of the killed worker were waiting at the gate", len(marks))
	if err := gate.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `DROP TRIGGER notify_gate`); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	worker.start(t)
	waitFor("every gated notification sent after the restart", 4*time.Minute, func() bool { return states()[notify.StateSent] == n })
	t.Logf("(a) all sent %s after the kill", time.Since(killedAt).Round(time.Second))
	got := delivered()
	twice := 0
	for _, k := range first {
		c := got[notify.MessageID(k, from)]
		if c != 2 && !(c == 1 && len(marks) < n) {
			t.Fatalf("%s delivered %d times", k, c)
		}
		if c == 2 {
			twice++
		}
	}
	t.Logf("(a) killed between 250 and the mark: %d of %d delivered twice (same Message-ID), the rest once", twice, n)

	// (b) Killed at MAIL FROM, before any data: exactly once each.
	holding.Store(true)
	const m = 10
	second := create("Held", m)
	waitFor("a send held at MAIL", 30*time.Second, func() bool { return held.Load() > 0 })
	time.Sleep(time.Second)
	worker.signal(syscall.SIGKILL)
	holding.Store(false)
	close(release)
	killedAt = time.Now()
	worker.start(t)
	waitFor("every held notification sent after the restart", 4*time.Minute, func() bool { return states()[notify.StateSent] == n+m })
	t.Logf("(b) all sent %s after the kill (%d sends were held at MAIL)", time.Since(killedAt).Round(time.Second), held.Load())
	got = delivered()
	for _, k := range second {
		if c := got[notify.MessageID(k, from)]; c != 1 {
			t.Fatalf("%s delivered %d times, want 1", k, c)
		}
	}
	// Nothing else was sent again.
	time.Sleep(3 * time.Second)
	total := 0
	for _, c := range delivered() {
		total += c
	}
	if total != n+twice+m {
		t.Fatalf("%d messages in all, want %d", total, n+twice+m)
	}
	worker.signal(syscall.SIGTERM)
}
