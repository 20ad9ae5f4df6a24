package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/app"
	"leadpipe/internal/apptest"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

func newUser(t *testing.T, e *apptest.Env, tenantID, name string) tenants.User {
	t.Helper()
	u, err := e.App.Tenants.CreateUser(context.Background(), tenantID, tenants.CreateUserInput{
		Email: strings.ToLower(name) + "@example.test", Name: name, Role: "staff", Password: "a-long-password-1"})
	if err != nil {
		t.Fatalf("user %s: %v", name, err)
	}
	return u
}

func putRules(t *testing.T, e *apptest.Env, token string, body any) apptest.Response {
	t.Helper()
	return e.Do("PUT", "/api/v1/assignment", token, body)
}

type ownedLead struct {
	ID                 string     `db:"id"`
	SourceID           string     `db:"source_id"`
	SourceRef          string     `db:"source_ref"`
	OwnerID            *string    `db:"owner_id"`
	AssignedAt         *time.Time `db:"assigned_at"`
	FirstResponseDueAt *time.Time `db:"first_response_due_at"`
	FirstRespondedAt   *time.Time `db:"first_responded_at"`
}

func ownedLeads(t *testing.T, e *apptest.Env, tenantID string) map[string]ownedLead {
	t.Helper()
	var ls []ownedLead
	if err := e.App.DB.SelectContext(context.Background(), &ls, `SELECT id, source_id, source_ref, owner_id, assigned_at, first_response_due_at, first_responded_at
		FROM leads WHERE tenant_id = ?`, tenantID); err != nil {
		t.Fatal(err)
	}
	out := map[string]ownedLead{}
	for _, l := range ls {
		out[l.SourceRef] = l
	}
	return out
}

