package monitor_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/monitor"
	"leadpipe/internal/webhooks/kinds"
)

const adminToken = "test-admin-token-0123456789"

func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	re := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("series %s missing from /metrics", series)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// Real signed webhooks from 16 concurrent senders, a fifth of them
// retries: the per-minute counters (and so the charts) and /metrics equal
// what the senders were told, duplicates included.
func TestWebhookCountsUnderConcurrentSenders(t *testing.T) {
	e := monitorEnv(t, "monitor_e2e")
	ctx := context.Background()
	svc := e.App.Web.Monitor
	acme := e.Tenant("acme")
	src, secret, err := e.App.Sources.Create(ctx, acme.ID, sourcesInput("leads"))
	if err != nil {
		t.Fatal(err)
	}
	hook := e.Hook("acme", "leads", src.Kind, secret)
	start := time.Now().UTC()

	const senders, perSender = 16, 40
	var accepted, duplicate, other atomic.Int64
	if err := racing(senders, func(s int) error {
		for i := range perSender {
			id := "msg_" + strconv.Itoa(s) + "_" + strconv.Itoa(i)
			if i%5 == 4 { // a retry of an earlier delivery
				id = "msg_" + strconv.Itoa(s) + "_" + strconv.Itoa(i-1)
			}
			now := time.Now()
			body := kinds.SampleBody(src.Kind, id, "ref-"+id, kinds.Lead{Email: "x@example.com"}, now)
			status, out, err := hook.Try(id, body, now)
			if err != nil {
				return err
			}
			switch {
			case status == 200 && bytes.Contains(out, []byte(`"accepted"`)):
				accepted.Add(1)
			case status == 200 && bytes.Contains(out, []byte(`"duplicate"`)):
				duplicate.Add(1)
			default:
				other.Add(1)
				t.Errorf("status %d: %s", status, out)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// A bad signature counts as rejected.
	r := e.Do("POST", "/hooks/acme/leads", "", `{"x":1}`, "webhook-id", "msg_x", "webhook-timestamp",
		strconv.FormatInt(time.Now().Unix(), 10), "webhook-signature", "v1,AAAA")
	if r.Status != 401 {
		t.Fatalf("bad signature: %d", r.Status)
	}
	if err := svc.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if accepted.Load() != senders*perSender*4/5 || duplicate.Load() != senders*perSender/5 {
		t.Fatalf("senders saw %d accepted, %d duplicates", accepted.Load(), duplicate.Load())
	}
	bs, err := svc.Stats(ctx, acme.ID, src.ID, start.Add(-time.Minute), time.Now().Add(time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	del, dup, rej := sumBuckets(bs)
	if del != accepted.Load()+duplicate.Load() || dup != duplicate.Load() || rej != 1 {
		t.Fatalf("stats %d deliveries, %d duplicates, %d rejected; senders saw %d + %d", del, dup, rej, accepted.Load(), duplicate.Load())
	}

	res := e.Do("GET", "/metrics", "", nil)
	if res.Status != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", res.Status, res.Header.Get("Content-Type"))
	}
	body := string(res.Body)
	lbl := `{result="%s",source="` + src.ID + `",tenant="` + acme.ID + `"}`
	series := func(result string) string { return "leadpipe_deliveries_total" + strings.Replace(lbl, "%s", result, 1) }
	if v := metricValue(t, body, series("accepted")); v != float64(accepted.Load()) {
		t.Fatalf("accepted %v", v)
	}
	if v := metricValue(t, body, series("duplicate")); v != float64(duplicate.Load()) {
		t.Fatalf("duplicate %v", v)
	}
	if v := metricValue(t, body, series("rejected")); v != 1 {
		t.Fatalf("rejected %v", v)
	}
	metricValue(t, body, series("dead_letter"))
	metricValue(t, body, `leadpipe_ingest_duration_seconds_count{kind="standard",result="accepted"}`)
	metricValue(t, body, `leadpipe_queue_depth{queue="critical",state="pending"}`)
	metricValue(t, body, `leadpipe_queue_scrape_error`)
	metricValue(t, body, `leadpipe_alerts_scrape_error`)

	// An open alert shows as a gauge.
	svc.Recorder.Add(acme.ID, src.ID, monitor.DeadLetters, 3, t0)
	if err := svc.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Evaluate(ctx, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	res = e.Do("GET", "/metrics", "", nil)
	if v := metricValue(t, string(res.Body), `leadpipe_alerts_open{rule="dead_letters",source="`+src.ID+`",tenant="`+acme.ID+`"}`); v != 1 {
		t.Fatalf("alerts_open %v", v)
	}
}

// The Asynq dashboard answers the operator only.
func TestQueueDashboardNeedsAdminToken(t *testing.T) {
	e := monitorEnv(t, "monitor_qmon")
	if r := e.Do("GET", "/admin/queues", "", nil); r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %d %v", r.Status, r.Header)
	}
	if r := e.Do("GET", "/admin/queues", "wrong-token", nil); r.Status != 401 {
		t.Fatalf("wrong token: %d", r.Status)
	}
	acme := e.Tenant("acme")
	if r := e.Do("GET", "/admin/queues", acme.Token, nil); r.Status != 401 {
		t.Fatalf("tenant token: %d", r.Status)
	}
	if r := e.Do("GET", "/admin/queues", adminToken, nil); r.Status != 200 || !strings.Contains(string(r.Body), "<html") {
		t.Fatalf("bearer: %d %.200s", r.Status, r.Body)
	}
	req, _ := http.NewRequest("GET", e.URL+"/admin/queues/api/queues", nil)
	req.SetBasicAuth("operator", adminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "queues") {
		t.Fatalf("basic auth api: %d %s", res.StatusCode, b)
	}
}
