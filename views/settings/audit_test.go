package settings

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"leadpipe/views/layouts"
)

// An entry's detail reads as sorted lines with nested keys flattened; a
// long list (a bulk edit's lead ids) is folded behind its count.
func TestAuditDetailReadable(t *testing.T) {
	var ids []any
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("01ARZ3NDEKTSV4RRFFQ69G5F%02d", i))
	}
	d := map[string]any{"count": 10.0, "ids": ids, "set": map[string]any{"status": "won", "owner_id": nil}, "secret_given": false}
	items := DetailItems(d)
	var got []string
	for _, it := range items {
		got = append(got, it.Key+"="+it.Value)
	}
	if strings.Join(got, " ") != "count=10 ids= secret_given=no set.owner_id=none set.status=won" {
		t.Fatalf("items: %v", got)
	}
	var b strings.Builder
	v := AuditView{Page: layouts.Page{Title: "Audit log", User: &layouts.User{Name: "A", Role: "admin"}, Active: "audit"}, Now: time.Now(),
		Entries: []AuditEntry{{ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Action: "leads.bulk_edited", ActorKind: "user", ActorName: "Dana", TargetType: "leads", At: time.Now(), Detail: d},
			{ID: "01ARZ3NDEKTSV4RRFFQ69G5FAW", Action: "endpoint.deleted", ActorKind: "token", TargetType: "endpoint", TargetID: "01ARZ3NDEKTSV4RRFFQ69G5FAX", At: time.Now()}}}
	if err := Audit(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"Leads bulk edited", "<summary>10 ids</summary>", "set.status", "Dana", "Endpoint deleted"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// A deleted endpoint's id is not a link to a page that is gone.
	if strings.Contains(html, `href="/settings/endpoints/01ARZ3NDEKTSV4RRFFQ69G5FAX"`) {
		t.Error("links a deleted endpoint")
	}
}
