package notify_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/tenants"
)

// zoneAt finds a zone where it is now between from and to o'clock.
func zoneAt(t *testing.T, from, to int) string {
	t.Helper()
	for off := -12; off <= 14; off++ {
		name := "Etc/GMT"
		switch {
		case off > 0:
			name += fmt.Sprintf("-%d", off) // POSIX sign: Etc/GMT-3 is UTC+3
		case off < 0:
			name += fmt.Sprintf("+%d", -off)
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			continue
		}
		if h := time.Now().In(loc).Hour(); h >= from && h < to && time.Now().In(loc).Minute() < 58 {
			return name
		}
	}
	t.Skip("no zone found")
	return ""
}

// The scan writes "first response overdue" once per lead to its owner and
// the admins, and each user's digest once a day once it is 08:00 where
// they are (not for a user whose morning it is not); scanning again adds
// nothing. The digest lists the overdue lead.
func TestScanOverdueAndDigest(t *testing.T) {
	ctx := context.Background()
	e := newApp(t, "notify_scan", "", false)
	n := e.App.Web.Notify
	ten := e.Tenant("acme")
	staff, err := e.App.Tenants.CreateUser(ctx, ten.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam", Role: "staff", Password: "a-long-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.App.Tenants.SetTimeZone(ctx, ten.ID, ten.Admin.ID, zoneAt(t, 8, 12)); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Tenants.SetTimeZone(ctx, ten.ID, staff.ID, zoneAt(t, 13, 24)); err != nil {
		t.Fatal(err)
	}
	ownerRule(t, e, ten.Token, staff.ID)
	late := createLead(t, e, ten.Token, "Late")
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET first_response_due_at = NOW(6) - INTERVAL 5 MINUTE WHERE tenant_id = ? AND id = ?`, ten.ID, late); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := n.Scan(ctx, ten.ID); err != nil {
			t.Fatal(err)
		}
	}
	rs := rows(t, e, ten.ID)
	kinds := map[string]int{}
	for k, r := range rs {
		kinds[r.Kind]++
		if r.Kind == "digest" && r.UserID != ten.Admin.ID {
			t.Fatalf("digest outside the user's morning: %s", k)
		}
	}
	if kinds["assigned"] != 1 || kinds["overdue"] != 2 || kinds["digest"] != 1 || len(rs) != 4 {
		t.Fatalf("rows %v", kinds)
	}
	for _, r := range rs {
		if err := n.Send(ctx, ten.ID, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows(t, e, ten.ID) {
		switch r.Kind {
		case "overdue":
			if r.State != "preview" || !strings.Contains(*r.Subject, "First reply overdue: Late") {
				t.Fatalf("overdue: %+v", r)
			}
			if r.UserID == ten.Admin.ID && !strings.Contains(*r.Text, "owner: Sam") {
				t.Fatalf("the admin's message does not name the owner:\n%s", *r.Text)
			}
		case "digest":
			// The admin owns nothing: nothing due, so nothing is sent.
			if r.State != "skipped" {
				t.Fatalf("empty digest: %+v", r)
			}
		}
	}
	// Sam's morning now: Sam's digest lists the overdue lead.
	if err := e.App.Tenants.SetTimeZone(ctx, ten.ID, staff.ID, zoneAt(t, 8, 12)); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx, ten.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows(t, e, ten.ID) {
		if r.Kind == "digest" && r.UserID == staff.ID {
			if err := n.Send(ctx, ten.ID, r.ID); err != nil {
				t.Fatal(err)
			}
			r = rows(t, e, ten.ID)[r.Key]
			if r.State != "preview" || !strings.Contains(*r.Text, "First reply overdue:") || !strings.Contains(*r.Text, "Late") ||
				!strings.Contains(*r.Subject, "0 follow-ups, 1 overdue") {
				t.Fatalf("digest: %+v\n%v", r, r.Text)
			}
			return
		}
	}
	t.Fatal("no digest for Sam")
}
