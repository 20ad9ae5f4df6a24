package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// MariaDB runs one thread per connection (thread_handling
// one-thread-per-connection, the default), and information_schema's
// PROCESSLIST names each connection's thread (TID). The CPU of the threads
// serving connections to this run's scratch database is then the
// statements' own cost, whatever other clients of a shared server do at
// the same time; what it leaves out is InnoDB's background work (purge,
// the log writer, page flushing), which no client can be charged with.
// On a busy shared machine this is the steadier measure of MariaDB's
// share (the whole process's CPU less an idle second's moves with the
// other clients' load).

// dbThreads is a snapshot of MariaDB's threads: each thread's CPU, and
// which of them serve the scratch database.
type dbThreads struct {
	cpu  map[string]time.Duration // tid → on-CPU time
	ours map[string]bool
}

// mariaPID is the MariaDB process of this run ("" when not local).
func mariaPID() string {
	for _, s := range servers {
		if s.name == "mariadbd" {
			return s.pid()
		}
	}
	return ""
}

// snapshotThreads reads the threads of MariaDB and which serve the scratch
// database (the connection that asks, the harness's, left out). ok is
// false when it cannot tell (not local, no TID column, no /proc).
func snapshotThreads(ctx context.Context, raw sqlx.QueryerContext) (dbThreads, bool) {
	pid := mariaPID()
	if pid == "" {
		return dbThreads{}, false
	}
	var tids []int64
	if err := sqlx.SelectContext(ctx, raw, &tids, `SELECT TID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`); err != nil {
		return dbThreads{}, false
	}
	t := dbThreads{cpu: map[string]time.Duration{}, ours: map[string]bool{}}
	for _, id := range tids {
		t.ours[strconv.FormatInt(id, 10)] = true
	}
	entries, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
	if err != nil {
		return dbThreads{}, false
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join("/proc", pid, "task", e.Name(), "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				t.cpu[e.Name()] = time.Duration(ns)
			}
		}
	}
	return t, true
}

// ourCPU is the CPU the threads serving the scratch database at either
// snapshot used between them.
func ourCPU(before, after dbThreads) time.Duration {
	var sum time.Duration
	seen := map[string]bool{}
	for _, set := range []map[string]bool{before.ours, after.ours} {
		for tid := range set {
			if seen[tid] {
				continue
			}
			seen[tid] = true
			if a, ok := after.cpu[tid]; ok {
				sum += max(0, a-before.cpu[tid])
			}
		}
	}
	return sum
}

// harnessThread returns a function reading the CPU used so far by the
// MariaDB thread serving conn (0 when it cannot tell).
func harnessThread(ctx context.Context, conn sqlx.QueryerContext) func() time.Duration {
	pid := mariaPID()
	var tid int64
	if pid == "" || sqlx.GetContext(ctx, conn, &tid, `SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()`) != nil {
		return func() time.Duration { return 0 }
	}
	path := filepath.Join("/proc", pid, "task", strconv.FormatInt(tid, 10), "schedstat")
	return func() time.Duration {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		return time.Duration(ns)
	}
}
