package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apptest"
	"leadpipe/internal/monitor"
	"leadpipe/internal/monitor/monitortest"
	"leadpipe/internal/sources"
)

// monitorEnv is the app of one test of this package, on its Redis
// database.
func monitorEnv(t *testing.T, prefix string) *apptest.Env {
	t.Helper()
	return apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisMonitor})
}

// alertHook subscribes the tenant to alert.fired at a port nobody
// listens on.
func alertHook(t *testing.T, e *apptest.Env, ten apptest.Tenant) {
	t.Helper()
	if r := e.Do("POST", "/api/v1/endpoints", ten.Token, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"alert.fired"}}); r.Status != 201 {
		t.Fatalf("endpoint: %d %s", r.Status, r.Body)
	}
}

// racing runs f(0) … f(n-1) at once (evaluators or senders racing) and
// returns their errors joined.
func racing(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func newSource(t testing.TB, e *apptest.Env, tenantID, slug string) sources.Source {
	t.Helper()
	src, _, err := e.App.Sources.Create(context.Background(), tenantID, sourcesInput(slug))
	if err != nil {
		t.Fatalf("create source: %v", err)
	}
	return src
}

func sourcesInput(slug string) sources.CreateInput {
	return sources.CreateInput{Slug: slug, Name: strings.ToUpper(slug), Kind: "standard"}
}

type apiAlert struct {
	ID             string          `json:"id"`
	SourceID       string          `json:"source_id"`
	Rule           string          `json:"rule"`
	State          string          `json:"state"`
	FiredAt        time.Time       `json:"fired_at"`
	ResolvedAt     *time.Time      `json:"resolved_at"`
	AcknowledgedAt *time.Time      `json:"acknowledged_at"`
	Detail         json.RawMessage `json:"detail"`
}

func listAlerts(t testing.TB, e *apptest.Env, token, state string) []apiAlert {
	t.Helper()
	res := e.Do("GET", "/api/v1/alerts?state="+state, token, nil)
	if res.Status != 200 {
		t.Fatalf("alerts: %d %s", res.Status, res.Body)
	}
	var out struct {
		Items      []apiAlert `json:"items"`
		NextCursor *string    `json:"next_cursor"`
	}
	res.JSON(t, &out)
	return out.Items
}

// A simulated day of steady traffic at 2% duplicates raises nothing; a
// 10-minute retry storm at 40% on one source raises exactly one alert on
// that source (two evaluators racing every minute), which can be
// acknowledged and resolves by itself after the storm.
func TestRetryStormRaisesOneAlertThatResolves(t *testing.T) {
	var clock apptest.Clock
	e := apptest.New(t, "monitor_storm", apptest.Options{RedisDB: apptest.RedisMonitor, Now: clock.Now})
	ctx := context.Background()
	svc := e.App.Web.Monitor
	rec := svc.Recorder
	acme, other := e.Tenant("acme"), e.Tenant("other")
	stormy, quiet := newSource(t, e, acme.ID, "stormy"), newSource(t, e, acme.ID, "quiet")
	elsewhere := newSource(t, e, other.ID, "elsewhere")

	traffic := map[string]*monitortest.Traffic{
		stormy.ID:    {TenantID: acme.ID, SourceID: stormy.ID, PerMinute: 100, DupRate: 0.02, Seed: 1},
		quiet.ID:     {TenantID: acme.ID, SourceID: quiet.ID, PerMinute: 60, DupRate: 0.02, Seed: 2},
		elsewhere.ID: {TenantID: other.ID, SourceID: elsewhere.ID, PerMinute: 80, DupRate: 0.02, Seed: 3},
	}
	var stormTotals monitortest.Totals
	minute := func(m int, storm bool) {
		at := t0.Add(time.Duration(m) * time.Minute)
		for id, tr := range traffic {
			tr := *tr
			tr.Seed += uint64(m)
			if storm && id == stormy.ID {
				tr.DupRate = 0.40
				got := tr.Add(rec, at, at.Add(time.Minute))
				stormTotals.Deliveries += got.Deliveries
				stormTotals.Duplicates += got.Duplicates
				continue
			}
			tr.Add(rec, at, at.Add(time.Minute))
		}
	}
	evaluate := func(m int, racers int) {
		t.Helper()
		if err := rec.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(time.Duration(m+1)*time.Minute + monitor.EvaluateLag) // just after minute m ended
		if err := racing(racers, func(int) error { return svc.Evaluate(ctx, now) }); err != nil {
			t.Errorf("evaluate: %v", err)
		}
	}

	// Day 1: steady.
	for m := 0; m < 1440; m++ {
		minute(m, false)
		if m%5 == 4 {
			evaluate(m, 1)
		}
	}
	if got := listAlerts(t, e, acme.Token, "all"); len(got) != 0 {
		t.Fatalf("steady traffic raised alerts: %+v", got)
	}

	// Day 2: an hour of quiet, a 10-minute storm at 40%, then quiet.
	const stormStart, stormEnd = 1500, 1510
	var fired apiAlert
	for m := 1440; m < 1600; m++ {
		minute(m, m >= stormStart && m < stormEnd)
		evaluate(m, 2)
		open := listAlerts(t, e, acme.Token, "open")
		if m < stormStart && len(open) > 0 {
			t.Fatalf("minute %d: alert before the storm: %+v", m, open)
		}
		if len(open) > 1 {
			t.Fatalf("minute %d: %d open alerts: %+v", m, len(open), open)
		}
		if len(open) == 1 && fired.ID == "" {
			fired = open[0]
			t.Logf("alert fired after minute %d (storm minute %d)", m, m-stormStart+1)
			if m >= stormEnd {
				t.Fatalf("fired only at minute %d, after the storm", m)
			}
			if n, _ := svc.OpenAlertCount(ctx, acme.ID); n != 1 {
				t.Fatalf("open alert count %d", n)
			}
			testAck(t, e, acme.Token, other.Token, fired.ID)
			testOverview(t, svc, acme.ID, stormy.ID, quiet.ID, t0.Add(time.Duration(m+1)*time.Minute))
		}
	}
	if fired.ID == "" {
		t.Fatal("the storm raised no alert")
	}
	if fired.SourceID != stormy.ID || fired.Rule != monitor.RuleDuplicateSpike {
		t.Fatalf("wrong alert %+v", fired)
	}
	if !strings.Contains(string(fired.Detail), `"baseline_rate"`) || !strings.Contains(string(fired.Detail), `"summary"`) {
		t.Fatalf("detail %s", fired.Detail)
	}

	all := listAlerts(t, e, acme.Token, "all")
	if len(all) != 1 || all[0].State != monitor.StateResolved || all[0].ResolvedAt == nil || all[0].AcknowledgedAt == nil {
		t.Fatalf("want one resolved, acknowledged alert, got %+v", all)
	}
	resolvedAfter := all[0].ResolvedAt.Sub(t0.Add(stormEnd * time.Minute))
	t.Logf("resolved %s after the storm ended", resolvedAfter)
	if resolvedAfter <= 0 || resolvedAfter > 40*time.Minute {
		t.Fatalf("resolved %s after the storm", resolvedAfter)
	}
	if got := listAlerts(t, e, acme.Token, "resolved"); len(got) != 1 {
		t.Fatalf("resolved filter: %+v", got)
	}
	if got := listAlerts(t, e, other.Token, "all"); len(got) != 0 {
		t.Fatalf("the other tenant got alerts: %+v", got)
	}
	if n, _ := svc.OpenAlertCount(ctx, acme.ID); n != 0 {
		t.Fatalf("open alert count after resolution %d", n)
	}

	// History: fired, acknowledged, resolved — events for later delivery.
	ev, err := svc.AlertEvents(ctx, acme.ID, fired.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, x := range ev {
		types = append(types, x.Type)
	}
	if strings.Join(types, ",") != "fired,acknowledged,resolved" {
		t.Fatalf("events %v", types)
	}

	// The chart's numbers are what was sent, storm included.
	bs, err := svc.Stats(ctx, acme.ID, stormy.ID, t0.Add(stormStart*time.Minute), t0.Add(stormEnd*time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if del, dup, _ := sumBuckets(bs); del != stormTotals.Deliveries || dup != stormTotals.Duplicates {
		t.Fatalf("storm in stats %d/%d, sent %d/%d", del, dup, stormTotals.Deliveries, stormTotals.Duplicates)
	}
	res := e.Do("GET", "/api/v1/sources/"+stormy.ID+"/stats?from="+t0.Add(24*time.Hour).Format(time.RFC3339)+
		"&to="+t0.Add(48*time.Hour).Format(time.RFC3339)+"&step=300", acme.Token, nil)
	if res.Status != 200 {
		t.Fatalf("stats: %d %s", res.Status, res.Body)
	}
	var chart struct{ Buckets []monitor.Bucket }
	res.JSON(t, &chart)
	peak := 0.0
	for _, b := range chart.Buckets {
		peak = max(peak, b.DuplicateRate)
	}
	if len(chart.Buckets) != 288 || peak < 0.3 {
		t.Fatalf("24 h chart: %d buckets, peak rate %.3f", len(chart.Buckets), peak)
	}

	// The periodic task runs the evaluator on the service's clock.
	clock.Set(t0.Add(1600 * time.Minute))
	if err := e.App.Jobs.Mux().ProcessTask(ctx, asynq.NewTask(monitor.TypeEvaluate, nil)); err != nil {
		t.Fatalf("task: %v", err)
	}
	if got := listAlerts(t, e, acme.Token, "all"); len(got) != 1 {
		t.Fatalf("after the task: %+v", got)
	}
}

func testAck(t *testing.T, e *apptest.Env, token, otherToken, id string) {
	t.Helper()
	if r := e.Do("POST", "/api/v1/alerts/"+id+"/ack", otherToken, nil); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant ack: %d %s", r.Status, r.Body)
	}
	var first, second apiAlert
	r := e.Do("POST", "/api/v1/alerts/"+id+"/ack", token, nil)
	if r.Status != 200 {
		t.Fatalf("ack: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &first)
	r = e.Do("POST", "/api/v1/alerts/"+id+"/ack", token, nil)
	if r.Status != 200 {
		t.Fatalf("second ack: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &second)
	if first.AcknowledgedAt == nil || second.AcknowledgedAt == nil || !first.AcknowledgedAt.Equal(*second.AcknowledgedAt) || first.State != "open" {
		t.Fatalf("ack: %+v then %+v", first, second)
	}
	if r := e.Do("POST", "/api/v1/alerts/not-an-id/ack", token, nil); r.Status != http.StatusNotFound {
		t.Fatalf("bad id: %d", r.Status)
	}
}

func testOverview(t *testing.T, svc *monitor.Service, tenantID, stormy, quiet string, now time.Time) {
	t.Helper()
	ov, err := svc.Overview(context.Background(), tenantID, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ov) != 2 {
		t.Fatalf("overview %+v", ov)
	}
	for _, o := range ov {
		if len(o.Sparkline) != 24 || len(o.SparkVolume) != 24 || o.Deliveries == 0 {
			t.Fatalf("overview row %+v", o)
		}
		switch o.SourceID {
		case stormy:
			if o.OpenAlerts != 1 || o.WindowRate <= o.Threshold || o.BaselineRate > 0.05 || o.Threshold < 0.1 {
				t.Fatalf("stormy row %+v", o)
			}
		case quiet:
			if o.OpenAlerts != 0 || o.Rate > 0.1 || o.Threshold < 0.1 {
				t.Fatalf("quiet row %+v", o)
			}
		}
	}
}

// Per-minute rows past retention are purged; hourly and daily ones stay.
func TestPurgeKeepsRollups(t *testing.T) {
	e := monitorEnv(t, "monitor_purge")
	ctx := context.Background()
	svc := e.App.Web.Monitor
	acme := e.Tenant("acme")
	src := newSource(t, e, acme.ID, "old")
	svc.Recorder.Add(acme.ID, src.ID, monitor.Deliveries, 7, t0)
	svc.Recorder.Add(acme.ID, src.ID, monitor.Deliveries, 3, t0.Add(40*24*time.Hour))
	if err := svc.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Purge(ctx, t0.Add(41*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	sum := func(step time.Duration) int64 {
		bs, err := svc.Stats(ctx, acme.ID, src.ID, t0.Add(-time.Hour), t0.Add(time.Hour), step)
		if err != nil {
			t.Fatal(err)
		}
		d, _, _ := sumBuckets(bs)
		return d
	}
	if sum(time.Minute) != 0 || sum(time.Hour) != 7 {
		t.Fatalf("after purge: minute %d, hour %d", sum(time.Minute), sum(time.Hour))
	}
	bs, _ := svc.Stats(ctx, acme.ID, src.ID, t0.Add(40*24*time.Hour), t0.Add(40*24*time.Hour+time.Hour), time.Minute)
	if d, _, _ := sumBuckets(bs); d != 3 {
		t.Fatalf("recent minutes purged: %d", d)
	}
}
