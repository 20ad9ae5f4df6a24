package web_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
)

// The "Sources and campaigns" report's figures equal a brute-force count
// over the same leads, grouped by source and by campaign: two tenants,
// two sources each, leads created inside and outside a period of days in
// the admin's zone (New York, across the November daylight-saving
// change), random statuses, response times and attribution (a first-touch
// campaign, by utm_campaign or an ad's campaign name, or none; a last
// touch elsewhere, which never counts). The other tenant's leads never
// count.
func TestUIReportSourcesEqualsBruteForce(t *testing.T) {
	e := uiEnv(t, "ui_report")
	ctx := context.Background()
	a, b := e.Tenant("acme"), e.Tenant("other")
	ny, _ := time.LoadLocation("America/New_York")
	if _, err := e.App.DB.ExecContext(ctx, `UPDATE users SET time_zone = 'America/New_York' WHERE tenant_id = ? AND id = ?`, a.ID, a.Admin.ID); err != nil {
		t.Fatal(err)
	}
	mk := func(tenantID, slug string) string {
		s, _ := e.Source(tenantID, sources.CreateInput{Slug: slug, Name: strings.ToUpper(slug), Kind: "standard"})
		return s.ID
	}
	srcs := map[string][]string{a.ID: {mk(a.ID, "web"), mk(a.ID, "meta")}, b.ID: {mk(b.ID, "web"), mk(b.ID, "meta")}}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
	to := time.Date(2026, 11, 15, 0, 0, 0, 0, ny) // days Nov 1 … Nov 14 inclusive
	statuses := []string{"new", "contacted", "qualified", "unqualified", "won", "lost"}
	rng := rand.New(rand.NewPCG(1, 2))
	// First touches: the campaign is utm_campaign, else campaign_name;
	// "Spring" and "spring" are two campaigns.
	touches := []struct{ attr, campaign string }{
		{`{"first":{"utm_source":"news","utm_campaign":"spring","at":"2026-10-01T00:00:00Z"},"last":{"utm_campaign":"winter"}}`, "spring"},
		{`{"first":{"utm_campaign":"Spring"}}`, "Spring"},
		{`{"first":{"campaign_name":"Lead ad 7","campaign_id":"120200"},"last":{"campaign_name":"Retarget"}}`, "Lead ad 7"},
		{`{"first":{"campaign_id":"120201"}}`, "120201"},
		{`{"first":{"utm_source":"google"},"last":{"utm_campaign":"spring"}}`, ""},
		{``, ""},
	}
	type lead struct {
		id, tenant, source, status, campaign string
		created                              time.Time
		response                             *time.Duration
	}
	var all []lead
	for _, ten := range []string{a.ID, b.ID} {
		for i := range 300 {
			src := srcs[ten][i%2]
			id := seedLead(t, e, ten, src, fmt.Sprintf("r%d", i), fmt.Sprintf("Lead %d", i), fmt.Sprintf("l%d@example.com", i))
			l := lead{id: id, tenant: ten, source: src, status: statuses[rng.IntN(len(statuses))],
				created: from.Add(time.Duration(rng.IntN(20*24*60)-3*24*60) * time.Minute).UTC().Truncate(time.Second)}
			var assigned, responded, attr any
			if rng.IntN(3) > 0 {
				d := time.Duration(rng.IntN(6*3600)) * time.Second
				l.response = &d
				assigned, responded = l.created.Add(time.Minute), l.created.Add(time.Minute+d)
			}
			if tc := touches[rng.IntN(len(touches))]; tc.attr != "" {
				attr, l.campaign = tc.attr, tc.campaign
			}
			if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET status = ?, created_at = ?, assigned_at = ?, first_responded_at = ?, attribution = ? WHERE tenant_id = ? AND id = ?`,
				l.status, l.created, assigned, responded, attr, ten, id); err != nil {
				t.Fatal(err)
			}
			all = append(all, l)
		}
	}
	// Deliveries for the duplicate rate: inside the period and the day before.
	for _, at := range []time.Time{from.Add(2 * time.Hour), from.Add(-time.Hour), to.Add(-time.Minute)} {
		e.App.Stats.Add(a.ID, srcs[a.ID][0], monitor.Deliveries, 100, at)
		e.App.Stats.Add(a.ID, srcs[a.ID][0], monitor.Duplicates, 7, at)
	}
	if err := e.App.Web.Monitor.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	type want struct {
		leads, qualified, won int64
		responses             []float64
	}
	// count adds the lead to its group's expected figures.
	count := func(w *want, l lead) {
		w.leads++
		if l.status == "qualified" || l.status == "won" {
			w.qualified++
		}
		if l.status == "won" {
			w.won++
		}
		if l.response != nil {
			w.responses = append(w.responses, l.response.Seconds())
		}
	}
	brute := map[string]*want{}
	for _, l := range all {
		if l.tenant != a.ID || l.created.Before(from) || !l.created.Before(to) {
			continue
		}
		w := brute[l.source]
		if w == nil {
			w = &want{}
			brute[l.source] = w
		}
		count(w, l)
	}

	br := newBrowser(t, e)
	br.login(a.Admin.Email, a.AdminPassword)
	p := br.get("/reports/sources?from=2026-11-01&to=2026-11-14&format=csv")
	if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s", p.status, p.header.Get("Content-Type"))
	}
	recs, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(brute) {
		t.Fatalf("%d rows, want %d: %v", len(recs)-1, len(brute), recs)
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	for _, r := range recs[1:] {
		w := brute[r[0]]
		if w == nil {
			t.Fatalf("a row for %s, which is not the tenant's or has no leads in the period", r[0])
		}
		if n(r[2]) != w.leads || n(r[8]) != w.qualified || n(r[10]) != w.won || n(r[6]) != int64(len(w.responses)) {
			t.Errorf("%s: leads %s qualified %s won %s responded %s; brute force %d %d %d %d", r[1], r[2], r[8], r[10], r[6], w.leads, w.qualified, w.won, len(w.responses))
		}
		if med := median64(w.responses); absf(float64(n(r[7]))-med) > 1 {
			t.Errorf("%s: median first response %ss, brute force %.1fs", r[1], r[7], med)
		}
		if r[0] == srcs[a.ID][0] && (n(r[3]) != 200 || n(r[4]) != 14) {
			t.Errorf("deliveries %s duplicates %s, want 200 and 14 (the day before is outside)", r[3], r[4])
		}
	}
	// Leads per day (the report's chart), days in New York.
	daily, err := dailyLeads(ctx, e.App.Web.Leads, a.ID, leads.BySource, from, to, ny)
	if err != nil {
		t.Fatal(err)
	}
	wantDaily := map[string][]int64{}
	for _, l := range all {
		if l.tenant != a.ID || l.created.Before(from) || !l.created.Before(to) {
			continue
		}
		if wantDaily[l.source] == nil {
			wantDaily[l.source] = make([]int64, 14)
		}
		c := l.created.In(ny)
		wantDaily[l.source][c.Day()-1]++ // November 1 … 14
	}
	for src, w := range wantDaily {
		if fmt.Sprint(daily[leads.ReportKey{SourceID: src}]) != fmt.Sprint(w) {
			t.Errorf("%s per day %v, brute force %v", src, daily[leads.ReportKey{SourceID: src}], w)
		}
	}
	if len(daily) != len(wantDaily) {
		t.Errorf("daily for %d sources, want %d", len(daily), len(wantDaily))
	}
	// The page: sortable, one row per source.
	page := br.get("/reports/sources?from=2026-11-01&to=2026-11-14&sort=won")
	if page.status != 200 || page.testid("report-row").Length() != len(brute) {
		t.Fatalf("report page: %d, %d rows", page.status, page.testid("report-row").Length())
	}

	// Per campaign and source: the CSV, the days and the page.
	type key = leads.ReportKey
	var bruteC map[key]*want
	checkCampaigns := func() {
		t.Helper()
		bruteC = map[key]*want{}
		wantDailyC := map[key][]int64{}
		for _, l := range all {
			if l.tenant != a.ID || l.created.Before(from) || !l.created.Before(to) {
				continue
			}
			k := key{SourceID: l.source, Campaign: l.campaign}
			w := bruteC[k]
			if w == nil {
				w = &want{}
				bruteC[k] = w
				wantDailyC[k] = make([]int64, 14)
			}
			count(w, l)
			wantDailyC[k][l.created.In(ny).Day()-1]++
		}
		if len(bruteC) < 8 {
			t.Fatalf("only %d campaign rows in the brute force: the test's data is too thin", len(bruteC))
		}
		p = br.get("/reports/sources?by=campaign&from=2026-11-01&to=2026-11-14&format=csv")
		if p.status != 200 || !strings.Contains(p.header.Get("Content-Disposition"), "campaigns-2026-11-01-2026-11-14.csv") {
			t.Fatalf("campaign csv: %d %s", p.status, p.header.Get("Content-Disposition"))
		}
		recs, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(recs[0], ","); got != "campaign,source_id,source,leads,responded,median_first_response_seconds,qualified,qualified_share,won,won_share" {
			t.Fatalf("campaign csv header %s", got)
		}
		if len(recs) != 1+len(bruteC) {
			t.Fatalf("%d campaign rows, want %d: %v", len(recs)-1, len(bruteC), recs)
		}
		for _, r := range recs[1:] {
			w := bruteC[key{SourceID: r[1], Campaign: r[0]}]
			if w == nil {
				t.Fatalf("a row for %q on %s, which has no leads of the tenant in the period", r[0], r[1])
			}
			if n(r[3]) != w.leads || n(r[6]) != w.qualified || n(r[8]) != w.won || n(r[4]) != int64(len(w.responses)) {
				t.Errorf("%q on %s: leads %s qualified %s won %s responded %s; brute force %d %d %d %d", r[0], r[2], r[3], r[6], r[8], r[4], w.leads, w.qualified, w.won, len(w.responses))
			}
			if med := median64(w.responses); absf(float64(n(r[5]))-med) > 1 {
				t.Errorf("%q on %s: median first response %ss, brute force %.1fs", r[0], r[2], r[5], med)
			}
		}
		dailyC, err := dailyLeads(ctx, e.App.Web.Leads, a.ID, leads.ByCampaign, from, to, ny)
		if err != nil {
			t.Fatal(err)
		}
		if len(dailyC) != len(wantDailyC) {
			t.Errorf("daily for %d campaign rows, want %d", len(dailyC), len(wantDailyC))
		}
		for k, w := range wantDailyC {
			if fmt.Sprint(dailyC[k]) != fmt.Sprint(w) {
				t.Errorf("%+v per day %v, brute force %v", k, dailyC[k], w)
			}
		}
	}
	checkCampaigns()
	// Two campaigns of one source whose CRC32s collide ("plumless" and
	// "buckeroo"): the medians are taken per campaign all the same.
	k := 0
	for i, l := range all {
		if l.tenant != a.ID || l.source != srcs[a.ID][0] || l.created.Before(from) || !l.created.Before(to) {
			continue
		}
		all[i].campaign = []string{"plumless", "buckeroo"}[k%2]
		k++
		if _, err := e.App.DB.ExecContext(ctx, `UPDATE leads SET attribution = ? WHERE tenant_id = ? AND id = ?`,
			`{"first":{"utm_campaign":"`+all[i].campaign+`"}}`, a.ID, l.id); err != nil {
			t.Fatal(err)
		}
		if k == 40 {
			break
		}
	}
	checkCampaigns()
	page = br.get("/reports/sources?by=campaign&from=2026-11-01&to=2026-11-14&sort=campaign")
	if page.status != 200 || page.testid("report-row").Length() != len(bruteC) {
		t.Fatalf("campaign page: %d, %d rows", page.status, page.testid("report-row").Length())
	}
	if !strings.Contains(page.body, "No campaign") || !strings.Contains(page.body, "Lead ad 7") {
		t.Error("the campaign page does not name the campaigns")
	}
}

func median64(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func absf(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// dailyLeads is the report's leads per day by row.
func dailyLeads(ctx context.Context, l *leads.Service, tenantID string, by leads.ReportBy, from, to time.Time, loc *time.Location) (map[leads.ReportKey][]int64, error) {
	figs, err := l.Report(ctx, tenantID, by, from, to, loc)
	if err != nil {
		return nil, err
	}
	out := map[leads.ReportKey][]int64{}
	for _, f := range figs {
		out[f.ReportKey] = f.Daily
	}
	return out, nil
}
