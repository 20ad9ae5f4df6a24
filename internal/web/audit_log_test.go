package web_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"leadpipe/internal/apptest"
	"leadpipe/internal/audit"
	"leadpipe/internal/events"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// auditItem is one entry of GET /api/v1/audit.
type auditItem struct {
	ID    string `json:"id"`
	At    string `json:"at"`
	Actor struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"actor"`
	Action     string         `json:"action"`
	TargetType string         `json:"target_type"`
	TargetID   string         `json:"target_id"`
	IP         string         `json:"ip"`
	Detail     map[string]any `json:"detail"`
}

type auditPage struct {
	Items      []auditItem `json:"items"`
	NextCursor *string     `json:"next_cursor"`
}

func getAudit(t *testing.T, e *apptest.Env, token, query string) auditPage {
	t.Helper()
	res := e.Do("GET", "/api/v1/audit"+query, token, nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET /api/v1/audit%s: %d %s", query, res.Status, res.Body)
	}
	var p auditPage
	res.JSON(t, &p)
	return p
}

// allAudit pages through the whole log with a small limit.
func allAudit(t *testing.T, e *apptest.Env, token, filter string) []auditItem {
	t.Helper()
	var out []auditItem
	q := "?limit=3" + filter
	for range 100 {
		p := getAudit(t, e, token, q)
		out = append(out, p.Items...)
		if p.NextCursor == nil {
			return out
		}
		q = "?limit=3" + filter + "&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	t.Fatal("audit paging does not end")
	return nil
}

func mustStatus(t *testing.T, res apptest.Response, want int, what string) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("%s: %d %s", what, res.Status, res.Body)
	}
}

func tokenID(t *testing.T, e *apptest.Env, tenantID string) string {
	t.Helper()
	ts, err := e.App.Tenants.Tokens(context.Background(), tenantID)
	if err != nil || len(ts) == 0 {
		t.Fatalf("tokens: %v", err)
	}
	return ts[0].ID
}

// Every source, endpoint and bulk action through the API leaves one audit
// row naming the token that acted, the action, its target and the client
// address; the API lists them newest first with keyset pages that neither
// repeat nor skip, filters by action and by actor, answers 422 to a bad
// limit or cursor, needs admin, and never shows another tenant's rows.
func TestAuditLogAPI(t *testing.T) {
	e := uiEnv(t, "web_audit_log")
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	acmeTok := tokenID(t, e, acme.ID)

	res := e.Do("POST", "/api/v1/sources", acme.Token, map[string]any{"slug": "web", "name": "Website", "kind": "standard"})
	mustStatus(t, res, 201, "create source")
	var src struct{ ID string }
	res.JSON(t, &src)
	mustStatus(t, e.Do("PATCH", "/api/v1/sources/"+src.ID, acme.Token, map[string]any{"name": "Website form"}), 200, "patch source")
	mustStatus(t, e.Do("POST", "/api/v1/sources/"+src.ID+"/rotate-secret", acme.Token, map[string]any{"grace_seconds": 60}), 200, "rotate source")
	res = e.Do("POST", "/api/v1/endpoints", acme.Token, map[string]any{"url": "http://127.0.0.1:9/hook?key=receivers-own", "events": []string{"lead.created"}})
	mustStatus(t, res, 201, "create endpoint")
	var ep struct{ ID string }
	res.JSON(t, &ep)
	mustStatus(t, e.Do("PATCH", "/api/v1/endpoints/"+ep.ID, acme.Token, map[string]any{"description": "CRM", "enabled": false}), 200, "patch endpoint")
	mustStatus(t, e.Do("POST", "/api/v1/endpoints/"+ep.ID+"/rotate-secret", acme.Token, map[string]any{"grace_seconds": 0}), 200, "rotate endpoint")
	mustStatus(t, e.Do("DELETE", "/api/v1/endpoints/"+ep.ID, acme.Token, nil), 204, "delete endpoint")
	l1 := createLead(t, e, acme.Token, map[string]any{"name": "Ada"})
	l2 := createLead(t, e, acme.Token, map[string]any{"name": "Grace"})
	mustStatus(t, e.Do("PATCH", "/api/v1/leads/"+l2.ID, acme.Token, map[string]any{"status": "contacted"}, "If-Match", `"1"`), 200, "patch lead")
	mustStatus(t, e.Do("POST", "/api/v1/leads/bulk", acme.Token, map[string]any{"ids": []string{l1.ID, l2.ID, "01ARZ3NDEKTSV4RRFFQ69G5FAV"},
		"set": map[string]any{"status": "contacted"}}, "Idempotency-Key", "bulk-1"), 200, "bulk")
	// The same request again is a replay: no second row.
	mustStatus(t, e.Do("POST", "/api/v1/leads/bulk", acme.Token, map[string]any{"ids": []string{l1.ID, l2.ID, "01ARZ3NDEKTSV4RRFFQ69G5FAV"},
		"set": map[string]any{"status": "contacted"}}, "Idempotency-Key", "bulk-1"), 200, "bulk replay")
	// Beta does something too.
	mustStatus(t, e.Do("POST", "/api/v1/sources", beta.Token, map[string]any{"slug": "web", "name": "Beta web", "kind": "standard"}), 201, "beta source")

	items := allAudit(t, e, acme.Token, "")
	for i := 1; i < len(items); i++ {
		if items[i-1].ID <= items[i].ID {
			t.Fatalf("not newest first at %d: %s then %s", i, items[i-1].ID, items[i].ID)
		}
	}
	var got []string
	byAction := map[string]auditItem{}
	for _, it := range items {
		got = append(got, it.Action)
		byAction[it.Action] = it
	}
	want := []string{"leads.bulk_edited", "endpoint.deleted", "endpoint.secret_rotated", "endpoint.changed", "endpoint.created",
		"source.secret_rotated", "source.changed", "source.created", "token.created", "user.created"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("acme's log:\n got  %v\n want %v", got, want)
	}
	for _, c := range []struct{ action, targetType, targetID string }{
		{"source.created", "source", src.ID}, {"source.changed", "source", src.ID}, {"source.secret_rotated", "source", src.ID},
		{"endpoint.created", "endpoint", ep.ID}, {"endpoint.changed", "endpoint", ep.ID}, {"endpoint.secret_rotated", "endpoint", ep.ID},
		{"endpoint.deleted", "endpoint", ep.ID}, {"leads.bulk_edited", "leads", ""},
	} {
		it := byAction[c.action]
		if it.Actor.Kind != "token" || it.Actor.ID != acmeTok || it.Actor.Name == "" || it.IP != "127.0.0.1" {
			t.Errorf("%s: actor %+v ip %q, want the acme token from 127.0.0.1", c.action, it.Actor, it.IP)
		}
		if it.TargetType != c.targetType || it.TargetID != c.targetID {
			t.Errorf("%s: target %s/%s, want %s/%s", c.action, it.TargetType, it.TargetID, c.targetType, c.targetID)
		}
		if it.At == "" || it.ID == "" {
			t.Errorf("%s: no id or time", c.action)
		}
	}
	if d := byAction["source.created"].Detail; d["slug"] != "web" || d["kind"] != "standard" {
		t.Errorf("source.created detail %v", d)
	}
	if d := byAction["source.changed"].Detail; fmt.Sprint(d["changed"]) != "[name]" || d["name"] != "Website form" {
		t.Errorf("source.changed detail %v", d)
	}
	if d := byAction["endpoint.changed"].Detail; fmt.Sprint(d["changed"]) != "[description enabled]" || d["enabled"] != false {
		t.Errorf("endpoint.changed detail %v", d)
	}
	for _, a := range []string{"endpoint.created", "endpoint.deleted", "endpoint.secret_rotated"} {
		if d := byAction[a].Detail; d["host"] != "127.0.0.1:9" || strings.Contains(fmt.Sprint(d), "receivers-own") {
			t.Errorf("%s detail %v: want the host, never the query", a, d)
		}
	}
	// Bulk: one row, the leads it changed (Grace was already contacted).
	if d := byAction["leads.bulk_edited"].Detail; d["count"] != 1.0 || fmt.Sprint(d["ids"]) != "["+l1.ID+"]" || d["requested"] != 3.0 ||
		fmt.Sprint(d["set"]) != "map[status:contacted]" {
		t.Errorf("bulk detail %v", d)
	}

	t.Run("filters", func(t *testing.T) {
		p := getAudit(t, e, acme.Token, "?action=endpoint.changed")
		if len(p.Items) != 1 || p.Items[0].Action != "endpoint.changed" || p.NextCursor != nil {
			t.Fatalf("action filter: %+v", p)
		}
		mine := allAudit(t, e, acme.Token, "&actor="+acmeTok)
		if len(mine) != 8 {
			t.Fatalf("actor filter: %d rows, want the token's 8", len(mine))
		}
		for _, it := range mine {
			if it.Actor.ID != acmeTok {
				t.Fatalf("actor filter let %+v through", it)
			}
		}
		src := allAudit(t, e, acme.Token, "&action=source.secret_rotated&actor="+acmeTok)
		if len(src) != 1 {
			t.Fatalf("both filters: %d rows", len(src))
		}
		if p := getAudit(t, e, acme.Token, "?action=no.such"); len(p.Items) != 0 || p.NextCursor != nil {
			t.Fatalf("unknown action: %+v", p)
		}
	})

	t.Run("bad input is 422", func(t *testing.T) {
		for _, q := range []string{"?limit=0", "?limit=201", "?limit=ten", "?limit=-1", "?cursor=not-a-cursor", "?cursor=" + strings.Repeat("Z", 27),
			"?action=" + strings.Repeat("a", 65)} {
			res := e.Do("GET", "/api/v1/audit"+q, acme.Token, nil)
			if res.Status != http.StatusUnprocessableEntity || res.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("GET /api/v1/audit%s: %d %s", q, res.Status, res.Body)
			}
		}
		if p := getAudit(t, e, acme.Token, "?limit=200"); len(p.Items) != len(items) {
			t.Errorf("limit=200: %d items", len(p.Items))
		}
	})

	t.Run("scope", func(t *testing.T) {
		st, out := createToken(t, e, acme.Token, map[string]any{"name": "manager", "scopes": []string{"sources:manage"}})
		if st != http.StatusCreated {
			t.Fatal(st)
		}
		res := e.Do("GET", "/api/v1/audit", out["token"].(string), nil)
		if res.Status != http.StatusForbidden || !strings.Contains(string(res.Body), "admin") {
			t.Fatalf("sources:manage token: %d %s", res.Status, res.Body)
		}
		if res := e.Do("GET", "/api/v1/audit", "", nil); res.Status != http.StatusUnauthorized {
			t.Fatalf("no token: %d", res.Status)
		}
	})

	t.Run("cross-tenant", func(t *testing.T) {
		acmeIDs := map[string]bool{}
		for _, it := range items {
			acmeIDs[it.ID] = true
		}
		for _, q := range []string{"", "&actor=" + acmeTok, "&action=endpoint.created", "&cursor=" + items[0].ID} {
			for _, it := range allAudit(t, e, beta.Token, q) {
				if acmeIDs[it.ID] || it.TargetID == src.ID || it.Actor.ID == acmeTok {
					t.Fatalf("beta (%s) sees acme's row %+v", q, it)
				}
			}
		}
		got := allAudit(t, e, beta.Token, "")
		if len(got) != 3 || got[0].Action != "source.created" || got[0].Detail["name"] != "Beta web" {
			t.Fatalf("beta's log: %+v", got)
		}
		// Beta's admin on the page sees beta's rows only.
		b := newBrowser(t, e)
		b.login(beta.Admin.Email, beta.AdminPassword)
		p := b.get("/settings/audit?actor=" + acmeTok)
		if p.status != 200 || strings.Contains(p.body, `data-testid="audit-row"`) {
			t.Fatalf("beta's page with acme's actor: %d", p.status)
		}
		p = b.get("/settings/audit")
		if strings.Contains(p.body, src.ID) || strings.Contains(p.body, ep.ID) || !strings.Contains(p.body, "Beta web") {
			t.Fatal("beta's page shows acme's rows, or not its own")
		}
	})
}

var errInjected = errors.New("injected failure after the audit insert")

// failingOnce runs write under a freshly claimed Idempotency-Key whose
// Respond fails: idempotency.InTx calls Respond inside the action's
// transaction after the whole write (audit row included), so the action
// fails after its audit insert and everything rolls back.
func failingOnce[T any](t *testing.T, e *apptest.Env, tenantID string, fail bool, write func(idempotency.Once[T]) error) error {
	t.Helper()
	key := make([]byte, 9)
	_, _ = rand.Read(key)
	var werr error
	_, err := e.App.Web.Idem.Store.Do(context.Background(), idempotency.Request{TenantID: tenantID, Key: base64.RawURLEncoding.EncodeToString(key),
		Fingerprint: idempotency.Fingerprint("POST", "/test", key)}, func(k *idempotency.Key) (idempotency.Response, error) {
		werr = write(idempotency.Once[T]{Key: k, Respond: func(T) (idempotency.Response, error) {
			if fail {
				return idempotency.Response{}, errInjected
			}
			return idempotency.Response{Status: 200}, nil
		}})
		return idempotency.Response{Status: 200}, werr
	})
	if werr != nil {
		return werr
	}
	return err
}

func countAudit(t *testing.T, e *apptest.Env, tenantID, action string) int {
	t.Helper()
	var n int
	if err := e.App.DB.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = ?`, tenantID, action); err != nil {
		t.Fatal(err)
	}
	return n
}

