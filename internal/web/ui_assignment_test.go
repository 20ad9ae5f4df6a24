package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// The assignment rules pages: add, edit, move and delete through plain
// form posts (each audited by the service), field errors on 422, a stale
// form refused without a change, markup in a name shown as text, staff
// and cross-site posts refused, and another tenant's admin sees and
// touches only their own rules.
func TestUIAssignmentRules(t *testing.T) {
	e := uiEnv(t, "ui_assign")
	ctx := context.Background()
	a := e.Tenant("acme")
	bt := e.Tenant("beta")
	mk := func(tenantID, email, name string) tenants.User {
		u, err := e.App.Tenants.CreateUser(ctx, tenantID, tenants.CreateUserInput{Email: email, Name: name, Password: "staff-password-1", Role: "staff"})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	ada := mk(a.ID, "ada@acme.test", "Ada")
	ben := mk(a.ID, "ben@acme.test", "Ben")
	betty := mk(bt.ID, "betty@beta.test", "Betty")
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	rules := func(tenantID string) []leads.AssignmentRule {
		t.Helper()
		as, err := e.App.Web.Leads.Assignment(ctx, tenantID)
		if err != nil {
			t.Fatal(err)
		}
		return as.Rules
	}

	admin := newBrowser(t, e)
	admin.login(a.Admin.Email, a.AdminPassword)
	p := admin.get("/settings/assignment")
	if p.status != 200 || p.testid("rule").Length() != 0 {
		t.Fatalf("empty rules page: %d", p.status)
	}
	version := func() string {
		t.Helper()
		return admin.get("/settings/assignment/rules/new").input(`[data-testid="rule-form"]`, "version")
	}

	t.Run("add: errors on their fields, then a round robin and a fixed owner", func(t *testing.T) {
		p := admin.post("/settings/assignment/rules", url.Values{"version": {version()}, "name": {""}, "when": {"field"}, "field": {""},
			"strategy": {"round_robin"}})
		if p.status != http.StatusUnprocessableEntity {
			t.Fatalf("empty form: %d", p.status)
		}
		for _, f := range []string{"name", "field"} {
			if p.testid("field-"+f).Find(`[data-testid="field-error"]`).Length() != 1 {
				t.Errorf("no error on %s", f)
			}
		}
		if !strings.Contains(p.doc.Find(`[data-testid="rule-members"]`).Parent().Text(), "Tick at least one person") {
			t.Error("no error on the members")
		}
		// Another tenant's user is not a member here (the service says so; 422 on members).
		p = admin.post("/settings/assignment/rules", url.Values{"version": {version()}, "name": {"Everyone"}, "when": {"any"},
			"strategy": {"round_robin"}, "members": {ada.ID, betty.ID}})
		if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "active users of this tenant") {
			t.Fatalf("a foreign member: %d", p.status)
		}
		if len(rules(a.ID)) != 0 {
			t.Fatal("a refused form saved a rule")
		}
		p = admin.post("/settings/assignment/rules", url.Values{"version": {version()}, "name": {"Everyone " + xss}, "when": {"any"},
			"strategy": {"round_robin"}, "members": {ada.ID, ben.ID}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("add round robin: %d %s", p.status, p.body)
		}
		p = admin.post("/settings/assignment/rules", url.Values{"version": {version()}, "name": {"Big accounts"}, "when": {"field"},
			"field": {"company"}, "equals": {"Initech"}, "strategy": {"owner"}, "owner_id": {ben.ID}, "members": {ada.ID}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("add owner rule: %d %s", p.status, p.body)
		}
		rs := rules(a.ID)
		if len(rs) != 2 || rs[1].Strategy != leads.StrategyOwner || *rs[1].OwnerID != ben.ID || len(rs[1].Members) != 0 ||
			*rs[1].When.Field != "company" || *rs[1].When.Equals != "Initech" || rs[1].When.SourceID != nil {
			t.Fatalf("stored %+v", rs)
		}
		list := admin.get("/settings/assignment")
		if strings.Contains(list.body, "<script>alert") || !strings.Contains(list.testid("rule-name").First().Text(), xss) {
			t.Fatal("a rule name's markup is not shown as text")
		}
		if got := list.testid("rule-when").Eq(1).Text(); got != "company equals “Initech”" {
			t.Errorf("condition in words %q", got)
		}
	})

	t.Run("edit keeps the form's values; move; delete", func(t *testing.T) {
		for _, path := range []string{"/settings/assignment", "/settings/assignment/rules/new", "/settings/assignment/rules/1"} {
			p := admin.get(path)
			checkLabels(t, path, p)
			if p.doc.Find("h1").Length() != 1 {
				t.Errorf("%s: %d h1 elements", path, p.doc.Find("h1").Length())
			}
		}
		p := admin.get("/settings/assignment/rules/1")
		if p.input(`[data-testid="rule-form"]`, "name") != "Big accounts" || p.input(`[data-testid="rule-form"]`, "field") != "company" {
			t.Fatalf("edit form values: %q", p.input(`[data-testid="rule-form"]`, "name"))
		}
		v := p.input(`[data-testid="rule-form"]`, "version")
		p = admin.post("/settings/assignment/rules/1", url.Values{"version": {v}, "name": {"Website"}, "when": {"source"},
			"source_id": {src.ID}, "strategy": {"owner"}, "owner_id": {ada.ID}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("save edit: %d", p.status)
		}
		rs := rules(a.ID)
		if rs[1].Name != "Website" || *rs[1].When.SourceID != src.ID || rs[1].When.Field != nil || *rs[1].OwnerID != ada.ID {
			t.Fatalf("after edit %+v", rs[1])
		}
		p = admin.post("/settings/assignment/rules/1/move", url.Values{"version": {version()}, "dir": {"up"}})
		if p.status != http.StatusSeeOther || rules(a.ID)[0].Name != "Website" {
			t.Fatalf("move up: %d %v", p.status, rules(a.ID))
		}
		p = admin.post("/settings/assignment/rules/0/delete", url.Values{"version": {version()}})
		if rs := rules(a.ID); p.status != http.StatusSeeOther || len(rs) != 1 || !strings.HasPrefix(rs[0].Name, "Everyone") {
			t.Fatalf("delete: %d %v", p.status, rs)
		}
		if p := admin.post("/settings/assignment/rules/5/delete", url.Values{"version": {version()}}); p.status != http.StatusNotFound {
			t.Fatalf("delete of a missing rule: %d", p.status)
		}
		var n int
		if err := e.App.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'assignment.changed' AND actor_kind = 'user'`, a.ID); err != nil || n != 5 {
			t.Fatalf("audited changes by the user: %d %v", n, err)
		}
	})

	t.Run("first-response minutes", func(t *testing.T) {
		v := version()
		if p := admin.post("/settings/assignment", url.Values{"version": {v}, "first_response_minutes": {"0"}}); p.status != http.StatusUnprocessableEntity ||
			p.testid("field-first_response_minutes").Find(`[data-testid="field-error"]`).Length() != 1 {
			t.Fatalf("0 minutes: %d", p.status)
		}
		if p := admin.post("/settings/assignment", url.Values{"version": {v}, "first_response_minutes": {"30"}}); p.status != http.StatusSeeOther {
			t.Fatalf("30 minutes: %d", p.status)
		}
		if as, _ := e.App.Web.Leads.Assignment(ctx, a.ID); as.FirstResponseMinutes != 30 || len(as.Rules) != 1 {
			t.Fatalf("stored %+v", as)
		}
	})

	t.Run("a stale form changes nothing", func(t *testing.T) {
		old := version()
		if _, err := e.App.Web.Leads.PutAssignment(ctx, a.ID, leads.Assignment{FirstResponseMinutes: 30, Rules: []leads.AssignmentRule{
			{Name: "A", Strategy: leads.StrategyOwner, OwnerID: &ada.ID}, {Name: "B", Strategy: leads.StrategyOwner, OwnerID: &ben.ID}}}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/settings/assignment/rules/0/delete", "/settings/assignment/rules/1/move"} {
			p := admin.post(path, url.Values{"version": {old}, "dir": {"up"}})
			if p.status != http.StatusSeeOther || p.header.Get("Location") != "/settings/assignment" {
				t.Fatalf("%s stale: %d", path, p.status)
			}
			if f := admin.get("/settings/assignment").testid("flash-error").Text(); !strings.Contains(f, "changed the assignment rules") {
				t.Fatalf("%s: flash %q", path, f)
			}
		}
		p := admin.post("/settings/assignment/rules/0", url.Values{"version": {old}, "name": {"Mine"}, "when": {"any"}, "strategy": {"owner"}, "owner_id": {ben.ID}})
		if p.status != http.StatusConflict || p.testid("conflict").Length() != 1 || p.input(`[data-testid="rule-form"]`, "name") != "Mine" {
			t.Fatalf("stale edit: %d", p.status)
		}
		if rs := rules(a.ID); len(rs) != 2 || rs[0].Name != "A" || rs[1].Name != "B" {
			t.Fatalf("a stale form changed the rules: %+v", rs)
		}
		// The conflict page's form carries the current version: saving again applies.
		p = admin.post("/settings/assignment/rules/0", url.Values{"version": {p.input(`[data-testid="rule-form"]`, "version")}, "name": {"Mine"},
			"when": {"any"}, "strategy": {"owner"}, "owner_id": {ben.ID}})
		if p.status != http.StatusSeeOther || rules(a.ID)[0].Name != "Mine" {
			t.Fatalf("save after the conflict: %d", p.status)
		}
	})

	t.Run("staff, cross-site and the other tenant", func(t *testing.T) {
		staff := newBrowser(t, e)
		staff.login("ada@acme.test", "staff-password-1")
		for _, path := range []string{"/settings/assignment", "/settings/assignment/rules/new", "/settings/assignment/rules/0"} {
			if p := staff.get(path); p.status != http.StatusForbidden {
				t.Errorf("staff GET %s: %d", path, p.status)
			}
		}
		if p := staff.post("/settings/assignment/rules/0/delete", url.Values{"version": {version()}}); p.status != http.StatusForbidden {
			t.Errorf("staff delete: %d", p.status)
		}
		if p := admin.do("POST", "/settings/assignment/rules/0/delete", url.Values{"version": {version()}}, "Origin", "https://evil.example",
			"Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden {
			t.Errorf("cross-site delete: %d", p.status)
		}
		other := newBrowser(t, e)
		other.login(bt.Admin.Email, bt.AdminPassword)
		if p := other.get("/settings/assignment"); p.status != 200 || p.testid("rule").Length() != 0 {
			t.Fatalf("tenant B sees rules: %d %d", p.status, p.testid("rule").Length())
		}
		if p := other.get("/settings/assignment/rules/0"); p.status != http.StatusNotFound {
			t.Errorf("tenant B edit of A's rule 0: %d", p.status)
		}
		v := other.get("/settings/assignment/rules/new").input(`[data-testid="rule-form"]`, "version")
		if p := other.post("/settings/assignment/rules/0/delete", url.Values{"version": {v}}); p.status != http.StatusNotFound {
			t.Errorf("tenant B delete: %d", p.status)
		}
		if len(rules(a.ID)) != 2 {
			t.Fatal("tenant B changed A's rules")
		}
	})
}

// The Overdue view pages through the reader's own leads first (60: a
// full page, then 10 more) and then everyone else's (5), never showing a
// lead twice; Due soon is empty with its own hint; another owner's filter
// lists only theirs.
func TestUIOverdueMineFirst(t *testing.T) {
	e := uiEnv(t, "ui_overdue")
	ctx := context.Background()
	a := e.Tenant("acme")
	ada, err := e.App.Tenants.CreateUser(ctx, a.ID, tenants.CreateUserInput{Email: "ada@acme.test", Name: "Ada", Password: "staff-password-1", Role: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "web", Name: "Website", Kind: "standard"})
	owner := map[string]string{}
	for i := range 65 {
		id := seedLead(t, e, a.ID, src.ID, "r"+strconv.Itoa(i), "Lead "+strconv.Itoa(i), "l"+strconv.Itoa(i)+"@example.com")
		owner[id] = a.Admin.ID
		if i%13 == 0 {
			owner[id] = ada.ID
		}
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET owner_id = ?, assigned_at = UTC_TIMESTAMP() - INTERVAL 2 HOUR,
			first_response_due_at = UTC_TIMESTAMP() - INTERVAL 1 HOUR WHERE tenant_id = ? AND id = ?`, owner[id], a.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	admin := newBrowser(t, e)
	admin.login(a.Admin.Email, a.AdminPassword)
	seen := map[string]bool{}
	var order []string // owner of each row, in order
	path := "/leads?view=overdue"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		p := admin.get(path)
		if p.status != 200 {
			t.Fatalf("%s: %d", path, p.status)
		}
		p.testid("lead-row").Each(func(_ int, s *goquery.Selection) {
			id := s.AttrOr("data-lead-id", "")
			if seen[id] {
				t.Errorf("%s shows %s again", path, id)
			}
			seen[id] = true
			order = append(order, owner[id])
		})
		path = p.testid("pagination-next").AttrOr("href", "")
	}
	if len(seen) != 65 {
		t.Fatalf("%d leads over the pages, want 65", len(seen))
	}
	for i, o := range order {
		if (i < 60) != (o == a.Admin.ID) {
			t.Fatalf("row %d is %s's: the reader's own do not come first", i, o)
		}
	}
	if p := admin.get("/leads?view=due_soon"); p.testid("lead-row").Length() != 0 || !strings.Contains(p.body, "No first reply due in the next 15 minutes") {
		t.Error("due soon is not empty with its hint")
	}
	p := admin.get("/leads?view=overdue&owner=" + ada.ID)
	if p.testid("lead-row").Length() != 5 || p.testid("sla-group").Length() != 0 {
		t.Errorf("Ada's overdue: %d rows, %d group headings", p.testid("lead-row").Length(), p.testid("sla-group").Length())
	}
}
