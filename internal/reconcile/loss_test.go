package reconcile_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/monitor"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/webhooks/kinds"
)

// leadRow is what must not change when a reconcile finds nothing new.
type leadRow struct {
	ID        string `db:"id"`
	SourceRef string `db:"source_ref"`
	Email     string `db:"email"`
	Name      string `db:"name"`
	Phone     string `db:"phone"`
	Company   string `db:"company"`
	Status    string `db:"status"`
	Version   int    `db:"version"`
}

func (e *env) leadRows(t *testing.T, sourceID string) map[string]leadRow {
	t.Helper()
	var rows []leadRow
	if err := e.App.DB.SelectContext(context.Background(), &rows, `SELECT id, source_ref, email, name, phone, company, status, version
		FROM leads WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, sourceID); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]leadRow, len(rows))
	for _, r := range rows {
		out[r.SourceRef] = r
	}
	return out
}

// TestReconcileWebhookLossRepaired is reconcile's first acceptance: fake
// Typeform and Meta APIs serve 1,000 leads each, signed webhooks deliver a
// random 80%, one reconcile brings the missing 200 (counted reconcile-new),
// a second changes nothing and counts 1,000 known. People's statuses
// survive both. Meta webhook leads are enriched from the Graph API.
func TestReconcileWebhookLossRepaired(t *testing.T) {
	e := newEnv(t, "rec_loss", nil)
	e.startWorker(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	now := time.Now().UTC().Truncate(time.Second)

	tfLeads := fakeapi.MakeLeads(1000, "tf", now.Add(-10*time.Hour), 30*time.Second)
	metaLeads := fakeapi.MakeLeads(1000, "9", now.Add(-10*time.Hour), 30*time.Second)
	tf := fakeapi.NewTypeform(t, "FORM1", tfLeads)
	tf.RequireToken("tf-token")
	graph := fakeapi.NewMeta(t, "777", metaLeads)
	graph.RequireToken("graph-token")

	tfSrc := e.createSource(t, map[string]any{"slug": "typeform", "name": "Typeform", "kind": "typeform",
		"reconcile": map[string]any{"base_url": tf.URL, "access_token": "tf-token", "form_id": "FORM1", "lookback_seconds": 86400}})
	metaSrc := e.createSource(t, map[string]any{"slug": "fb", "name": "Facebook", "kind": "meta", "verify_token": "v",
		"reconcile": map[string]any{"base_url": graph.URL, "access_token": "graph-token", "form_id": "777", "lookback_seconds": 86400}})

	// Both sources were reconciled before (a first run would be back-fill,
	// not loss: TestReconcileFirstRunIsBackfill).
	e.markReconciledBefore(t, tfSrc.ID)
	e.markReconciledBefore(t, metaSrc.ID)

	// Webhooks deliver a random 80%.
	delivered := func(leads []fakeapi.Lead) (kept, lost []fakeapi.Lead) {
		for _, i := range rng.Perm(len(leads)) {
			if len(kept) < len(leads)*8/10 {
				kept = append(kept, leads[i])
			} else {
				lost = append(lost, leads[i])
			}
		}
		return kept, lost
	}
	tfKept, tfLost := delivered(tfLeads)
	metaKept, metaLost := delivered(metaLeads)

	start := time.Now()
	var tfReqs, metaReqs []webhookReq
	for _, l := range tfKept {
		body := fakeapi.TypeformWebhook("FORM1", l)
		h, b, err := kinds.Sign(kinds.Typeform, nil, tfSrc.Secret, "", body, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tfReqs = append(tfReqs, webhookReq{h, b})
	}
	for i := 0; i < len(metaKept); i += 10 { // Meta batches several leads per POST
		body := fakeapi.MetaWebhook("page1", "777", metaKept[i:min(i+10, len(metaKept))]...)
		h, b, err := kinds.Sign(kinds.Meta, nil, metaSrc.Secret, "", body, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		metaReqs = append(metaReqs, webhookReq{h, b})
	}
	// Meta first: its leads then wait for enrichment while Typeform posts.
	postAll(t, metaSrc.Hook, metaReqs)
	postAll(t, tfSrc.Hook, tfReqs)
	t.Logf("webhooks posted in %s", time.Since(start).Round(time.Millisecond))
	e.waitCount(t, "typeform webhook leads", 800, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, tfSrc.ID)
	// A meta webhook creates the lead from its leadgen_id at once; the
	// enrichment task fills its fields from the Graph API.
	e.waitCount(t, "meta leads enriched", 800, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ? AND email <> ''`, e.ten.ID, metaSrc.ID)
	t.Logf("800+800 webhooks posted, processed and enriched in %s", time.Since(start).Round(time.Millisecond))

	// People work some of the delivered leads.
	for _, src := range []string{tfSrc.ID, metaSrc.ID} {
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET status = 'won', version = version + 1
			WHERE tenant_id = ? AND source_id = ? ORDER BY id LIMIT 50`, e.ten.ID, src); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]map[string]leadRow{tfSrc.ID: e.leadRows(t, tfSrc.ID), metaSrc.ID: e.leadRows(t, metaSrc.ID)}

	cases := []struct {
		name string
		src  createdSource
		all  []fakeapi.Lead
		lost []fakeapi.Lead
	}{
		{"typeform", tfSrc, tfLeads, tfLost},
		{"meta", metaSrc, metaLeads, metaLost},
	}
	// The two sources reconcile side by side, as the worker would run them.
	t.Run("reconcile", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				first := e.waitRun(t, c.src.ID, e.trigger(t, c.src.ID), 60*time.Second)
				t.Logf("first reconcile: %+v in %s", first, time.Since(start).Round(time.Millisecond))
				if first.State != "succeeded" || first.Records != 1000 || first.New != 200 || first.Known != 800 || first.Errors != 0 || first.Pages < 10 {
					t.Fatalf("first run: %+v", first)
				}
				rows := e.leadRows(t, c.src.ID)
				if len(rows) != 1000 {
					t.Fatalf("%d leads, want 1000", len(rows))
				}
				if n := e.count(t, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, c.src.ID); n != 1000 {
					t.Fatalf("%d lead rows, want exactly 1000", n)
				}
				for _, l := range c.all {
					r, ok := rows[l.ID]
					if !ok || r.Email != l.Email || r.Name != l.Name || r.Phone != l.Phone || r.Company != l.Company {
						t.Fatalf("lead %s: %+v (ok %v), want %+v", l.ID, r, ok, l)
					}
				}
				won := 0
				for ref, old := range before[c.src.ID] {
					if rows[ref].Status != old.Status || rows[ref].Version != old.Version {
						t.Fatalf("lead %s: status %s v%d became %s v%d", ref, old.Status, old.Version, rows[ref].Status, rows[ref].Version)
					}
					if old.Status == "won" {
						won++
					}
				}
				if won != 50 {
					t.Fatalf("%d won leads before", won)
				}
				// The timeline shows the 200 leads the webhooks lost, once each,
				// and nothing on the leads the webhooks delivered.
				touched := e.reconcileEvents(t, c.src.ID)
				if len(touched) != 200 {
					t.Fatalf("%d leads with reconcile timeline events, want 200", len(touched))
				}
				for _, l := range c.lost {
					if touched[rows[l.ID].ID] != 1 {
						t.Fatalf("lost lead %s has %d reconcile events", l.ID, touched[rows[l.ID].ID])
					}
				}

				second := e.waitRun(t, c.src.ID, e.trigger(t, c.src.ID), 60*time.Second)
				if second.ID == first.ID || second.State != "succeeded" || second.New != 0 || second.Known != 1000 || second.Errors != 0 {
					t.Fatalf("second run: %+v", second)
				}
				after := e.leadRows(t, c.src.ID)
				for ref, r := range rows {
					if after[ref] != r {
						t.Fatalf("second reconcile changed lead %s: %+v → %+v", ref, r, after[ref])
					}
				}
				if n := len(e.reconcileEvents(t, c.src.ID)); n != 200 {
					t.Fatalf("%d leads with reconcile events after the second run, want still 200", n)
				}
			})
		}
	})

	// The monitor counted 200 reconcile-new and 800 + 1,000 known per source.
	if err := e.App.Stats.(*monitor.Recorder).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{tfSrc.ID, metaSrc.ID} {
		var got struct {
			New   int `db:"n"`
			Known int `db:"k"`
		}
		if err := e.App.DB.GetContext(ctx, &got, `SELECT COALESCE(SUM(reconcile_new), 0) AS n, COALESCE(SUM(reconcile_known), 0) AS k
			FROM source_stats_minute WHERE tenant_id = ? AND source_id = ?`, e.ten.ID, src); err != nil {
			t.Fatal(err)
		}
		if got.New != 200 || got.Known != 1800 {
			t.Errorf("source %s stats: %+v, want new 200, known 1800", src, got)
		}
	}
}

// reconcileEvents counts "reconcile" timeline events per lead of a source.
func (e *env) reconcileEvents(t *testing.T, sourceID string) map[string]int {
	t.Helper()
	var rows []struct {
		LeadID string `db:"lead_id"`
		N      int    `db:"n"`
	}
	if err := e.App.DB.SelectContext(context.Background(), &rows, `SELECT ev.lead_id, COUNT(*) AS n FROM lead_events ev
		JOIN leads l ON l.tenant_id = ev.tenant_id AND l.id = ev.lead_id
		WHERE ev.tenant_id = ? AND ev.kind = 'reconcile' AND l.source_id = ? GROUP BY ev.lead_id`, e.ten.ID, sourceID); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.LeadID] = r.N
	}
	return out
}

func (e *env) waitCount(t *testing.T, what string, want int, q string, args ...any) {
	t.Helper()
	apptest.Eventually(t, 90*time.Second, what, func() bool { return e.count(t, q, args...) >= want })
	if n := e.count(t, q, args...); n != want {
		t.Fatalf("%s: %d, want %d", what, n, want)
	}
}
