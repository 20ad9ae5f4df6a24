package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
)

func TestMonitorStatsAPI(t *testing.T) {
	e := uiEnv(t, "web_monitor")
	ctx := context.Background()
	acme, other := e.Tenant("acme"), e.Tenant("other")
	src, _ := e.Source(acme.ID, sources.CreateInput{Slug: "fb", Name: "FB", Kind: "standard"})
	otherSrc, _ := e.Source(other.ID, sources.CreateInput{Slug: "fb", Name: "FB", Kind: "standard"})
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	rec := e.App.Web.Monitor.Recorder
	rec.Add(acme.ID, src.ID, monitor.Deliveries, 50, t0.Add(61*time.Minute))
	rec.Add(acme.ID, src.ID, monitor.Duplicates, 5, t0.Add(62*time.Minute))
	rec.Add(acme.ID, src.ID, monitor.Rejected, 2, t0.Add(63*time.Minute))
	rec.Add(acme.ID, src.ID, monitor.ProcessingFailures, 3, t0.Add(64*time.Minute))
	rec.Add(acme.ID, src.ID, monitor.Backfill, 7, t0.Add(65*time.Minute))
	rec.Add(other.ID, otherSrc.ID, monitor.Deliveries, 999, t0.Add(61*time.Minute))
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	path := func(id string, q url.Values) string { return "/api/v1/sources/" + id + "/stats?" + q.Encode() }
	q := url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(3 * time.Hour).Format(time.RFC3339)}, "step": {"3600"}}

	res := e.Do("GET", path(src.ID, q), acme.Token, nil)
	if res.Status != 200 {
		t.Fatalf("stats: %d %s", res.Status, res.Body)
	}
	var raw struct {
		Buckets []map[string]json.RawMessage `json:"buckets"`
	}
	res.JSON(t, &raw)
	if len(raw.Buckets) != 3 {
		t.Fatalf("buckets: %s", res.Body)
	}
	for _, k := range []string{"t", "deliveries", "duplicates", "duplicate_rate", "rejected", "dead_letters", "reconcile_new", "reconcile_known",
		"processing_failures", "backfill"} {
		if _, ok := raw.Buckets[1][k]; !ok {
			t.Fatalf("bucket lacks %q: %s", k, res.Body)
		}
	}
	if len(raw.Buckets[1]) != 10 {
		t.Fatalf("bucket has extra keys: %s", res.Body)
	}
	var out struct{ Buckets []monitor.Bucket }
	res.JSON(t, &out)
	b := out.Buckets[1]
	if !b.T.Equal(t0.Add(time.Hour)) || b.Deliveries != 50 || b.Duplicates != 5 || b.DuplicateRate != 0.1 || b.Rejected != 2 ||
		b.ProcessingFailures != 3 || b.Backfill != 7 || out.Buckets[0].Deliveries != 0 || out.Buckets[2].Deliveries != 0 {
		t.Fatalf("values: %s", res.Body)
	}
	if string(raw.Buckets[1]["t"]) != `"2026-11-02T11:00:00Z"` {
		t.Fatalf("t: %s", raw.Buckets[1]["t"])
	}

	// Defaults: the last 24 h in 5-minute steps.
	res = e.Do("GET", "/api/v1/sources/"+src.ID+"/stats", acme.Token, nil)
	res.JSON(t, &out)
	if res.Status != 200 || len(out.Buckets) < 288 || len(out.Buckets) > 289 || out.Buckets[1].T.Sub(out.Buckets[0].T) != 5*time.Minute {
		t.Fatalf("defaults: %d, %d buckets", res.Status, len(out.Buckets))
	}

	// Offsets in the times work (a "+" sent unencoded arrives as a space).
	res = e.Do("GET", "/api/v1/sources/"+src.ID+"/stats?from=2026-11-02T12:00:00+02:00&to=2026-11-02T13:00:00%2B02:00&step=3600", acme.Token, nil)
	res.JSON(t, &out)
	if res.Status != 200 || len(out.Buckets) != 1 || !out.Buckets[0].T.Equal(t0) {
		t.Fatalf("offset: %d %s", res.Status, res.Body)
	}

	cases := []struct {
		name   string
		q      url.Values
		status int
		field  string
	}{
		{"from after to", url.Values{"from": {t0.Add(time.Hour).Format(time.RFC3339)}, "to": {t0.Format(time.RFC3339)}}, 422, "from"},
		{"bad from", url.Values{"from": {"yesterday"}}, 422, "from"},
		{"bad to", url.Values{"to": {"2026-13-01"}}, 422, "to"},
		{"step small", url.Values{"step": {"30"}}, 422, "step"},
		{"step not number", url.Values{"step": {"5m"}}, 422, "step"},
		{"step negative", url.Values{"step": {"-60"}}, 422, "step"},
		{"too many buckets", url.Values{"from": {t0.Add(-30 * 24 * time.Hour).Format(time.RFC3339)}, "to": {t0.Format(time.RFC3339)}, "step": {"60"}}, 422, "step"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.Do("GET", path(src.ID, c.q), acme.Token, nil)
			var p struct{ Errors map[string]string }
			_ = json.Unmarshal(r.Body, &p)
			if r.Status != c.status || p.Errors[c.field] == "" {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
		})
	}

	// Another tenant's source, an unknown id, no token.
	if r := e.Do("GET", path(otherSrc.ID, q), acme.Token, nil); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant's source: %d", r.Status)
	}
	if r := e.Do("GET", path("01ARZ3NDEKTSV4RRFFQ69G5FAV", q), acme.Token, nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown source: %d", r.Status)
	}
	if r := e.Do("GET", path(src.ID, q), "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.Status)
	}
	// The other tenant sees only its own counts.
	res = e.Do("GET", path(otherSrc.ID, q), other.Token, nil)
	res.JSON(t, &out)
	if out.Buckets[1].Deliveries != 999 || out.Buckets[1].Duplicates != 0 {
		t.Fatalf("other tenant: %s", res.Body)
	}
}