// 50 leads posted at once through the real webhook route, with the worker
// running, among 3 active members and a disabled one: each lead assigned
// exactly once, counts differ by at most 1, the disabled member gets none,
// a google-ads test lead is not assigned, and neither the assignment nor a
// re-delivery starts the first response.
func TestRoundRobinFairUnderConcurrentWebhooks(t *testing.T) {
	e := apptest.New(t, "hooks_assign_rr", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	ten := e.Tenant("rr")
	ctx := context.Background()
	ada, bob, cy, gone := newUser(t, e, ten.ID, "Ada"), newUser(t, e, ten.ID, "Bob"), newUser(t, e, ten.ID, "Cy"), newUser(t, e, ten.ID, "Gone")
	if r := putRules(t, e, ten.Token, map[string]any{"first_response_minutes": 30, "rules": []any{
		map[string]any{"name": "Everyone", "when": map[string]any{}, "strategy": "round_robin", "members": []string{ada.ID, gone.ID, bob.ID, cy.ID}},
	}}); r.Status != 200 {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
	// Disabled after the rule was saved: skipped from then on.
	f := false
	if _, err := e.App.Tenants.UpdateUser(ctx, ten.ID, gone.ID, tenants.UserPatch{Active: &f}); err != nil {
		t.Fatal(err)
	}
	s := newSource(t, e, ten.ID, "std", kinds.Standard)
	g := newSource(t, e, ten.ID, "gads", kinds.GoogleAds)

	const n = 50
	var race apptest.Group
	for i := 0; i < n; i++ {
		race.Go(func() error {
			h, body := signed(t, s, fmt.Sprintf("dlv-%d", i), fmt.Sprintf("ref-%d", i), kinds.Lead{Email: fmt.Sprintf("p%d@example.com", i), Name: "P"}, time.Now())
			if r := send(t, s.URL, h, body); r.Status != 200 || r.Ack.Status != "accepted" {
				return fmt.Errorf("%d: %d %s", i, r.Status, r.Body)
			}
			return nil
		})
	}
	race.Go(func() error {
		h, body := signed(t, g, "gdlv-1", "gref-1", kinds.Lead{Email: "test@example.com", Name: "T", Tags: []string{"test"}}, time.Now())
		if r := send(t, g.URL, h, body); r.Status != 200 {
			return fmt.Errorf("google: %d %s", r.Status, r.Body)
		}
		return nil
	})
	race.Wait(t)
	apptest.Eventually(t, 30*time.Second, "51 leads", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID) == n+1
	})
	ls := ownedLeads(t, e, ten.ID)
	per := map[string]int{}
	for ref, l := range ls {
		if l.SourceID == g.ID {
			continue
		}
		if l.OwnerID == nil || l.AssignedAt == nil || l.FirstResponseDueAt == nil {
			t.Fatalf("lead %s not assigned: %+v", ref, l)
		}
		if d := l.FirstResponseDueAt.Sub(*l.AssignedAt); d != 30*time.Minute {
			t.Fatalf("due after %s, want 30m", d)
		}
		if l.FirstRespondedAt != nil {
			t.Fatalf("the assignment started the first response: %+v", l)
		}
		per[*l.OwnerID]++
	}
	var test *ownedLead
	for _, l := range ls {
		if l.SourceID == g.ID {
			l := l
			test = &l
		}
	}
	if test == nil || test.OwnerID != nil || test.AssignedAt != nil {
		t.Fatalf("the test lead was assigned: %+v", test)
	}
	if per[gone.ID] != 0 {
		t.Fatalf("disabled member got %d leads", per[gone.ID])
	}
	counts := []int{per[ada.ID], per[bob.ID], per[cy.ID]}
	sort.Ints(counts)
	t.Logf("per member: %v", counts)
	if counts[0]+counts[1]+counts[2] != n || counts[2]-counts[0] > 1 {
		t.Fatalf("unfair: %v (%v)", counts, per)
	}
	// Exactly one assignment entry per assigned lead, naming the rule.
	if k := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND assigned_rule_id IS NOT NULL AND assigned_owner_id = owner_id`, ten.ID); k != n {
		t.Fatalf("%d assignment entries, want %d", k, n)
	}
	tl, err := e.App.Web.Leads.Timeline(ctx, ten.ID, ls["ref-3"].ID)
	if err != nil {
		t.Fatal(err)
	}
	var assignedEntries []string
	for _, en := range tl {
		if en.Kind == leads.EventAssigned {
			assignedEntries = append(assignedEntries, string(en.Detail))
		}
	}
	if len(assignedEntries) != 1 || !strings.Contains(assignedEntries[0], "by rule Everyone") ||
		!strings.Contains(assignedEntries[0], *ls["ref-3"].OwnerID) {
		t.Fatalf("timeline's assignment entries %v", assignedEntries)
	}

	// A re-delivery (new delivery id, same record) changes neither the
	// owner nor the first response.
	before := ls["ref-7"]
	h, body := signed(t, s, "dlv-7-again", "ref-7", kinds.Lead{Email: "p7-new@example.com", Name: "P"}, time.Now())
	if r := send(t, s.URL, h, body); r.Ack.Status != "accepted" {
		t.Fatalf("%s", r.Body)
	}
	apptest.Eventually(t, 15*time.Second, "refresh", func() bool {
		l, err := leads.Get(ctx, e.App.DB, ten.ID, before.ID)
		return err == nil && l.Email == "p7-new@example.com"
	})
	after := ownedLeads(t, e, ten.ID)["ref-7"]
	if *after.OwnerID != *before.OwnerID || !after.AssignedAt.Equal(*before.AssignedAt) || after.FirstRespondedAt != nil {
		t.Fatalf("re-delivery changed the assignment: %+v → %+v", before, after)
	}
	// So does a reconcile record of the lead (the Apply path).
	err = sqlxTx(ctx, e, func(tx *sqlx.Tx) error {
		raw := kinds.SampleBody(s.Kind, "rec-1", "ref-7", kinds.Lead{Email: "p7-rec@example.com", Name: "P"}, time.Now().Add(time.Second))
		_, err := webhooks.Apply(ctx, tx, nil, ten.ID, s.Source, raw, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := ownedLeads(t, e, ten.ID)["ref-7"]; l.FirstRespondedAt != nil || *l.OwnerID != *before.OwnerID {
		t.Fatalf("reconcile changed the assignment: %+v", l)
	}
	// A new lead through reconcile is assigned too.
	err = sqlxTx(ctx, e, func(tx *sqlx.Tx) error {
		raw := kinds.SampleBody(s.Kind, "rec-2", "ref-rec-new", kinds.Lead{Email: "rec@example.com", Name: "R"}, time.Now())
		res, err := webhooks.Apply(ctx, tx, nil, ten.ID, s.Source, raw, time.Now())
		if err == nil && (!res.New || res.OwnerID == "") {
			err = fmt.Errorf("reconciled lead not assigned: %+v", res)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countingObserver counts the leads a worker's batches created, then
// passes the batch on.
type countingObserver struct {
	next    webhooks.LeadWriter
	created *atomic.Int64
}

func (o countingObserver) WriteSenders(ctx context.Context, x db.Ext, tenantID string, b leads.SenderBatch) ([]leads.UpsertOutcome, error) {
	outcomes, err := o.next.WriteSenders(ctx, x, tenantID, b)
	for _, out := range outcomes {
		if out.Kind == leads.OutcomeCreated {
			o.created.Add(1)
		}
	}
	return outcomes, err
}

func sqlxTx(ctx context.Context, e *apptest.Env, f func(*sqlx.Tx) error) error {
	tx, err := e.App.DB.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Rules are tried in order (by source, by a field's value, then the rest);
// a fixed-owner rule; manual leads; validation; tenant isolation; the
// first response set by a person's status change, note or next step only.
func TestAssignmentRulesOrderConditionsAndFirstResponse(t *testing.T) {
	e := apptest.New(t, "hooks_assign_rules", apptest.Options{RedisDB: apptest.RedisWebhooks, Worker: true})
	a, b := e.Tenant("rules-a"), e.Tenant("rules-b")
	ctx := context.Background()
	ada, bob, cy := newUser(t, e, a.ID, "Ada"), newUser(t, e, a.ID, "Bob"), newUser(t, e, a.ID, "Cy")
	ts := newSource(t, e, a.ID, "ts", kinds.Timestamped)
	std := newSource(t, e, a.ID, "std", kinds.Standard)

	// Validation: 422 naming the fields.
	r := putRules(t, e, a.Token, map[string]any{"rules": []any{
		map[string]any{"name": "x", "strategy": "round_robin", "members": []string{}},
		map[string]any{"name": "y", "strategy": "fifo"},
		map[string]any{"name": "z", "strategy": "owner", "owner_id": "01HZZZZZZZZZZZZZZZZZZZZZZZ"},
		map[string]any{"name": "w", "strategy": "round_robin", "members": []string{ada.ID, "01HZZZZZZZZZZZZZZZZZZZZZZZ"}},
	}})
	if r.Status != 422 {
		t.Fatalf("invalid rules: %d %s", r.Status, r.Body)
	}
	for _, f := range []string{"rules[0].members", "rules[1].strategy", "rules[2].owner_id", "rules[3].members"} {
		if !strings.Contains(string(r.Body), f) {
			t.Errorf("422 does not name %s: %s", f, r.Body)
		}
	}
	rules := map[string]any{"first_response_minutes": 45, "rules": []any{
		map[string]any{"name": "Stripe", "when": map[string]any{"source_id": ts.ID}, "strategy": "owner", "owner_id": ada.ID},
		map[string]any{"name": "Acme", "when": map[string]any{"field": "company", "equals": "acme"}, "strategy": "owner", "owner_id": bob.ID},
		map[string]any{"name": "Rest", "when": map[string]any{}, "strategy": "round_robin", "members": []string{cy.ID}},
	}}
	if r := putRules(t, e, a.Token, rules); r.Status != 200 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if k := count(t, e, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'assignment.changed'`, a.ID); k != 1 {
		t.Fatalf("%d audit rows", k)
	}
	var got leads.Assignment
	e.Do("GET", "/api/v1/assignment", a.Token, nil).JSON(t, &got)
	if len(got.Rules) != 3 || got.Rules[1].Name != "Acme" || got.FirstResponseMinutes != 45 {
		t.Fatalf("GET: %+v", got)
	}
	// Tenant B sees its own (none) and cannot use A's users.
	var gb leads.Assignment
	e.Do("GET", "/api/v1/assignment", b.Token, nil).JSON(t, &gb)
	if len(gb.Rules) != 0 {
		t.Fatalf("B reads A's rules: %+v", gb)
	}
	if r := putRules(t, e, b.Token, map[string]any{"rules": []any{map[string]any{"name": "steal", "strategy": "owner", "owner_id": ada.ID}}}); r.Status != 422 {
		t.Fatalf("B with A's user: %d %s", r.Status, r.Body)
	}
	// Staff (no admin scope) cannot read them.
	var tok struct {
		Token string `json:"token"`
	}
	e.Do("POST", "/api/v1/tokens", a.Token, map[string]any{"name": "ro", "scopes": []string{"leads:read"}}).JSON(t, &tok)
	if r := e.Do("GET", "/api/v1/assignment", tok.Token, nil); r.Status != 403 {
		t.Fatalf("leads:read reads rules: %d", r.Status)
	}

	// An endpoint subscribed to lead.updated: each assignment emits one.
	if r := e.Do("POST", "/api/v1/endpoints", a.Token, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"lead.updated"}}); r.Status != 201 {
		t.Fatalf("endpoint: %d %s", r.Status, r.Body)
	}
	send1 := func(s source, id, ref string, f kinds.Lead) {
		h, body := signed(t, s, id, ref, f, time.Now())
		if r := send(t, s.URL, h, body); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	send1(ts, "evt_1", "cus_1", kinds.Lead{Email: "s@example.com", Company: "Acme"}) // source first: Ada
	send1(std, "d1", "c1", kinds.Lead{Email: "acme@example.com", Company: "ACME"})   // field: Bob
	send1(std, "d2", "c2", kinds.Lead{Email: "o@example.com", Company: "Other"})     // rest: Cy
	bsrc := newSource(t, e, b.ID, "std", kinds.Standard)
	send1(bsrc, "d1", "c1", kinds.Lead{Email: "b@example.com", Company: "Acme"}) // B: no rules
	apptest.Eventually(t, 15*time.Second, "leads", func() bool {
		return count(t, e, `SELECT COUNT(*) FROM leads`) == 4
	})
	ls := ownedLeads(t, e, a.ID)
	want := map[string]string{"cus_1": ada.ID, "c1": bob.ID, "c2": cy.ID}
	for ref, owner := range want {
		if l := ls[ref]; l.OwnerID == nil || *l.OwnerID != owner {
			t.Errorf("%s: owner %v, want %s", ref, l.OwnerID, owner)
		}
	}
	for ref, owner := range want {
		var bodies []string
		if err := e.App.DB.SelectContext(ctx, &bodies, `SELECT CAST(body AS CHAR) FROM events WHERE tenant_id = ? AND type = 'lead.updated' AND resource_id = ?`,
			a.ID, ls[ref].ID); err != nil {
			t.Fatal(err)
		}
		if len(bodies) != 1 || !strings.Contains(bodies[0], owner) {
			t.Errorf("%s: lead.updated events %v, want one naming %s", ref, bodies, owner)
		}
	}
	for _, l := range ownedLeads(t, e, b.ID) {
		if l.OwnerID != nil {
			t.Fatalf("A's rules assigned in B: %+v", l)
		}
	}
	// A manual lead: the rest rule.
	var manual leads.Lead
	cr := e.Do("POST", "/api/v1/leads", a.Token, map[string]any{"name": "M", "email": "m@example.com"}, "Idempotency-Key", "assign-manual-1")
	cr.JSON(t, &manual)
	if cr.Status != 201 || manual.OwnerID == nil || *manual.OwnerID != cy.ID || manual.FirstResponseDueAt == nil {
		t.Fatalf("manual lead: %d %s", cr.Status, cr.Body)
	}

	// First response: a tags change does not start it; a status change, a
	// note and a next step each do, once.
	responded := func(id string) *time.Time {
		l, err := leads.Get(ctx, e.App.DB, a.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return l.FirstRespondedAt
	}
	patch := func(id string, body string) {
		t.Helper()
		if r := e.Do("PATCH", "/api/v1/leads/"+id, a.Token, body, "If-Match", "*", "Content-Type", "application/merge-patch+json"); r.Status != 200 {
			t.Fatalf("patch %s: %d %s", body, r.Status, r.Body)
		}
	}
	l1, l2, l3 := ls["cus_1"].ID, ls["c1"].ID, ls["c2"].ID
	patch(l1, `{"tags":["vip"]}`)
	if responded(l1) != nil {
		t.Fatal("a tags change started the first response")
	}
	patch(l1, `{"status":"contacted"}`)
	first := responded(l1)
	if first == nil {
		t.Fatal("status change did not set first_responded_at")
	}
	time.Sleep(5 * time.Millisecond)
	patch(l1, `{"status":"qualified"}`)
	if again := responded(l1); again == nil || !again.Equal(*first) {
		t.Fatalf("second change moved first_responded_at: %v → %v", first, again)
	}
	if r := e.Do("POST", "/api/v1/leads/"+l2+"/notes", a.Token, map[string]any{"body": "called"}, "Idempotency-Key", "assign-note-1"); r.Status != 201 {
		t.Fatalf("note: %d %s", r.Status, r.Body)
	}
	if responded(l2) == nil {
		t.Fatal("note did not set first_responded_at")
	}
	patch(l3, `{"next_step":"call back"}`)
	if responded(l3) == nil {
		t.Fatal("next step did not set first_responded_at")
	}
	if responded(manual.ID) != nil {
		t.Fatal("a manual lead's creation started its first response")
	}
	if r := e.Do("POST", "/api/v1/leads/bulk", a.Token, map[string]any{"ids": []string{manual.ID}, "set": map[string]any{"status": "contacted"}},
		"Idempotency-Key", "assign-bulk-1"); r.Status != 200 {
		t.Fatalf("bulk: %d %s", r.Status, r.Body)
	}
	if responded(manual.ID) == nil {
		t.Fatal("bulk status change did not set first_responded_at")
	}
}

// sla=overdue and due_soon agree with a brute-force computation over
// random leads.
func TestSLAFilterMatchesBruteForce(t *testing.T) {
	e := apptest.New(t, "hooks_assign_sla", apptest.Options{RedisDB: apptest.RedisWebhooks})
	ten, other := e.Tenant("sla"), e.Tenant("sla-other")
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	type row struct {
		id          string
		due, answer *time.Time
	}
	var rows []row
	for i := 0; i < 400; i++ {
		tenantID := ten.ID
		if i%5 == 0 {
			tenantID = other.ID
		}
		var due, answer *time.Time
		if rng.IntN(4) > 0 {
			d := now.Add(time.Duration(rng.IntN(120)-60) * time.Minute)
			due = &d
			if rng.IntN(3) == 0 {
				a := d.Add(-time.Duration(rng.IntN(30)) * time.Minute)
				answer = &a
			}
		}
		id := fmt.Sprintf("01J%023d", i)
		if _, err := e.App.DB.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, last_seen_at, created_at, updated_at,
				first_response_due_at, first_responded_at) VALUES (?, ?, '', ?, '{}', ?, ?, ?, ?, ?)`, tenantID, id, id, now, now, now, due, answer); err != nil {
			t.Fatal(err)
		}
		if tenantID == ten.ID {
			rows = append(rows, row{id, due, answer})
		}
	}
	svc := *e.App.Web.Leads
	svc.Now = func() time.Time { return now }
	for _, sla := range []string{leads.SLAOverdue, leads.SLADueSoon} {
		var want []string
		for _, r := range rows {
			if r.answer != nil || r.due == nil {
				continue
			}
			if (sla == leads.SLAOverdue && r.due.Before(now)) || (sla == leads.SLADueSoon && !r.due.Before(now) && r.due.Before(now.Add(15*time.Minute))) {
				want = append(want, r.id)
			}
		}
		sort.Sort(sort.Reverse(sort.StringSlice(want)))
		var got []string
		f := leads.Filter{SLA: sla, Limit: 7}
		for {
			p, err := svc.List(ctx, ten.ID, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range p.Items {
				got = append(got, l.ID)
			}
			if p.NextCursor == "" {
				break
			}
			f.Cursor = p.NextCursor
		}
		if len(want) == 0 || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: got %d %v\nwant %d %v", sla, len(got), got, len(want), want)
		}
	}
	if r := e.Do("GET", "/api/v1/leads?sla=late", ten.Token, nil); r.Status != 422 || !strings.Contains(string(r.Body), "sla") {
		t.Fatalf("bad sla: %d %s", r.Status, r.Body)
	}
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	if r := e.Do("GET", "/api/v1/leads?sla=overdue&limit=200", ten.Token, nil); r.Status != 200 {
		t.Fatalf("sla over HTTP: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &page)
	}
}

// Two independent workers (two App instances on the same database and
// Redis, as two cmd/worker processes) drain 3 or more waves of 50 concurrent
// webhook leads: every lead assigned exactly once, counts differ by at
// most 1, the counter equals the leads assigned.
func TestRoundRobinFairAcrossTwoWorkers(t *testing.T) {
	opts := apptest.Options{RedisDB: apptest.RedisWebhooks}
	e := apptest.New(t, "hooks_assign_two", opts)
	ten := e.Tenant("two")
	ctx, cancel := context.WithCancel(context.Background())
	ada, bob, cy := newUser(t, e, ten.ID, "Ada"), newUser(t, e, ten.ID, "Bob"), newUser(t, e, ten.ID, "Cy")
	if r := putRules(t, e, ten.Token, map[string]any{"rules": []any{
		map[string]any{"name": "Everyone", "strategy": "round_robin", "members": []string{ada.ID, bob.ID, cy.ID}},
	}}); r.Status != 200 {
		t.Fatalf("put rules: %d %s", r.Status, r.Body)
	}
	s := newSource(t, e, ten.ID, "std", kinds.Standard)

	second, err := app.Open(ctx, apptest.Config(t, e.DSN, opts), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Which worker created how many leads.
	var created [2]atomic.Int64
	var wg sync.WaitGroup
	for i, a := range []*app.App{e.App, second} {
		a.Processor.Leads = countingObserver{next: a.Processor.Leads, created: &created[i]}
		wg.Add(1)
		go func() { defer wg.Done(); _ = a.RunWorker(ctx, 8) }()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		second.Shutdown(context.Background())
		second.Close()
	})

	// At least 3 waves; more (up to 12) while one worker has taken every
	// batch so far: Asynq hands tasks to whichever worker polls first, and
	// a wave's few batch tasks can all go to one of them.
	const n = 50
	waves := 0
	for w := 0; w < 12 && (w < 3 || created[0].Load() == 0 || created[1].Load() == 0); w++ {
		waves++
		var wave apptest.Group
		for i := 0; i < n; i++ {
			wave.Go(func() error {
				h, body := signed(t, s, fmt.Sprintf("dlv-%d-%d", w, i), fmt.Sprintf("ref-%d-%d", w, i), kinds.Lead{Email: fmt.Sprintf("p%d-%d@example.com", w, i)}, time.Now())
				if r := send(t, s.URL, h, body); r.Status != 200 || r.Ack.Status != "accepted" {
					return fmt.Errorf("%d: %d %s", i, r.Status, r.Body)
				}
				return nil
			})
		}
		wave.Wait(t)
		apptest.Eventually(t, 30*time.Second, "wave's leads", func() bool {
			return count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, ten.ID) == (w+1)*n
		})
		per := map[string]int{}
		for ref, l := range ownedLeads(t, e, ten.ID) {
			if l.OwnerID == nil {
				t.Fatalf("lead %s not assigned", ref)
			}
			per[*l.OwnerID]++
		}
		c := []int{per[ada.ID], per[bob.ID], per[cy.ID]}
		sort.Ints(c)
		if c[0]+c[1]+c[2] != (w+1)*n || c[2]-c[0] > 1 {
			t.Fatalf("wave %d: unfair: %v", w, per)
		}
	}
	t.Logf("leads created by worker 1: %d, worker 2: %d", created[0].Load(), created[1].Load())
	if created[0].Load() == 0 || created[1].Load() == 0 {
		t.Fatalf("one worker created every lead (%d, %d): the test did not run two", created[0].Load(), created[1].Load())
	}
	if created[0].Load()+created[1].Load() != int64(waves*n) {
		t.Fatalf("created %d + %d, want %d", created[0].Load(), created[1].Load(), waves*n)
	}
	if k := count(t, e, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND assigned_rule_id IS NOT NULL`, ten.ID); k != waves*n {
		t.Fatalf("%d assignment entries, want %d", k, waves*n)
	}
	if k := count(t, e, `SELECT next_pos FROM assignment_counters WHERE tenant_id = ?`, ten.ID); k != waves*n {
		t.Fatalf("counter %d, want %d", k, waves*n)
	}
}
