package browser_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
)

// TestBrowserFirstResponseOnMonitor: the monitor page shows the median
// time to first response per day (30 days in the admin's zone, Berlin)
// with the slow day standing out above the target line, and the owners'
// table with each one's median, responses and overdue leads, as the
// database has them (leads.ResponseStats is checked against brute force in
// internal/leads); the sla_breach alert shows; the rule's form answers a
// bad value with 422 and saves a good one; the page fits a 390 px phone.
func TestBrowserFirstResponseOnMonitor(t *testing.T) {
	e := browserApp(t, "ui_firstresp", false)
	ctx := context.Background()
	acme := e.Tenant("acme")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if err := e.App.Tenants.SetTimeZone(ctx, acme.ID, acme.Admin.ID, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	var members []tenants.User
	for _, name := range []string{"Ada Lovelace", "Bob Okafor", "Cy Tran"} {
		u, err := e.App.Tenants.CreateUser(ctx, acme.ID, tenants.CreateUserInput{Email: strings.ToLower(strings.Fields(name)[0]) + "@acme.test",
			Name: name, Role: "staff", Password: "a-long-password-1"})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, u)
	}
	if r := e.Do("PUT", "/api/v1/assignment", acme.Token, map[string]any{"first_response_minutes": 60, "rules": []any{map[string]any{
		"name": "Everyone", "when": map[string]any{}, "strategy": "round_robin", "members": []string{members[0].ID, members[1].ID, members[2].ID}}}}); r.Status != 200 {
		t.Fatalf("assignment: %d %s", r.Status, r.Body)
	}
	const n = 96
	var ids []string
	for i := range n {
		var l leads.Lead
		r := e.Do("POST", "/api/v1/leads", acme.Token, map[string]any{"name": fmt.Sprintf("Lead %d", i), "email": fmt.Sprintf("l%d@example.test", i)},
			"Idempotency-Key", fmt.Sprintf("fr-%d", i))
		r.JSON(t, &l)
		if r.Status != 201 || l.OwnerID == nil {
			t.Fatalf("lead %d: %d %s", i, r.Status, r.Body)
		}
		ids = append(ids, l.ID)
	}
	// Responses over the last 30 days (Berlin): 10 to 50 minutes, but 5
	// days ago a slow day (6 to 9 hours); the last 6 leads unanswered, due
	// 3 hours ago. Times go straight into the table: the clock runs from
	// the API's own assignment.
	now := time.Now()
	today := time.Date(now.In(berlin).Year(), now.In(berlin).Month(), now.In(berlin).Day(), 0, 0, 0, 0, berlin)
	spikeDay := today.AddDate(0, 0, -5)
	for i, id := range ids {
		var assigned, responded time.Time
		var answered bool
		switch {
		case i >= n-6:
			assigned = now.Add(-4 * time.Hour)
		default:
			day := today.AddDate(0, 0, -(i % 30))
			assigned = day.Add(9*time.Hour + time.Duration(i%5)*time.Hour)
			wait := time.Duration(10+(i*7)%41) * time.Minute
			if day.Equal(spikeDay) {
				wait = time.Duration(6*60+(i*13)%180) * time.Minute
			}
			responded, answered = assigned.Add(wait), true
			if responded.After(now) { // today's early hours: answered a minute ago
				assigned, responded = now.Add(-wait-time.Minute), now.Add(-time.Minute)
			}
		}
		var resp any
		if answered {
			resp = responded.UTC()
		}
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET assigned_at = ?, first_response_due_at = ?, first_responded_at = ? WHERE tenant_id = ? AND id = ?`,
			assigned.UTC(), assigned.Add(time.Hour).UTC(), resp, acme.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.App.Web.Monitor.EvaluateTenant(ctx, acme.ID, now); err != nil {
		t.Fatal(err)
	}
	want, err := e.App.Web.Leads.ResponseStats(ctx, acme.ID, 30, berlin, now)
	if err != nil {
		t.Fatal(err)
	}

	_, admin := adminTab(t, e, acme)
	if st := admin.open("/monitor"); st != 200 {
		t.Fatalf("/monitor: %d", st)
	}
	if got := admin.count(`[data-testid="duration-chart"] [data-testid="duration-day"]`); got != 30 {
		t.Errorf("%d days on the chart, want 30", got)
	}
	withData := 0
	for _, d := range want.Days {
		if d.Responded > 0 {
			withData++
		}
	}
	if got := admin.count(`[data-testid="duration-bar"]`); got != withData || withData < 25 {
		t.Errorf("%d bars, want %d (days with responses)", got, withData)
	}
	// The slow day is the tallest bar, marked slower than the target, and
	// the only one; its label is the spike day's date.
	tallest := run(admin, chromedp.Evaluate[map[string]any](`(() => {
		let best = null, slow = 0;
		for (const g of document.querySelectorAll('[data-testid="duration-day"]')) {
			const bar = g.querySelector('[data-testid="duration-bar"]');
			if (g.dataset.alert === "open") slow++;
			if (bar && (!best || Number(bar.getAttribute("height")) > Number(best.bar.getAttribute("height")))) best = {g, bar};
		}
		return {when: best.g.dataset.when, median: best.g.dataset.duplicates, slow: slow, h: Number(best.bar.getAttribute("height"))};
	})()`))
	if tallest["when"] != spikeDay.Format("Mon Jan 02") || tallest["slow"] != float64(1) || tallest["h"].(float64) < 100 {
		t.Errorf("tallest bar %v, want the slow day %s, alone above the target and nearly full height", tallest, spikeDay.Format("Mon Jan 02"))
	}
	if !strings.HasSuffix(tallest["median"].(string), " h") && !strings.Contains(tallest["median"].(string), " h ") {
		t.Errorf("the slow day's median reads %v, want hours", tallest["median"])
	}
	if got := admin.count(`[data-testid="chart-target"]`); got != 1 {
		t.Errorf("%d target lines", got)
	}
	if lbl := admin.text(`[data-testid="chart-target-label"]`); lbl != "1 h" {
		t.Errorf("target label %q", lbl)
	}
	ticks := run(admin, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="chart-duration-tick"]')].map(t => t.textContent)`))
	if len(ticks) < 4 || ticks[0] != "0" {
		t.Errorf("duration axis %v", ticks)
	}
	section := admin.text(`[data-testid="first-response"]`)
	if !strings.Contains(section, "Europe/Berlin") || !strings.Contains(section, "alert open") {
		t.Errorf("first-response section lacks the zone or the open alert: %q", section)
	}

	// The owners' table: one row per owner, with the database's numbers.
	rows := run(admin, chromedp.Evaluate[[]map[string]string](`[...document.querySelectorAll('[data-testid="owner-row"]')].map(r => ({
		owner: r.dataset.owner, name: r.querySelector(".cell-main").textContent.trim(),
		median: r.querySelector('[data-testid="owner-median"]').textContent.trim(),
		responded: r.querySelector('[data-testid="owner-responded"]').textContent.trim(),
		overdue: r.querySelector('[data-testid="owner-overdue"]').textContent.trim()}))`))
	if len(rows) != 3 {
		t.Fatalf("owner rows %v, want 3", rows)
	}
	names := map[string]string{members[0].ID: "Ada Lovelace", members[1].ID: "Bob Okafor", members[2].ID: "Cy Tran"}
	for _, r := range rows {
		var o *leads.OwnerResponse
		for i := range want.Owners {
			if want.Owners[i].OwnerID == r["owner"] {
				o = &want.Owners[i]
			}
		}
		if o == nil {
			t.Errorf("row %v is no owner of the stats", r)
			continue
		}
		wantMedian := medianWords(o.Median)
		if r["name"] != names[r["owner"]] || r["responded"] != strconv.FormatInt(o.Responded, 10) ||
			r["overdue"] != strconv.FormatInt(o.Overdue, 10) || r["median"] != wantMedian {
			t.Errorf("row %v, want %s median %s responded %d overdue %d", r, names[r["owner"]], wantMedian, o.Responded, o.Overdue)
		}
	}
	if rows[0]["overdue"] == "0" {
		t.Errorf("the most overdue owner is not first: %v", rows)
	}

	// Nothing sideways on a phone; screenshots at both widths.
	admin.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)), chromedp.Sleep(200*time.Millisecond))
	if over := run(admin, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`)); over {
		t.Error("the monitor page scrolls sideways at 390 px")
	}
	admin.do(chromedp.EmulateViewport(1280, 900))
	admin.do(chromedp.ScrollIntoView(`#first-response`))
	admin.screenshot("monitor-first-response")

	// The 14-day view.
	admin.open("/monitor")
	admin.submit(`[data-testid="fr-days-14"]`)
	if got := admin.count(`[data-testid="duration-day"]`); got != 14 || !strings.Contains(admin.location(), "fr_days=14") {
		t.Errorf("14-day view: %d days at %s", got, admin.location())
	}

	// The open sla_breach alert on /alerts: named, about the leads, linked
	// to this section.
	admin.open("/alerts")
	if txt := admin.text(`main`); !strings.Contains(txt, "First response overdue") || !strings.Contains(txt, "6 leads wait for a first response 30 min or more past due") {
		t.Errorf("/alerts does not show the sla alert: %q", txt)
	}
	if got := admin.count(`[data-testid="alert-first-response"]`); got != 1 || admin.count(`[data-testid="alert-chart"]`) != 0 {
		t.Errorf("%d links from the alert to the first-response section (and a source chart's link)", got)
	}
	admin.screenshot("alerts-sla-breach")

	// The rule's form: a bad value comes back with its error; a good one
	// is saved and described.
	admin.open("/monitor")
	admin.do(chromedp.Click(`[data-testid="sla-rule-edit"] summary`, chromedp.NodeVisible),
		chromedp.SetValue(`#r-sla_min_overdue`, "0"))
	admin.submit(`[data-testid="save-sla-rule"]`)
	if got := admin.count(`[data-testid="rule-error"]`); got != 1 {
		t.Errorf("%d field errors after min 0", got)
	}
	admin.do(chromedp.SetValue(`#r-sla_min_overdue`, "3"), chromedp.SetValue(`#r-sla_for_minutes`, "15"))
	admin.submit(`[data-testid="save-sla-rule"]`)
	if got := admin.text(`[data-testid="sla-rule"]`); got != "First response overdue: 3 leads overdue for 15 min or more." {
		t.Errorf("saved rule reads %q", got)
	}
	if r, err := e.App.Web.Monitor.SLARules(ctx, acme.ID); err != nil || r.MinOverdue != 3 || r.ForSeconds != 900 || !r.Enabled {
		t.Errorf("saved rule %+v %v", r, err)
	}
}

// medianWords is how the page writes a median (components.DurationText).
func medianWords(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 || h >= 10 {
		return strconv.Itoa(h) + " h"
	}
	return fmt.Sprintf("%d h %02d", h, m)
}