// An action that fails after its audit insert leaves no audit row: the
// row is in the action's own transaction. Each case first succeeds once
// (so the write does insert a row), then fails after the insert.
func TestAuditRowRollsBackWithItsAction(t *testing.T) {
	e := uiEnv(t, "web_audit_rollback")
	acme := e.Tenant("acme")
	ctx := audit.With(context.Background(), audit.Context{Actor: audit.Actor{Kind: audit.ActorToken, ID: "tok", Name: "test"}, IP: "192.0.2.1"})

	t.Run("source create, failing step after the insert", func(t *testing.T) {
		for _, fail := range []bool{false, true} {
			slug := fmt.Sprintf("src-%v", fail)
			err := failingOnce(t, e, acme.ID, fail, func(once idempotency.Once[sources.Source]) error {
				_, _, err := e.App.Sources.CreateOnce(ctx, acme.ID, sources.CreateInput{Slug: slug, Name: "S", Kind: "standard"}, once)
				return err
			})
			if fail != errors.Is(err, errInjected) || !fail && err != nil {
				t.Fatalf("fail=%v: %v", fail, err)
			}
		}
		if n := countAudit(t, e, acme.ID, "source.created"); n != 1 {
			t.Fatalf("%d source.created rows, want the one that committed", n)
		}
		if list, _ := e.App.Sources.List(context.Background(), acme.ID); len(list) != 1 || list[0].Slug != "src-false" {
			t.Fatalf("sources: %+v", list)
		}
	})

	t.Run("source create, a taken slug after the insert", func(t *testing.T) {
		res := e.Do("POST", "/api/v1/sources", acme.Token, map[string]any{"slug": "src-false", "name": "Again", "kind": "standard"})
		mustStatus(t, res, http.StatusConflict, "taken slug")
		if n := countAudit(t, e, acme.ID, "source.created"); n != 1 {
			t.Fatalf("%d source.created rows after a 409", n)
		}
	})

	t.Run("endpoint create", func(t *testing.T) {
		for _, fail := range []bool{false, true} {
			err := failingOnce(t, e, acme.ID, fail, func(once idempotency.Once[events.Endpoint]) error {
				_, err := e.App.Events.CreateOnce(ctx, acme.ID, events.CreateInput{URL: "http://127.0.0.1:9/h", Events: []string{"lead.created"}}, once)
				return err
			})
			if fail != errors.Is(err, errInjected) || !fail && err != nil {
				t.Fatalf("fail=%v: %v", fail, err)
			}
		}
		if n := countAudit(t, e, acme.ID, "endpoint.created"); n != 1 {
			t.Fatalf("%d endpoint.created rows, want the one that committed", n)
		}
		if list, _ := e.App.Events.List(context.Background(), acme.ID); len(list) != 1 {
			t.Fatalf("%d endpoints", len(list))
		}
	})

	t.Run("bulk edit", func(t *testing.T) {
		l1 := createLead(t, e, acme.Token, map[string]any{"name": "Ada"})
		l2 := createLead(t, e, acme.Token, map[string]any{"name": "Grace"})
		p := tenants.Principal{TenantID: acme.ID, Name: "test"}
		bulk := func(fail bool, status string) error {
			return failingOnce(t, e, acme.ID, fail, func(once idempotency.Once[leads.BulkResult]) error {
				_, err := e.App.Web.Leads.Bulk(ctx, acme.ID, p, leads.BulkInput{IDs: []string{l1.ID, l2.ID}, Set: leads.BulkSet{Status: &status}}, once)
				return err
			})
		}
		if err := bulk(false, "contacted"); err != nil {
			t.Fatal(err)
		}
		if err := bulk(true, "qualified"); !errors.Is(err, errInjected) {
			t.Fatalf("failing bulk: %v", err)
		}
		if n := countAudit(t, e, acme.ID, "leads.bulk_edited"); n != 1 {
			t.Fatalf("%d leads.bulk_edited rows, want the one that committed", n)
		}
		for _, id := range []string{l1.ID, l2.ID} {
			l, err := e.App.Web.Leads.Get(context.Background(), acme.ID, id)
			if err != nil || l.Status != "contacted" {
				t.Fatalf("lead %s after the failed bulk: %v %v", id, l.Status, err)
			}
		}
	})
}

