package web_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// uiForms are the settings forms whose per-render key creates one record:
// where to read the key, where to post, the form and how to count records.
var uiForms = []struct {
	name, page, form, post string
	values                 func(i int) url.Values
	count                  string
}{
	{"users", "/settings/users", "user-form", "/settings/users",
		func(i int) url.Values {
			return url.Values{"name": {"Sam Staff"}, "email": {"sam" + formSuffix(i) + "@acme.test"}, "password": {"sam-password-1"}, "role": {"staff"}}
		},
		`SELECT COUNT(*) FROM users WHERE tenant_id = ? AND name = 'Sam Staff'`},
	{"tokens", "/settings/tokens", "token-form", "/settings/tokens",
		func(i int) url.Values {
			return url.Values{"name": {"CRM sync " + formSuffix(i)}, "scopes": {"sources:manage"}}
		},
		`SELECT COUNT(*) FROM api_tokens WHERE tenant_id = ? AND name LIKE 'CRM sync%'`},
	{"sources", "/sources", "source-form", "/sources",
		func(i int) url.Values {
			return url.Values{"name": {"Typeform"}, "slug": {"tf-" + formSuffix(i)}, "kind": {"typeform"}}
		},
		`SELECT COUNT(*) FROM sources WHERE tenant_id = ? AND name = 'Typeform'`},
	{"endpoints", "/settings/endpoints", "endpoint-form", "/settings/endpoints",
		func(i int) url.Values {
			return url.Values{"url": {"https://crm.example.com/hooks/" + formSuffix(i)}, "description": {"CRM sync"}, "events": {"lead.created"}}
		},
		`SELECT COUNT(*) FROM event_endpoints WHERE tenant_id = ? AND description = 'CRM sync'`},
}

func formSuffix(i int) string { return string(rune('a' + i)) }

// TestUIFormsCreateOnceConcurrent: N identical posts of one rendered form
// at once make one record; and because the key completes in the record's
// own transaction, a submit whose claim was taken over by a retry rolls
// its record back instead of leaving a second one.
func TestUIFormsCreateOnceConcurrent(t *testing.T) {
	e := uiEnv(t, "ui_once_conc")
	a := e.Tenant("acme")
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)
	ctx := context.Background()
	count := func(q string) int {
		t.Helper()
		var n int
		if err := e.App.DB.GetContext(ctx, &n, q, a.ID); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const n = 10
	round := 0
	submit := func(t *testing.T, path, form, post string, values url.Values) []page {
		key := b.get(path).input(`[data-testid="`+form+`"]`, "key")
		if len(key) != 32 {
			t.Fatalf("form key %q", key)
		}
		values.Set("key", key)
		out := make([]page, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() { <-start; out[i] = b.post(post, values) })
		}
		close(start)
		wg.Wait()
		return out
	}

	for _, f := range uiForms {
		t.Run(f.name+": one record, every answer the first one's", func(t *testing.T) {
			before := count(f.count)
			answers := submit(t, f.page, f.form, f.post, f.values(round))
			round++
			for _, p := range answers {
				if p.status != http.StatusSeeOther && p.status != http.StatusOK {
					t.Errorf("answer %d: %s", p.status, p.body)
				}
				if p.header.Get("Location") != answers[0].header.Get("Location") {
					t.Errorf("locations differ: %q / %q", p.header.Get("Location"), answers[0].header.Get("Location"))
				}
			}
			if got := count(f.count) - before; got != 1 {
				t.Fatalf("%d records, want 1", got)
			}
		})
	}

	// Every lock deadline already passed: each submit takes the claim over
	// from the one before it, so all but the last lose it. A loser's record
	// rolls back with its transaction; were the key completed after the
	// commit, each loser would leave its record behind.
	store := e.App.Web.Idem.Store
	store.SetLockTimeout(time.Microsecond)
	defer store.SetLockTimeout(10 * time.Second)
	for _, f := range uiForms {
		t.Run(f.name+": claims taken over, still one record", func(t *testing.T) {
			before := count(f.count)
			answers := submit(t, f.page, f.form, f.post, f.values(round))
			round++
			ok := 0
			for _, p := range answers {
				if p.status == http.StatusSeeOther || p.status == http.StatusOK {
					ok++
				}
			}
			if got := count(f.count) - before; got != 1 || ok == 0 {
				t.Fatalf("%d records (want 1), %d successful answers", got, ok)
			}
		})
	}
}
