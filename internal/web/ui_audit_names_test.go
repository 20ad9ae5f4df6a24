package web_test

import (
	"context"
	"strings"
	"testing"

	"leadpipe/internal/audit"
	"leadpipe/internal/sources"
)

// The audit log shows names beside ids: the source, the lead and the user
// acted on; another tenant's lead id stays a bare id.
func TestUIAuditShowsNames(t *testing.T) {
	e := uiEnv(t, "ui_audit_names")
	ctx := context.Background()
	a, b := e.Tenant("acme"), e.Tenant("other")
	src, _ := e.Source(a.ID, sources.CreateInput{Slug: "landing", Name: "Landing page", Kind: "standard"})
	mine := seedLead(t, e, a.ID, src.ID, "r1", "Grace Hopper", "grace@example.com")
	bsrc, _ := e.Source(b.ID, sources.CreateInput{Slug: "theirs", Name: "Theirs", Kind: "standard"})
	theirs := seedLead(t, e, b.ID, bsrc.ID, "r2", "Secret Person", "secret@example.com")
	for _, id := range []string{mine, theirs} {
		if err := audit.Record(ctx, e.App.DB, a.ID, audit.Entry{Action: "lead.merged", TargetType: "lead", TargetID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := audit.Record(ctx, e.App.DB, a.ID, audit.Entry{Action: "user.role_changed", TargetType: "user", TargetID: a.Admin.ID}); err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t, e)
	br.login(a.Admin.Email, a.AdminPassword)
	p := br.get("/settings/audit")
	if p.status != 200 {
		t.Fatalf("audit: %d", p.status)
	}
	names := map[string]string{}
	rows := p.testid("audit-row")
	for i := range rows.Length() {
		row := rows.Eq(i)
		names[strings.TrimSpace(row.Find(".audit-target .mono").Text())] = strings.TrimSpace(row.Find(`[data-testid="audit-target-name"]`).Text())
	}
	if names[src.ID] != "Landing page" || names[mine] != "Grace Hopper" || names[a.Admin.ID] == "" {
		t.Errorf("names beside ids: %v", names)
	}
	if n, ok := names[theirs]; !ok || n != "" || strings.Contains(p.body, "Secret Person") {
		t.Errorf("another tenant's lead is named: %q", n)
	}
}
