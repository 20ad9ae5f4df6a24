//go:build faults && galera

package faults

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/redistest"
)

// TestReadReplica: the real server with LEADPIPE_MYSQL_READ_DSN on a
// private MariaDB replica (GTID replication from a private primary). The
// lead list, the CSV export, a source's chart (stats) and the sources
// report read the replica; a lead's own page (after its PATCH or a
// merge) and an import's progress the primary. A replica that stops
// replicating (SQL thread stopped) and one that is killed leave all four
// reads on the primary, answered 200.
func TestReadReplica(t *testing.T) {
	ctx := context.Background()
	primary := startMariaDB(t)
	replica := startMariaDB(t)
	// Binary log and server ids: restart both with them.
	for i, m := range []*mariaDB{primary, replica} {
		m.signal(syscall.SIGTERM)
		var args []string
		for _, a := range m.args {
			if a != "--skip-log-bin" {
				args = append(args, a)
			}
		}
		m.args = append(args, fmt.Sprintf("--server-id=%d", i+1), "--log-bin=mysql-bin", "--binlog-format=ROW")
		m.startAndWait(t)
	}
	const dbName = "leadpipe_replica"
	rep, err := db.Open(ctx, replica.dsn("mysql"))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	for _, q := range []string{
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos", primary.port),
		"START SLAVE",
	} {
		if _, err := rep.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	serverBin, _ := binaries(t)
	redis := redistest.Single(t)
	port := freePort(t)
	s := &suite{t: t}
	s.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	server := newLeadpipe(t, "server", serverBin, map[string]string{
		"LEADPIPE_ADDR":               fmt.Sprintf("127.0.0.1:%d", port),
		"LEADPIPE_MYSQL_DSN":          primary.dsn(dbName),
		"LEADPIPE_MYSQL_READ_DSN":     replica.dsn(dbName),
		"LEADPIPE_MYSQL_READ_MAX_LAG": "10s",
		"LEADPIPE_REDIS_URL":          "redis://" + redis.Addr() + "/0",
		"LEADPIPE_BASE_URL":           s.base,
		"LEADPIPE_ADMIN_TOKEN":        adminToken,
		"LEADPIPE_SECRET_KEY":         "ZmF1bHRzLWtleS1mYXVsdHMta2V5LWZhdWx0cy0zMmI=",
		"LEADPIPE_WORKER":             "off",
		"LEADPIPE_LOG_LEVEL":          "warn",
	}, t.TempDir())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log tail:\n%s", server.tail(30))
		}
	})
	server.start(t)
	waitReady(t, s.base, 90*time.Second)
	h := s.newTenant("replica")

	create := func(name string) string {
		var l struct {
			ID string `json:"id"`
		}
		r := s.do("POST", "/api/v1/leads", h.token, map[string]string{"name": name, "email": strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@replica.test"},
			map[string]string{"Idempotency-Key": "create-" + name})
		if r.status != 201 {
			t.Fatalf("POST lead: %d %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &l); err != nil || l.ID == "" {
			t.Fatalf("POST lead: %s", r.body)
		}
		return l.ID
	}
	onReplica := func(id string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			var n int
			if err := rep.Get(&n, "SELECT COUNT(*) FROM "+dbName+".leads WHERE id = ?", id); err == nil && n == 1 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("lead %s never reached the replica", id)
	}
	// listNames: the lead list's names by id (the API's list).
	listNames := func() map[string]string {
		t.Helper()
		r := s.do("GET", "/api/v1/leads?limit=100", h.token, nil, nil)
		if r.status != 200 {
			t.Fatalf("GET /api/v1/leads: %d %s", r.status, r.body)
		}
		var page struct {
			Items []struct {
				ID, Name string
			} `json:"items"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, it := range page.Items {
			out[it.ID] = it.Name
		}
		return out
	}
	getLead := func(id string) (name, status, etag string) {
		t.Helper()
		r := s.do("GET", "/api/v1/leads/"+id, h.token, nil, nil)
		if r.status != 200 {
			t.Fatalf("GET lead: %d %s", r.status, r.body)
		}
		var l struct{ Name, Status string }
		_ = json.Unmarshal(r.body, &l)
		return l.Name, l.Status, r.header.Get("ETag")
	}
	// Waits out the read router's health cache (one second).
	settle := func() { time.Sleep(1500 * time.Millisecond) }

	// A marker only the replica holds tells where the list was read.
	marker := create("Marker Lead")
	patched := create("Patched Lead")
	keep, gone := create("Keep Lead"), create("Gone Lead")
	onReplica(marker)
	onReplica(patched)
	onReplica(keep)
	onReplica(gone)
	// Rows only the replica holds: the marker renamed and won (list,
	// export, report), and a minute of 777 deliveries two hours ago on
	// the source's chart.
	if _, err := rep.Exec("UPDATE "+dbName+".leads SET name = 'Only on the replica', status = 'won' WHERE id = ?", marker); err != nil {
		t.Fatal(err)
	}
	if _, err := rep.Exec("INSERT INTO "+dbName+".source_stats_minute (tenant_id, source_id, bucket, deliveries) VALUES (?, ?, ?, 777)",
		h.tenantID, h.sourceID, time.Now().UTC().Add(-2*time.Hour).Truncate(time.Minute)); err != nil {
		t.Fatal(err)
	}
	ui := s.uiLogin("admin@replica.test", "faults-password-123")
	// where tells, for each read that tolerates lag, which server
	// answered it: "replica" or "primary" (every answer must be 200).
	where := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		from := func(onReplica bool) string {
			if onReplica {
				return "replica"
			}
			return "primary"
		}
		out["list"] = from(listNames()[marker] == "Only on the replica")
		r := s.do("GET", "/api/v1/leads/export.csv", h.token, nil, nil)
		if r.status != 200 {
			t.Fatalf("GET export.csv: %d %s", r.status, r.body)
		}
		out["export"] = from(bytes.Contains(r.body, []byte("Only on the replica")))
		r = s.do("GET", "/api/v1/sources/"+h.sourceID+"/stats", h.token, nil, nil)
		if r.status != 200 {
			t.Fatalf("GET stats: %d %s", r.status, r.body)
		}
		var st struct {
			Buckets []struct {
				Deliveries int64 `json:"deliveries"`
			} `json:"buckets"`
		}
		if err := json.Unmarshal(r.body, &st); err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, b := range st.Buckets {
			sum += b.Deliveries
		}
		out["chart"] = from(sum >= 777)
		status, body := ui.get("/reports/sources?format=csv")
		if status != 200 {
			t.Fatalf("GET /reports/sources?format=csv: %d %s", status, body)
		}
		recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
		if err != nil || len(recs) < 2 {
			t.Fatalf("report csv: %v %q", err, body)
		}
		won := false // only the replica has a won lead
		for _, rec := range recs[1:] {
			won = won || rec[10] == "1"
		}
		out["report"] = from(won)
		return out
	}
	all := func(want string) {
		t.Helper()
		got := where()
		for _, k := range []string{"list", "export", "chart", "report"} {
			if got[k] != want {
				t.Fatalf("the %s was read from the %s, want the %s (%v)", k, got[k], want, got)
			}
		}
	}
	settle()
	all("replica")
	if name, _, _ := getLead(marker); name != "Marker Lead" {
		t.Fatalf("a lead's own page read %q, not the primary's row", name)
	}
	t.Logf("replicating: list, export, chart and report read the replica, a lead's page the primary")

	// Lag: the SQL thread stopped. A PATCH is read back at once (primary);
	// the list leaves the replica, which no longer replicates.
	if _, err := rep.Exec("STOP SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	_, _, etag := getLead(patched)
	if r := s.do("PATCH", "/api/v1/leads/"+patched, h.token, map[string]string{"status": "qualified"}, map[string]string{"If-Match": etag}); r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	if _, status, _ := getLead(patched); status != "qualified" {
		t.Fatalf("after its PATCH the lead reads status %q", status)
	}
	var onRep string
	if err := rep.Get(&onRep, "SELECT status FROM "+dbName+".leads WHERE id = ?", patched); err != nil || onRep == "qualified" {
		t.Fatalf("the stopped replica has status %q (%v): it should lag", onRep, err)
	}
	// A merge read back at once: the surviving lead's new version.
	_, _, etag = getLead(keep)
	mr := s.do("POST", "/api/v1/leads/"+keep+"/merge", h.token, map[string]any{"others": []string{gone}},
		map[string]string{"If-Match": etag, "Idempotency-Key": "merge-replica"})
	if mr.status != 200 {
		t.Fatalf("merge: %d %s", mr.status, mr.body)
	}
	if _, _, after := getLead(keep); after != mr.header.Get("ETag") || after == etag {
		t.Fatalf("after its merge the lead reads ETag %s, the merge answered %s (before %s)", after, mr.header.Get("ETag"), etag)
	}
	// An import's progress: the import exists only on the primary.
	imp := s.importCSV(h.token, "name,email\nImported One,imported.one@replica.test\n")
	if r := s.do("GET", "/api/v1/imports/"+imp, h.token, nil, nil); r.status != 200 {
		t.Fatalf("GET /api/v1/imports/%s with the replica lagging: %d %s", imp, r.status, r.body)
	}
	var n int
	if err := rep.Get(&n, "SELECT COUNT(*) FROM "+dbName+".imports WHERE id = ?", imp); err != nil || n != 0 {
		t.Fatalf("the stopped replica holds the import (%d, %v): it should lag", n, err)
	}
	fresh := create("Fresh Lead")
	settle()
	names := listNames()
	if names[marker] != "Marker Lead" || names[fresh] != "Fresh Lead" {
		t.Fatalf("with the replica's SQL thread stopped the list should read the primary: %v", names)
	}
	all("primary")
	t.Logf("lagging (SQL thread stopped): the PATCH, the merge and the import's progress are read back from the primary; list, export, chart and report fall back to it")

	if _, err := rep.Exec("START SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	onReplica(fresh)
	settle()
	all("replica")

	// The replica killed: the list answers 200 from the primary, at once
	// (the failed query is re-run there) and afterwards.
	replica.signal(syscall.SIGKILL)
	for i := 0; i < 3; i++ {
		names = listNames()
		if names[marker] != "Marker Lead" || names[fresh] != "Fresh Lead" {
			t.Fatalf("with the replica down the list should read the primary: %v", names)
		}
		all("primary")
		time.Sleep(700 * time.Millisecond)
	}
	t.Logf("replica killed: list, export, chart and report answer 200 from the primary")
}

// importCSV posts a CSV import and returns its id.
func (s *suite) importCSV(token, body string) string {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/api/v1/imports?filename=replica.csv", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "text/csv")
	req.Header.Set("Idempotency-Key", "import-replica")
	res, err := client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v struct {
		ID string `json:"id"`
	}
	if res.StatusCode != http.StatusAccepted || json.Unmarshal(b, &v) != nil || v.ID == "" {
		s.t.Fatalf("POST /api/v1/imports: %d %s", res.StatusCode, b)
	}
	return v.ID
}

// uiSession is a signed-in browser session (a cookie jar).
type uiSession struct {
	s *suite
	c *http.Client
}

func (s *suite) uiLogin(email, password string) *uiSession {
	s.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(url.Values{"email": {email}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.base)
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("login %s: %d", email, res.StatusCode)
	}
	return &uiSession{s: s, c: c}
}

func (u *uiSession) get(path string) (int, []byte) {
	u.s.t.Helper()
	res, err := u.c.Get(u.s.base + path)
	if err != nil {
		u.s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}