func TestMonitorRulesAndAlertsAPI(t *testing.T) {
	e := uiEnv(t, "web_rules")
	ctx := context.Background()
	acme, other := e.Tenant("acme"), e.Tenant("other")
	src, _ := e.Source(acme.ID, sources.CreateInput{Slug: "fb", Name: "FB", Kind: "standard"})
	p := "/api/v1/sources/" + src.ID + "/alert-rules"
	var rules monitor.Rules
	res := e.Do("GET", p, acme.Token, nil)
	res.JSON(t, &rules)
	if res.Status != 200 || !rules.Default || rules.SpikeFactor != 3 || rules.SpikeMinPoints != 0.10 || rules.SpikeMinDeliveries != 50 ||
		rules.WindowSeconds != 900 || rules.BaselineSeconds != 86400 {
		t.Fatalf("defaults: %d %s", res.Status, res.Body)
	}
	res = e.Do("PUT", p, acme.Token, map[string]any{"spike_factor": 4.5, "dead_letters_enabled": false})
	res.JSON(t, &rules)
	if res.Status != 200 || rules.Default || rules.SpikeFactor != 4.5 || rules.DeadLettersEnabled || rules.SpikeMinDeliveries != 50 ||
		rules.UpdatedBy == nil {
		t.Fatalf("put: %d %s", res.Status, res.Body)
	}
	if r := e.Do("GET", p, acme.Token, nil); r.Status != 200 {
		t.Fatalf("get: %d", r.Status)
	} else if r.JSON(t, &rules); rules.SpikeFactor != 4.5 {
		t.Fatalf("not saved: %s", r.Body)
	}
	if r := e.Do("PUT", p, acme.Token, map[string]any{"spike_factor": 0.5, "window_seconds": 30}); r.Status != 422 ||
		!json.Valid(r.Body) || !strings.Contains(string(r.Body), "spike_factor") || !strings.Contains(string(r.Body), "window_seconds") {
		t.Fatalf("invalid: %d %s", r.Status, r.Body)
	}
	if r := e.Do("PUT", p, acme.Token, `{"spike_factor":`); r.Status != 400 {
		t.Fatalf("malformed: %d", r.Status)
	}
	if r := e.Do("PUT", p, other.Token, map[string]any{"spike_factor": 5}); r.Status != 404 {
		t.Fatalf("other tenant: %d", r.Status)
	}
	if r := e.Do("DELETE", p, acme.Token, nil); r.Status != 200 {
		t.Fatalf("reset: %d", r.Status)
	} else if r.JSON(t, &rules); !rules.Default || rules.SpikeFactor != 3 {
		t.Fatalf("reset: %s", r.Body)
	}

	// Alerts list: shape, filters, validation.
	res = e.Do("GET", "/api/v1/alerts", acme.Token, nil)
	if res.Status != 200 || string(res.Body) != `{"items":[],"next_cursor":null}`+"\n" {
		t.Fatalf("empty list: %d %q", res.Status, res.Body)
	}
	for _, bad := range []string{"?state=closed", "?limit=0", "?limit=500", "?cursor=nope"} {
		if r := e.Do("GET", "/api/v1/alerts"+bad, acme.Token, nil); r.Status != 422 {
			t.Fatalf("%s: %d", bad, r.Status)
		}
	}
	// Three dead-letter alerts on three sources, paged two at a time.
	rec := e.App.Web.Monitor.Recorder
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, slug := range []string{"a1", "a2", "a3"} {
		s, _ := e.Source(acme.ID, sources.CreateInput{Slug: slug, Name: slug, Kind: "standard"})
		rec.Add(acme.ID, s.ID, monitor.DeadLetters, 1, t0)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Web.Monitor.Evaluate(ctx, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Items      []map[string]json.RawMessage `json:"items"`
		NextCursor *string                      `json:"next_cursor"`
	}
	e.Do("GET", "/api/v1/alerts?state=open&limit=2", acme.Token, nil).JSON(t, &page)
	if len(page.Items) != 2 || page.NextCursor == nil {
		t.Fatalf("page 1: %+v", page)
	}
	for _, k := range []string{"id", "source_id", "rule", "state", "fired_at", "resolved_at", "acknowledged_at", "detail"} {
		if _, ok := page.Items[0][k]; !ok {
			t.Fatalf("alert lacks %q", k)
		}
	}
	first := string(page.Items[0]["id"])
	e.Do("GET", "/api/v1/alerts?state=open&limit=2&cursor="+*page.NextCursor, acme.Token, nil).JSON(t, &page)
	if len(page.Items) != 1 || page.NextCursor != nil || string(page.Items[0]["id"]) == first {
		t.Fatalf("page 2: %+v", page)
	}
	var id string
	_ = json.Unmarshal(page.Items[0]["id"], &id)
	if r := e.Do("GET", "/api/v1/alerts/"+id, acme.Token, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"events":[{`) {
		t.Fatalf("get alert: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/api/v1/alerts/"+id, other.Token, nil); r.Status != 404 {
		t.Fatalf("other tenant's alert: %d", r.Status)
	}
	if r := e.Do("GET", "/api/v1/alerts?state=resolved", acme.Token, nil); r.Status != 200 || strings.Contains(string(r.Body), id) {
		t.Fatalf("resolved: %s", r.Body)
	}
	if n, _ := e.App.Web.Monitor.OpenAlertCount(ctx, other.ID); n != 0 {
		t.Fatalf("other tenant open alerts: %d", n)
	}
}
