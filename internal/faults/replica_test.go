//go:build faults && galera

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/redistest"
)

// TestReadReplica: the real server with LEADPIPE_MYSQL_READ_DSN on a
// private MariaDB replica (GTID replication from a private primary). The
// lead list reads the replica, a lead's own page (after its PATCH) the
// primary; a replica that stops replicating (SQL thread stopped) and one
// that is killed leave the list on the primary, answered 200.
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
	onReplica(marker)
	onReplica(patched)
	if _, err := rep.Exec("UPDATE "+dbName+".leads SET name = 'Only on the replica' WHERE id = ?", marker); err != nil {
		t.Fatal(err)
	}
	settle()
	if got := listNames()[marker]; got != "Only on the replica" {
		t.Fatalf("the list was not read from the replica: marker is %q", got)
	}
	if name, _, _ := getLead(marker); name != "Marker Lead" {
		t.Fatalf("a lead's own page read %q, not the primary's row", name)
	}
	t.Logf("replicating: the list reads the replica, a lead's page the primary")

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
	fresh := create("Fresh Lead")
	settle()
	names := listNames()
	if names[marker] != "Marker Lead" || names[fresh] != "Fresh Lead" {
		t.Fatalf("with the replica's SQL thread stopped the list should read the primary: %v", names)
	}
	t.Logf("lagging (SQL thread stopped): the PATCH is read back from the primary, the list falls back to it")

	if _, err := rep.Exec("START SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	onReplica(fresh)
	settle()
	if got := listNames()[marker]; got != "Only on the replica" {
		t.Fatalf("replicating again, the list should read the replica: marker %q", got)
	}

	// The replica killed: the list answers 200 from the primary, at once
	// (the failed query is re-run there) and afterwards.
	replica.signal(syscall.SIGKILL)
	for i := 0; i < 3; i++ {
		names = listNames()
		if names[marker] != "Marker Lead" || names[fresh] != "Fresh Lead" {
			t.Fatalf("with the replica down the list should read the primary: %v", names)
		}
		time.Sleep(700 * time.Millisecond)
	}
	t.Logf("replica killed: the list answers 200 from the primary")
}
