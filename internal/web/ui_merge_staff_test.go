package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"leadpipe/internal/tenants"
)

// A staff user merges (and unmerges) leads they own, from the picker, and
// gets 403 for a lead someone else owns; the lead page offers Merge only
// where it would work (docs/ARCHITECTURE.md, "Staff pages").
func TestUIStaffMergesOwnLeads(t *testing.T) {
	e := uiEnv(t, "ui_merge_staff")
	a := e.Tenant("acme")
	ctx := context.Background()
	sam, err := e.App.Tenants.CreateUser(ctx, a.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam Staff", Password: "staff-password-1", Role: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	kim, err := e.App.Tenants.CreateUser(ctx, a.ID, tenants.CreateUserInput{Email: "kim@acme.test", Name: "Kim Staff", Password: "staff-password-2", Role: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"Ada One", "Ada Two", "Ada Three"} {
		ids = append(ids, createLead(t, e, a.Token, map[string]any{"name": name, "email": "ada@example.com"}).ID)
	}
	own := func(id, user string) {
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET owner_id = ? WHERE tenant_id = ? AND id = ?`, user, a.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	own(ids[0], sam.ID)
	own(ids[1], sam.ID)
	own(ids[2], kim.ID)

	b := newBrowser(t, e)
	b.login("sam@acme.test", "staff-password-1")
	lead := b.get("/leads/" + ids[0])
	links := lead.testid("merge-link")
	if links.Length() != 1 || !strings.Contains(links.AttrOr("href", ""), ids[1]) {
		t.Fatalf("Sam's lead page offers %d merge links (%v), want the one with his other lead", links.Length(), links.AttrOr("href", ""))
	}
	if p := b.get("/leads/" + ids[0] + "/merge?with=" + ids[2]); p.status != http.StatusForbidden {
		t.Fatalf("merge picker with Kim's lead: %d", p.status)
	}
	picker := b.get("/leads/" + ids[0] + "/merge?with=" + ids[1])
	if picker.status != http.StatusOK || picker.testid("pick-email").Length() != 0 || picker.testid("pick-name").Length() != 1 {
		t.Fatalf("picker %d: want only the differing name", picker.status)
	}
	form := url.Values{"version": {picker.input(`[data-testid="merge-form"]`, "version")}, "key": {picker.input(`[data-testid="merge-form"]`, "key")}, "others": {ids[2]}}
	if p := b.post("/leads/"+ids[0]+"/merge", form); p.status != http.StatusForbidden {
		t.Fatalf("merging Kim's lead by a forged form: %d", p.status)
	}
	picker = b.get("/leads/" + ids[0] + "/merge?with=" + ids[1])
	form.Set("others", ids[1])
	form.Set("key", picker.input(`[data-testid="merge-form"]`, "key"))
	if p := b.post("/leads/"+ids[0]+"/merge", form); p.status != http.StatusSeeOther {
		t.Fatalf("Sam merges his own: %d", p.status)
	}
	var into string
	if err := e.App.DB.GetContext(ctx, &into, `SELECT COALESCE(merged_into, '') FROM leads WHERE tenant_id = ? AND id = ?`, a.ID, ids[1]); err != nil || into != ids[0] {
		t.Fatalf("merged into %q (%v)", into, err)
	}
	k := newBrowser(t, e)
	k.login("kim@acme.test", "staff-password-2")
	if p := k.post("/leads/"+ids[0]+"/unmerge", url.Values{"lead_id": {ids[1]}}); p.status != http.StatusForbidden {
		t.Fatalf("Kim unmerges Sam's lead: %d", p.status)
	}
	if p := b.post("/leads/"+ids[0]+"/unmerge", url.Values{"lead_id": {ids[1]}}); p.status != http.StatusSeeOther {
		t.Fatalf("Sam unmerges: %d", p.status)
	}
}
