package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/forms"
	"leadpipe/internal/ids"
)

// BenchmarkFormPostsVsInsertIgnore: a form submission costs no more than a
// webhook delivery. For a fixed time, 16 clients post JSON submissions to
// /f/{tenant}/{form} (10 % of them repeat an earlier token), then 16
// connections run raw autocommit single-row INSERT IGNOREs of the same
// mix into a copy of deliveries, in five alternating rounds; reported: the ratio of acknowledged
// submissions to raw rows per second, the submissions' p99 and, beside it, the raw
// INSERT's p99 at the same concurrency (on a shared machine both move together).
//
//	go test -run '^$' -bench FormPostsVsInsertIgnore -benchtime 1x ./internal/web/
//
// LEADPIPE_BENCH_SECONDS sets each side's duration (default 5).
func BenchmarkFormPostsVsInsertIgnore(b *testing.B) {
	dur := 5 * time.Second
	if v := os.Getenv("LEADPIPE_BENCH_SECONDS"); v != "" {
		if s, err := time.ParseDuration(v + "s"); err == nil {
			dur = s
		}
	}
	// Each simulated visitor posts from its own address (behind a trusted
	// proxy), as a form's traffic does: the per-address limit is not what
	// is measured.
	e := apptest.New(b, "bench_forms", apptest.Options{RedisDB: apptest.RedisBench, Env: map[string]string{"LEADPIPE_TRUST_PROXY": "true"}})
	ten := e.Tenant("acme")
	res := e.Do("POST", "/api/v1/forms", ten.Token, map[string]any{"slug": "contact", "name": "Contact",
		"fields": []map[string]any{{"name": "name", "label": "Name", "type": "text"}, {"name": "email", "label": "E-mail", "type": "email", "required": true}},
		"limits": map[string]any{"per_ip_per_minute": 10000, "per_form_per_minute": 100000}})
	if res.Status != 201 {
		b.Fatalf("create form: %d %s", res.Status, res.Body)
	}
	var f map[string]any
	res.JSON(b, &f)
	secrets, err := e.App.Sources.Secrets(context.Background(), ten.ID, f["source_id"].(string))
	if err != nil {
		b.Fatal(err)
	}
	formID := f["id"].(string)
	const clients = 16
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}

	db := e.App.DB
	if _, err := db.Exec(`CREATE TABLE deliveries_raw LIKE deliveries`); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"form_id":"x","fields":{"name":"Bench","email":"b@example.com"}}`)
	var mu sync.Mutex
	var lat, rawLat []time.Duration
	var n, dups, fails, raw atomic.Int64
	var seq atomic.Int64
	var formSent, rawSent [clients][]string
	// key is a client's next delivery id: every tenth repeats an earlier one.
	key := func(sent *[]string, i int64) string {
		if i%10 == 9 && len(*sent) > 0 {
			return (*sent)[len(*sent)/2]
		}
		k := forms.NewToken(secrets[0], formID, time.Now().Add(-5*time.Second))
		*sent = append(*sent, k)
		return k
	}
	formsRound := func(d time.Duration) {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				var mine []time.Duration
				for time.Now().Before(deadline) {
					i := seq.Add(1)
					body, _ := json.Marshal(map[string]string{"_token": key(&formSent[c], i), "name": "Bench", "email": fmt.Sprintf("b%d@example.com", i)})
					req, _ := http.NewRequest("POST", e.URL+"/f/acme/contact", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", (i/62500)%250, (i/250)%250, i%250))
					t0 := time.Now()
					r, err := client.Do(req)
					if err != nil {
						fails.Add(1)
						continue
					}
					var out map[string]string
					_ = json.NewDecoder(r.Body).Decode(&out)
					r.Body.Close()
					mine = append(mine, time.Since(t0))
					if r.StatusCode != 201 {
						fails.Add(1)
						continue
					}
					n.Add(1)
					if out["status"] == "duplicate" {
						dups.Add(1)
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}(c)
		}
		wg.Wait()
	}
	rawRound := func(d time.Duration) {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				var mine []time.Duration
				defer func() {
					mu.Lock()
					rawLat = append(rawLat, mine...)
					mu.Unlock()
				}()
				for time.Now().Before(deadline) {
					k := key(&rawSent[c], seq.Add(1))
					t0 := time.Now()
					_, err := db.Exec(`INSERT IGNORE INTO deliveries_raw (tenant_id, source_id, id, delivery_id, origin, payload, received_at, state)
						VALUES (?, ?, ?, ?, 'form', ?, ?, 'received')`, ten.ID, f["source_id"], ids.New(), k, payload, time.Now().UTC())
					mine = append(mine, time.Since(t0))
					if err == nil {
						raw.Add(1)
					}
				}
			}(c)
		}
		wg.Wait()
	}
	// Rounds alternate, so both sides meet the same machine.
	const rounds = 5
	for r := 0; r < rounds; r++ {
		formsRound(dur / rounds)
		rawRound(dur / rounds)
	}
	formRate := float64(n.Load()) / dur.Seconds()
	rawRate := float64(raw.Load()) / dur.Seconds()
	pct := func(l []time.Duration) func(float64) time.Duration {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		return func(q float64) time.Duration {
			if len(l) == 0 {
				return 0
			}
			return l[int(q*float64(len(l)-1))]
		}
	}
	p, rp := pct(lat), pct(rawLat)
	b.ReportMetric(formRate, "form_req/s")
	b.ReportMetric(rawRate, "raw_rows/s")
	b.ReportMetric(formRate/rawRate, "ratio")
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(rp(0.99).Microseconds())/1000, "raw_p99_ms")
	b.Logf("forms: %d acknowledged (%d duplicate, %d failed) in %v = %.0f req/s, p50 %v p99 %v; raw INSERT IGNORE %.0f rows/s, p50 %v p99 %v (same 16 clients); ratio %.2f",
		n.Load(), dups.Load(), fails.Load(), dur, formRate, p(0.5), p(0.99), rawRate, rp(0.5), rp(0.99), formRate/rawRate)
}
