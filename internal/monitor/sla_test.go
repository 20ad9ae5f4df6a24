package monitor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
)

// The sla_breach rule on real MariaDB: tenant A's lead, assigned with a
// 60-minute first response and unanswered, fires one alert (eight
// evaluators racing) with an alert.fired event once it is 30 minutes past
// due; tenant B's lead (4 hours to answer) fires nothing. A's note answers
// the lead and the next evaluation resolves the alert. The rule's settings
// are per tenant through the API, validated and audited, and a higher
// threshold or turning it off keeps it quiet.
func TestSLABreachFiresAndResolves(t *testing.T) {
	e := monitorEnv(t, "monitor_sla")
	ctx := context.Background()
	svc := e.App.Web.Monitor
	a, b := e.Tenant("sla-a"), e.Tenant("sla-b")

	for _, tc := range []struct {
		ten     apptest.Tenant
		minutes int
	}{{a, 60}, {b, 240}} {
		r := e.Do("PUT", "/api/v1/assignment", tc.ten.Token, map[string]any{"first_response_minutes": tc.minutes, "rules": []any{
			map[string]any{"name": "Admin", "when": map[string]any{}, "strategy": "owner", "owner_id": tc.ten.Admin.ID}}})
		if r.Status != 200 {
			t.Fatalf("assignment: %d %s", r.Status, r.Body)
		}
	}
	alertHook(t, e, a)
	newLead := func(ten apptest.Tenant, key string) leads.Lead {
		var l leads.Lead
		r := e.Do("POST", "/api/v1/leads", ten.Token, map[string]any{"name": "Waiting " + key, "email": key + "@example.com"}, "Idempotency-Key", key)
		r.JSON(t, &l)
		if r.Status != 201 || l.FirstResponseDueAt == nil {
			t.Fatalf("lead: %d %s", r.Status, r.Body)
		}
		return l
	}
	la := newLead(a, "sla-a-1")
	newLead(b, "sla-b-1")

	// Defaults: on, 1 lead, 30 minutes.
	var got monitor.SLARules
	e.Do("GET", "/api/v1/alert-rules/sla-breach", a.Token, nil).JSON(t, &got)
	if !got.Enabled || got.MinOverdue != 1 || got.ForSeconds != 1800 || !got.Default {
		t.Fatalf("defaults: %+v", got)
	}

	due := *la.FirstResponseDueAt
	evaluate := func(at time.Time) {
		t.Helper()
		for _, ten := range []apptest.Tenant{a, b} {
			if err := svc.EvaluateTenant(ctx, ten.ID, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	slaAlerts := func(ten apptest.Tenant, state string) []apiAlert {
		var out []apiAlert
		for _, al := range listAlerts(t, e, ten.Token, state) {
			if al.Rule == monitor.RuleSLABreach {
				out = append(out, al)
			}
		}
		return out
	}

	// Overdue, but not yet for 30 minutes: nothing.
	evaluate(due.Add(10 * time.Minute))
	if n := len(slaAlerts(a, "all")); n != 0 {
		t.Fatalf("fired 10 minutes past due: %d", n)
	}
	// 31 minutes past due: eight evaluators at once, one alert.
	if err := racing(8, func(int) error { return svc.EvaluateTenant(ctx, a.ID, due.Add(31*time.Minute)) }); err != nil {
		t.Fatal(err)
	}
	evaluate(due.Add(32 * time.Minute))
	open := slaAlerts(a, "open")
	if len(open) != 1 || open[0].SourceID != "" || !strings.Contains(string(open[0].Detail), `"overdue":1`) {
		t.Fatalf("A's open sla alerts: %+v", open)
	}
	if n := len(slaAlerts(b, "all")); n != 0 {
		t.Fatalf("B (4 hours to answer) has %d sla alerts", n)
	}
	var fired int
	if err := e.App.DB.GetContext(ctx, &fired, `SELECT COUNT(*) FROM events WHERE tenant_id = ? AND type = 'alert.fired' AND resource_id = ?`, a.ID, open[0].ID); err != nil {
		t.Fatal(err)
	}
	if fired != 1 {
		t.Fatalf("%d alert.fired events", fired)
	}
	// B's own rule cannot see A's alert.
	if r := e.Do("GET", "/api/v1/alerts/"+open[0].ID, b.Token, nil); r.Status != 404 {
		t.Fatalf("B reads A's alert: %d", r.Status)
	}

	// A person's note answers the lead: resolved at the next evaluation.
	if r := e.Do("POST", "/api/v1/leads/"+la.ID+"/notes", a.Token, map[string]any{"body": "called back"}, "Idempotency-Key", "sla-note-1"); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
	evaluate(due.Add(33 * time.Minute))
	if n := len(slaAlerts(a, "open")); n != 0 {
		t.Fatalf("still open after the answer: %d", n)
	}
	res := slaAlerts(a, "resolved")
	if len(res) != 1 || res[0].ID != open[0].ID || res[0].ResolvedAt == nil {
		t.Fatalf("resolved: %+v", res)
	}

	// Settings: validated, per tenant; a threshold of 2 ignores one lead;
	// off ignores any.
	if r := e.Do("PUT", "/api/v1/alert-rules/sla-breach", a.Token, map[string]any{"min_overdue": 0, "for_seconds": 90}); r.Status != 422 ||
		!strings.Contains(string(r.Body), "min_overdue") || !strings.Contains(string(r.Body), "for_seconds") {
		t.Fatalf("invalid: %d %s", r.Status, r.Body)
	}
	la2 := newLead(a, "sla-a-2")
	if r := e.Do("PUT", "/api/v1/alert-rules/sla-breach", a.Token, map[string]any{"min_overdue": 2}); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	e.Do("GET", "/api/v1/alert-rules/sla-breach", a.Token, nil).JSON(t, &got)
	if got.MinOverdue != 2 || got.ForSeconds != 1800 || got.Default || got.UpdatedBy == nil {
		t.Fatalf("saved: %+v", got)
	}
	var gb monitor.SLARules
	e.Do("GET", "/api/v1/alert-rules/sla-breach", b.Token, nil).JSON(t, &gb)
	if !gb.Default || gb.MinOverdue != 1 {
		t.Fatalf("B sees A's settings: %+v", gb)
	}
	late := la2.FirstResponseDueAt.Add(2 * time.Hour)
	evaluate(late)
	if n := len(slaAlerts(a, "open")); n != 0 {
		t.Fatalf("threshold 2 fired on one lead: %d", n)
	}
	if r := e.Do("PUT", "/api/v1/alert-rules/sla-breach", a.Token, map[string]any{"min_overdue": 1, "enabled": false}); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	evaluate(late)
	if n := len(slaAlerts(a, "open")); n != 0 {
		t.Fatalf("off, yet fired: %d", n)
	}
	if r := e.Do("DELETE", "/api/v1/alert-rules/sla-breach", a.Token, nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	if r := e.Do("DELETE", "/api/v1/alert-rules/sla-breach", a.Token, nil); r.Status != 200 { // already the defaults: no audit row
		t.Fatalf("reset again: %d %s", r.Status, r.Body)
	}
	// Each change (min 2, off, reset) is in A's audit log with its values.
	var changes []string
	if err := e.App.DB.SelectContext(ctx, &changes, `SELECT CAST(detail AS CHAR) FROM audit_log WHERE tenant_id = ? AND action = 'alert_rule.changed' ORDER BY at, id`, a.ID); err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3 || !strings.Contains(changes[0], `"min_overdue":2`) || !strings.Contains(changes[1], `"enabled":false`) {
		t.Fatalf("audit rows: %v", changes)
	}
	evaluate(late)
	if n := len(slaAlerts(a, "open")); n != 1 {
		t.Fatalf("back on the defaults: %d open", n)
	}
}