// TestAuditNeverHoldsASecret does every audited action with secrets in
// play (source secrets given and generated, rotated ones, verify and
// reconcile access tokens, endpoint secrets, API tokens, passwords right
// and wrong) and scans every column of every audit row for each of them.
func TestAuditNeverHoldsASecret(t *testing.T) {
	e := uiEnv(t, "web_audit_secrets")
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	secrets := []string{acme.Token, beta.Token, acme.AdminPassword, beta.AdminPassword}
	keep := func(s string) {
		t.Helper()
		if s == "" {
			t.Fatal("an empty secret")
		}
		secrets = append(secrets, s)
		// The key inside a whsec_ secret is a secret on its own.
		if k, ok := strings.CutPrefix(s, "whsec_"); ok {
			secrets = append(secrets, k)
		}
	}
	post := func(method, path, token string, body any, want int) map[string]any {
		t.Helper()
		res := e.Do(method, path, token, body, "Idempotency-Key", fmt.Sprintf("k-%s-%d", path, len(secrets)))
		mustStatus(t, res, want, method+" "+path)
		var out map[string]any
		if len(res.Body) > 0 {
			_ = json.Unmarshal(res.Body, &out)
		}
		return out
	}

	// API tokens and users with passwords.
	tok := post("POST", "/api/v1/tokens", acme.Token, map[string]any{"name": "reports", "scopes": []string{"admin"}}, 201)
	keep(tok["token"].(string))
	keep("sam-secret-password-1")
	post("POST", "/api/v1/users", acme.Token, map[string]any{"email": "sam@acme.test", "name": "Sam", "role": "admin", "password": "sam-secret-password-1"}, 201)
	keep("wrong-password-guess-1")
	b := newBrowser(t, e)
	b.post("/login", url.Values{"email": {"sam@acme.test"}, "password": {"wrong-password-guess-1"}})
	b.login("sam@acme.test", "sam-secret-password-1")
	b.post("/logout", url.Values{})

	// Sources: a given standard secret, a generated one, a timestamped raw
	// secret, a meta verify token, a reconcile access token; then patches
	// with new tokens and rotations with given and generated secrets.
	given := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-given-source-signing-key-32byt"))
	keep(given)
	s1 := post("POST", "/api/v1/sources", tok["token"].(string), map[string]any{"slug": "std", "name": "Std", "kind": "standard", "secret": given}, 201)
	s2 := post("POST", "/api/v1/sources", acme.Token, map[string]any{"slug": "gen", "name": "Gen", "kind": "standard"}, 201)
	keep(s2["secret"].(string))
	keep("stripe-like-raw-secret-9f8e7d")
	post("POST", "/api/v1/sources", acme.Token, map[string]any{"slug": "ts", "name": "TS", "kind": "timestamped", "secret": "stripe-like-raw-secret-9f8e7d"}, 201)
	keep("meta-verify-token-abc123")
	keep("meta-app-secret-def456")
	keep("EAAB-graph-access-token-ghi789")
	s3 := post("POST", "/api/v1/sources", acme.Token, map[string]any{"slug": "fb", "name": "FB", "kind": "meta", "secret": "meta-app-secret-def456",
		"verify_token": "meta-verify-token-abc123",
		"reconcile":    map[string]any{"base_url": "http://127.0.0.1:9/graph", "access_token": "EAAB-graph-access-token-ghi789", "form_id": "42"}}, 201)
	keep("meta-verify-token-new-jkl012")
	keep("EAAB-graph-access-token-new-mno345")
	post("PATCH", "/api/v1/sources/"+s3["id"].(string), acme.Token, map[string]any{"name": "Facebook", "verify_token": "meta-verify-token-new-jkl012",
		"reconcile": map[string]any{"access_token": "EAAB-graph-access-token-new-mno345", "interval_seconds": 600}}, 200)
	rotGiven := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the-rotated-given-signing-key-32"))
	keep(rotGiven)
	r1 := post("POST", "/api/v1/sources/"+s1["id"].(string)+"/rotate-secret", acme.Token, map[string]any{"secret": rotGiven}, 200)
	if r1["secret"] != rotGiven {
		t.Fatalf("rotate answered %v", r1["secret"])
	}
	r2 := post("POST", "/api/v1/sources/"+s2["id"].(string)+"/rotate-secret", acme.Token, map[string]any{"grace_seconds": 0}, 200)
	keep(r2["secret"].(string))

	// Endpoints: a given secret, a generated one, rotations of both kinds.
	epGiven := "whsec_" + base64.StdEncoding.EncodeToString([]byte("an-endpoint-signing-key-of-32byt"))
	keep(epGiven)
	keep("receiver-query-token-pqr678")
	e1 := post("POST", "/api/v1/endpoints", acme.Token, map[string]any{"url": "http://127.0.0.1:9/in?token=receiver-query-token-pqr678",
		"events": []string{"lead.created"}, "secret": epGiven}, 201)
	e2 := post("POST", "/api/v1/endpoints", acme.Token, map[string]any{"url": "http://127.0.0.1:9/two", "events": []string{"lead.updated"}}, 201)
	keep(e2["secret"].(string))
	epRot := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-rotated-endpoint-key-of-32byte"))
	keep(epRot)
	post("POST", "/api/v1/endpoints/"+e1["id"].(string)+"/rotate-secret", acme.Token, map[string]any{"secret": epRot}, 200)
	r3 := post("POST", "/api/v1/endpoints/"+e2["id"].(string)+"/rotate-secret", acme.Token, map[string]any{}, 200)
	keep(r3["secret"].(string))
	keep("receiver-query-token-new-stu901")
	post("PATCH", "/api/v1/endpoints/"+e1["id"].(string), acme.Token, map[string]any{"url": "http://127.0.0.1:9/in?token=receiver-query-token-new-stu901"}, 200)
	post("DELETE", "/api/v1/endpoints/"+e2["id"].(string), acme.Token, nil, 204)

	// A bulk edit and a revoked token.
	l := createLead(t, e, acme.Token, map[string]any{"name": "Ada"})
	post("POST", "/api/v1/leads/bulk", acme.Token, map[string]any{"ids": []string{l.ID}, "set": map[string]any{"status": "contacted"}}, 200)
	post("DELETE", "/api/v1/tokens/"+tok["id"].(string), acme.Token, nil, 204)

	// Every column of every row, read generically so a new column is
	// scanned too.
	rows, err := e.App.DB.QueryContext(context.Background(), `SELECT * FROM audit_log`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	n, actions := 0, map[string]bool{}
	for rows.Next() {
		var action string
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		n++
		for i, v := range vals {
			if cols[i] == "action" {
				action = string(v)
				actions[action] = true
			}
		}
		for i, v := range vals {
			for j, s := range secrets {
				if strings.Contains(string(v), s) {
					t.Errorf("audit_log.%s of a %s row holds secret #%d", cols[i], action, j) // never the secret itself in the log
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"token.created", "token.revoked", "user.created", "user.login_failed", "user.logged_in", "user.logged_out",
		"source.created", "source.changed", "source.secret_rotated", "endpoint.created", "endpoint.changed", "endpoint.secret_rotated",
		"endpoint.deleted", "leads.bulk_edited"} {
		if !actions[a] {
			t.Errorf("no %s row was scanned", a)
		}
	}
	if len(cols) < 11 || n < 20 {
		t.Fatalf("scanned %d columns of %d rows", len(cols), n)
	}
	// The secrets really were in play: the source page can still verify
	// with the rotated ones (they are stored, just never in the log).
	live, err := e.App.Sources.Secrets(context.Background(), acme.ID, s1["id"].(string))
	if err != nil || !slices.Contains(live, rotGiven) || !slices.Contains(live, given) {
		t.Fatalf("source secrets: %v", err)
	}
	t.Logf("%d secrets, %d rows × %d columns scanned", len(secrets), n, len(cols))
}

// The pages act through the same services: an admin's endpoint and source
// changes from the UI are audited as that person, from their address.
func TestAuditRowsFromThePages(t *testing.T) {
	e := uiEnv(t, "web_audit_pages")
	acme := e.Tenant("acme")
	src, _ := e.Source(acme.ID, sources.CreateInput{Slug: "web", Name: "Web", Kind: "standard"})
	b := newBrowser(t, e)
	b.login(acme.Admin.Email, acme.AdminPassword)
	if p := b.post("/settings/endpoints", url.Values{"url": {"http://127.0.0.1:9/ui"}, "events": {"lead.created"}, "key": {strings.Repeat("ab", 16)}}); p.status >= 400 {
		t.Fatalf("create endpoint from the page: %d", p.status)
	}
	eps, _ := e.App.Events.List(context.Background(), acme.ID)
	if len(eps) != 1 {
		t.Fatalf("%d endpoints", len(eps))
	}
	id := eps[0].ID
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{"/settings/endpoints/" + id + "/rotate-secret", url.Values{"grace_seconds": {"0"}}},
		{"/settings/endpoints/" + id + "/enabled", url.Values{"enabled": {"false"}}},
		{"/settings/endpoints/" + id + "/delete", url.Values{}},
		{"/sources/" + src.ID + "/rotate-secret", url.Values{"grace_seconds": {"0"}}},
	} {
		if p := b.post(f.path, f.form); p.status >= 400 {
			t.Fatalf("POST %s: %d", f.path, p.status)
		}
	}
	want := map[string]string{"endpoint.created": id, "endpoint.secret_rotated": id, "endpoint.changed": id, "endpoint.deleted": id, "source.secret_rotated": src.ID}
	for _, it := range allAudit(t, e, acme.Token, "&actor="+acme.Admin.ID) {
		if it.Action == "user.logged_in" {
			continue
		}
		if want[it.Action] != it.TargetID || it.Actor.Kind != "user" || it.Actor.Name != acme.Admin.Name || it.IP != "127.0.0.1" {
			t.Errorf("row %s: %+v", it.Action, it)
		}
		delete(want, it.Action)
	}
	if len(want) > 0 {
		t.Fatalf("no row by the admin for %v", want)
	}
}
