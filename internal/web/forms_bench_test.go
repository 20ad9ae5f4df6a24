package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/forms"
	"leadpipe/internal/ids"
	"leadpipe/internal/loadgen"
)

// BenchmarkFormPostsVsInsertIgnore: a form submission costs no more than a
// webhook delivery. For a fixed time, 16 clients post JSON submissions to
// /f/{tenant}/{form} (10 % of them repeat an earlier token), then 16
// connections run raw autocommit single-row INSERT IGNOREs of the same
// mix into a copy of deliveries, in five alternating rounds; reported: the ratio of acknowledged
// submissions to raw rows per second, the submissions' p99 and, beside it, the raw
// INSERT's p99 at the same concurrency (on a shared machine both move together).
// Both sides' work is prepared before the rounds (tokens signed, requests
// serialised), and each client writes its requests on one keep-alive
// connection (internal/loadgen), as the webhook benchmark's senders do
// (cmd/benchingest): the two cores then go to the server and the
// database, not to the load generator.
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

	db := e.App.DB
	if _, err := db.Exec(`CREATE TABLE deliveries_raw LIKE deliveries`); err != nil {
		b.Fatal(err)
	}
	// keys: the delivery ids of both sides, in the order they are taken;
	// every tenth repeats an earlier one. More than the fastest side takes.
	keys := make([]string, int(dur.Seconds()*12000)+1000)
	for i := range keys {
		if i%10 == 9 {
			keys[i] = keys[i/2]
		} else {
			keys[i] = forms.NewToken(secrets[0], formID, time.Now().Add(-5*time.Second))
		}
	}
	host := strings.TrimPrefix(e.URL, "http://")
	wires := make([][]byte, len(keys))
	h := http.Header{"Content-Type": {"application/json"}}
	for i, k := range keys {
		body, _ := json.Marshal(map[string]string{"_token": k, "name": "Bench", "email": fmt.Sprintf("b%d@example.com", i)})
		h.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", (i/62500)%250, (i/250)%250, i%250))
		wires[i] = loadgen.Request(host, "/f/acme/contact", h, body)
	}
	// The raw side inserts the payload a form submission is stored with
	// (the submission record: fields, attribution, address, agent), read
	// back from one posted before the rounds.
	warm, err := loadgen.Dial(host)
	if err != nil {
		b.Fatal(err)
	}
	if st, body, err := warm.Do(wires[len(wires)-1]); err != nil || st != 201 {
		b.Fatalf("warm-up submission: %d %s %v", st, body, err)
	}
	warm.Close()
	var payload []byte
	if err := db.QueryRow(`SELECT payload FROM deliveries WHERE tenant_id = ? AND delivery_id = ?`, ten.ID, keys[len(keys)-1]).Scan(&payload); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lat, rawLat []time.Duration
	var n, dups, fails, raw atomic.Int64
	var formSeq, rawSeq atomic.Int64
	conns := make([]*loadgen.Conn, clients)
	for c := range conns {
		if conns[c], err = loadgen.Dial(host); err != nil {
			b.Fatal(err)
		}
		defer conns[c].Close()
	}
	// round has the clients work side by side for d, each taking the next
	// prepared request (seq counts them out) and doing it with one, until
	// the time is up, the requests run out or one says to stop; the time
	// each took goes to into.
	round := func(d time.Duration, seq *atomic.Int64, into *[]time.Duration, one func(c int, i int64) (time.Duration, bool)) {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				var mine []time.Duration
				for time.Now().Before(deadline) {
					i := seq.Add(1) - 1
					if int(i) >= len(keys) {
						b.Error("out of prepared requests: raise the count")
						break
					}
					took, more := one(c, i)
					mine = append(mine, took)
					if !more {
						break
					}
				}
				mu.Lock()
				*into = append(*into, mine...)
				mu.Unlock()
			}(c)
		}
		wg.Wait()
	}
	formPost := func(c int, i int64) (time.Duration, bool) {
		t0 := time.Now()
		status, body, err := conns[c].Do(wires[i])
		took := time.Since(t0)
		if err != nil {
			b.Errorf("post: %v", err)
			return took, false
		}
		if status != 201 {
			fails.Add(1)
			return took, true
		}
		n.Add(1)
		if bytes.Contains(body, []byte(`"duplicate"`)) {
			dups.Add(1)
		}
		return took, true
	}
	rawInsert := func(_ int, i int64) (time.Duration, bool) {
		t0 := time.Now()
		_, err := db.Exec(`INSERT IGNORE INTO deliveries_raw (tenant_id, source_id, id, delivery_id, origin, payload, received_at, state)
			VALUES (?, ?, ?, ?, 'form', ?, ?, 'received')`, ten.ID, f["source_id"], ids.New(), keys[i], payload, time.Now().UTC())
		took := time.Since(t0)
		if err == nil {
			raw.Add(1)
		}
		return took, true
	}
	// What each side asks of MariaDB: statements and redo log writes
	// (commits group-committed together share one).
	status := func() (questions, logWrites int64) {
		rows, err := db.Query(`SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Innodb_log_writes')`)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var v int64
			if err := rows.Scan(&k, &v); err != nil {
				b.Fatal(err)
			}
			if k == "Questions" {
				questions = v
			} else {
				logWrites = v
			}
		}
		return questions, logWrites
	}
	var formQ, formW, rawQ, rawW int64
	// Rounds alternate, so both sides meet the same machine.
	const rounds = 5
	for r := 0; r < rounds; r++ {
		q0, w0 := status()
		round(dur/rounds, &formSeq, &lat, formPost)
		q1, w1 := status()
		round(dur/rounds, &rawSeq, &rawLat, rawInsert)
		q2, w2 := status()
		formQ, formW, rawQ, rawW = formQ+q1-q0, formW+w1-w0, rawQ+q2-q1, rawW+w2-w1
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
	b.Logf("forms: %d acknowledged (%d duplicate, %d failed) in %v = %.0f req/s, p50 %v p99 %v; raw INSERT IGNORE of the %d-byte payload %.0f rows/s, p50 %v p99 %v (same 16 clients); ratio %.2f",
		n.Load(), dups.Load(), fails.Load(), dur, formRate, p(0.5), p(0.99), len(payload), rawRate, rp(0.5), rp(0.99), formRate/rawRate)
	st := e.App.Ingest.Claimer.Stats()
	if st.Batches > 0 {
		b.Logf("claims: %d rows in %d batches (%.1f a batch), %v a batch, %v a claim; MariaDB statements %.2f, redo log writes %.3f per form POST, against %.2f and %.3f per raw row",
			st.Rows, st.Batches, float64(st.Rows)/float64(st.Batches), st.BatchTime/time.Duration(st.Batches), st.ClaimTime/time.Duration(st.Rows),
			float64(formQ)/float64(n.Load()), float64(formW)/float64(n.Load()), float64(rawQ)/float64(raw.Load()), float64(rawW)/float64(raw.Load()))
	}
}
