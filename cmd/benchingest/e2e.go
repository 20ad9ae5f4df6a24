package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/config"
	"leadpipe/internal/db"
	"leadpipe/internal/jobs"
)

// e2eOptions are the -e2e mode's settings.
type e2eOptions struct {
	benchDSN, redisAddr string
	redisDB             int
	conns               int           // closed-loop senders of the maximum, connections of the baseline
	d                   time.Duration // the fixed-rate phase (the baseline runs d/2)
	probe               time.Duration // the maximum's measurement
	fraction            float64       // of the maximum, for the fixed-rate phase
	backlog             int           // deliveries of the drain
	dupN                int           // deliveries of (e), sent new and then again
	rate                float64       // (d)'s rate instead of fraction × the maximum
	workerArgs          []string      // more cmd/worker arguments
	phases              string        // which of a..e run
	workerOff           bool          // without (a) and (b): never start the worker (the acknowledgement's floor)
	serverEnv           []string      // more KEY=VALUE for the server process (e.g. GOGC=400)
	workerEnv           []string      // the same for the worker process
	workerConc          int
	workerNice          int // the worker's nice value above the server's (0: the same priority)
	logLevel            string
	samples             int    // (d)'s deliveries per second followed until readable
	profile             string // a directory: the processes are built with -tags pprof and profiled during (d)
}

// runE2E measures Leadpipe end to end with the server (LEADPIPE_WORKER=off)
// and cmd/worker as separate processes, built from this module, on a
// scratch database:
//
//	(a) raw single-row ODKU into the real leads table (the baseline);
//	(b) the worker's drain of a stored backlog, as a ratio to (a);
//	(c) the maximum acknowledged rate: closed-loop senders, worker running;
//	(d) signed deliveries at a fixed fraction of (c), open loop: acknowledged
//	    and leads per second, acknowledgement latency, acknowledgement →
//	    lead readable through the API for a sample, and CPU per lead of
//	    each process.
func runE2E(ctx context.Context, o e2eOptions) error {
	dir, err := os.MkdirTemp("", "lp-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	serverBin, workerBin, err := buildBinaries(ctx, dir, o.profile != "")
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	const adminToken = "benchingest-e2e-admin-token"
	env := map[string]string{
		"LEADPIPE_ADDR": addr, "LEADPIPE_WORKER_ADDR": "127.0.0.1:0", // the worker's listener is not called "LEADPIPE_BASE_URL": base,
		"LEADPIPE_MYSQL_DSN": o.benchDSN, "LEADPIPE_REDIS_ADDR": o.redisAddr, "LEADPIPE_REDIS_DB": fmt.Sprint(o.redisDB),
		"LEADPIPE_SECRET_KEY": "YmVuY2gta2V5LWJlbmNoLWtleS1iZW5jaC1rZXktMzI=", "LEADPIPE_ADMIN_TOKEN": adminToken,
		"LEADPIPE_WORKER": "off", "LEADPIPE_LOG_LEVEL": o.logLevel,
	}
	serverEnv, workerEnv := withVars(env, o.serverEnv), withVars(env, o.workerEnv)
	var profiled []profiledProc
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
		for _, e := range []struct {
			name string
			env  map[string]string
		}{{"server", serverEnv}, {"worker", workerEnv}} {
			a, err := freeAddr()
			if err != nil {
				return err
			}
			e.env["LEADPIPE_PPROF_ADDR"] = a
			profiled = append(profiled, profiledProc{e.name, a})
		}
	}
	server := &child{name: "server", bin: serverBin, env: serverEnv, log: filepath.Join(dir, "server.log")}
	worker := &child{name: "worker", bin: workerBin, args: append([]string{"-concurrency", fmt.Sprint(o.workerConc)}, o.workerArgs...), env: workerEnv,
		log: filepath.Join(dir, "worker.log")}
	if o.workerNice > 0 { // nice(1) execs the worker: same pid
		// The kernel's getpriority is 20 - nice; nice stops at 19.
		if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0); err == nil && 20-prio+o.workerNice > 19 {
			fmt.Fprintf(os.Stderr, "benchingest: running at nice %d, the worker cannot go %d lower than the server\n", 20-prio, o.workerNice)
		}
		worker.bin, worker.args = "nice", append([]string{"-n", fmt.Sprint(o.workerNice), workerBin}, worker.args...)
	}
	defer server.stop()
	defer worker.stop()
	if err := server.start(); err != nil {
		return err
	}
	if err := waitReady(base+"/readyz", 90*time.Second); err != nil {
		return fmt.Errorf("server: %w\n%s", err, server.tail(20))
	}
	api := &apiClient{base: base, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var ten struct {
		ID    string `json:"id"`
		Token string `json:"api_token"`
	}
	if err := api.call(ctx, "POST", "/api/admin/v1/tenants", adminToken, map[string]string{"slug": "bench", "name": "Bench",
		"admin_email": "bench@bench.test", "admin_password": "bench-password-1"}, &ten); err != nil {
		return err
	}
	api.token = ten.Token
	var src struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if err := api.call(ctx, "POST", "/api/v1/sources", ten.Token, map[string]string{"slug": "landing", "name": "Landing", "kind": "standard"}, &src); err != nil {
		return err
	}

	raw, err := db.Open(ctx, o.benchDSN)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(o.conns)
	raw.SetMaxIdleConns(o.conns)
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	queue := asynq.NewClient(jobs.RedisConnOpt(cfg.Redis))
	defer queue.Close()
	procs := []watched{{"server", server.pid}, {"worker", worker.pid}}

	fmt.Printf("end to end: server (LEADPIPE_WORKER=off) and worker (-concurrency %d, nice +%d) as separate processes, log level %s\n", o.workerConc, o.workerNice, o.logLevel)
	// (a) and (b): the baseline, then the backlog's drain by the worker
	// process started for it.
	host, path := addr, "/hooks/bench/landing"
	dr := drain{raw: raw, queue: queue, tenantID: ten.ID, sourceID: src.ID, n: o.backlog, conns: o.conns, d: o.d / 2,
		startWorker: worker.start, procs: procs, settle: func() { settleMariaDB(ctx, raw, 2*time.Minute) }, fill: func(ctx context.Context, n int) (time.Duration, error) {
			f := newFeed(src.Secret, host, path, 0, 1_000_000_000)
			if err := f.ensure(0, n); err != nil {
				return 0, err
			}
			return sendN(f.at, host, o.conns, n)
		}}
	has := func(p rune) bool { return strings.ContainsRune(o.phases, p) }
	var res drainResult
	if has('a') || has('b') {
		if res, err = dr.run(ctx); err != nil {
			return fmt.Errorf("%w\n%s", err, worker.tail(20))
		}
		res.print(o.conns, o.workerConc, o.d/2)
	} else if !o.workerOff {
		if err := worker.start(); err != nil {
			return err
		}
	}

	// (c) The maximum: closed-loop senders of new deliveries, the worker
	// running (as deployed), then the worker catches up.
	maxRate := math.NaN()
	if has('c') {
		// Settle first, then dial: the server closes a connection that sends
		// no request within its read-header timeout.
		settleMariaDB(ctx, raw, 2*time.Minute)
		probe := &phase{name: "max", feed: newFeed(src.Secret, host, path, 0, 2_000_000_000)}
		pool, err := dialPool(host, o.conns, false, "")
		if err != nil {
			return err
		}
		probe.fn = func() error {
			_, err := pool.send(probe.feed.at(probe.take()))
			return err
		}
		if err := probe.prepare(0, o.probe); err != nil {
			return err
		}
		m0, t0 := machineSnapshot(), time.Now()
		probe.run(o.conns, o.probe)
		machineC := machineSnapshot().since(m0, time.Since(t0))
		maxRate = probe.rate(o.probe.Seconds())
		fmt.Printf("(c) maximum acknowledged, %d closed-loop senders, worker running, %s: %.0f req/s  p50 %s  p99 %s\n",
			o.conns, o.probe, maxRate, pct(probe.lat, 50), pct(probe.lat, 99))
		fmt.Printf("    %s\n", machineC)
		if err := waitProcessed(ctx, raw, ten.ID, 10*time.Minute); err != nil {
			return err
		}
	}

	// (d) The fixed rate.
	rate := o.fraction * maxRate
	if o.rate > 0 { // a fixed rate, to compare builds at the same load
		rate = o.rate
	}
	var st steadyResult
	if has('d') {
		if math.IsNaN(rate) {
			return errors.New("(d) needs (c) or -rate")
		}
		settleMariaDB(ctx, raw, 2*time.Minute)
		if st, err = steady(ctx, steadyRun{api: api, raw: raw, tenantID: ten.ID, sourceID: src.ID,
			feed: newFeed(src.Secret, host, path, 0, 3_000_000_000), host: host, rate: rate, d: o.d, procs: procs, noWorker: o.workerOff,
			profile: o.profile, profiled: profiled, samples: o.samples, syncDir: syncDirFor(ctx, raw)}); err != nil {
			return fmt.Errorf("%w\nserver:\n%s\nworker:\n%s", err, server.tail(10), worker.tail(10))
		}
		st.print(o, rate, maxRate)
	}
	// (e) What a duplicate costs against a new delivery.
	if has('e') {
		settleMariaDB(ctx, raw, 2*time.Minute)
		dc, err := dupCost(ctx, raw, ten.ID, newFeed(src.Secret, host, path, 0, 4_000_000_000), host, o.conns, o.dupN, procs, o.workerOff,
			o.profile, profiled)
		if err != nil {
			return err
		}
		dc.print()
	}
	if o.phases == "abcde" {
		fmt.Printf("targets: drain %.2f× raw ODKU (≥ 0.80) %s; ack p99 %s (≤ 25ms) %s; ack → readable p99 %s (≤ 1s) %s\n",
			res.ratio(o.d/2), verdict(res.ratio(o.d/2) >= 0.8),
			pct(st.ackLat, 99), verdict(pct(st.ackLat, 99) <= 25*time.Millisecond),
			pct(st.readLat, 99), verdict(st.readTimeouts == 0 && pct(st.readLat, 99) <= time.Second))
	}
	for _, c := range []*child{server, worker} {
		if n, first := c.problems(3); n > 0 {
			fmt.Printf("%s logged %d warnings or errors, the first:\n%s\n", c.name, n, first)
		}
	}
	return nil
}

func (st steadyResult) print(o e2eOptions, rate, maxRate float64) {
	fmt.Printf("(d) at %.2f × the maximum = %.0f req/s for %s, open loop (latency from each request's scheduled time):\n", rate/maxRate, rate, o.d)
	fmt.Printf("    acknowledged %.0f/s (%d, %d errors), leads %.0f/s while sending; the last lead %s after the last acknowledgement\n",
		float64(st.acked)/o.d.Seconds(), st.acked, st.errors, st.leadsPerSec, st.tail.Round(time.Millisecond))
	fmt.Printf("    acknowledgement p50 %s  p99 %s (target p99 ≤ 25ms)\n", pct(st.ackLat, 50), pct(st.ackLat, 99))
	fmt.Printf("    acknowledgement → lead readable through the API (GET /api/v1/leads?q=<email>, polled every %s), %d samples: p50 %s  p99 %s  max %s (target p99 ≤ 1s)%s\n",
		pollEvery, len(st.readLat), pct(st.readLat, 50), pct(st.readLat, 99), pct(st.readLat, 100), timeoutNote(st.readTimeouts))
	fmt.Printf("    %s\n", congestion(st.ackAt, congestionWindow, 25*time.Millisecond))
	if c := stallCauses(st.ackAt, st.windows, st.syncs, congestionWindow, 25*time.Millisecond); c != "" {
		fmt.Printf("    %s\n", c)
	}
	fmt.Printf("    CPU per lead: %s\n", st.cpu)
	fmt.Printf("    while sending, %s\n", st.machine)
	if st.redo >= 0 {
		fmt.Printf("    InnoDB redo per lead: %d bytes (all of MariaDB, the API's reads included)\n", st.redo)
	}
}

// timedLat is one acknowledgement's latency and when it was due.
type timedLat struct{ at, lat time.Duration }

// congestion says how the acknowledgements over limit spread over the run:
// in windows of w, how many windows held any, and how many of them the
// worst windows held. Spread thinly, the p99 is queueing at this load;
// bunched into a few windows, something stalled (a flush, a pause).
func congestion(acks []timedLat, w, limit time.Duration) string {
	if len(acks) == 0 {
		return "no acknowledgements"
	}
	over, windows, worstWindows := slowWindows(acks, w, limit)
	total, worst := 0, 0
	for _, n := range over {
		total += n
	}
	var at []string
	for i, wi := range worstWindows {
		worst += over[wi]
		if i < 3 {
			at = append(at, fmt.Sprintf("%s (%d)", time.Duration(wi)*w, over[wi]))
		}
	}
	share := 0.0
	if total > 0 {
		share = 100 * float64(worst) / float64(total)
	}
	out := fmt.Sprintf("acknowledgements over %s: %d (%.1f %%), in %d of %d windows of %s; the worst tenth of the windows held %.0f %% of them",
		limit, total, 100*float64(total)/float64(len(acks)), len(over), windows, w, share)
	if len(at) > 0 {
		out += "; the worst began at " + strings.Join(at, ", ")
	}
	return out
}

// slowWindows counts the acknowledgements over limit in each window of w
// (by when they were due), and names the worst tenth of the windows
// (at least one) that held any, worst first.
func slowWindows(acks []timedLat, w, limit time.Duration) (over map[int]int, windows int, worst []int) {
	over = map[int]int{}
	for _, a := range acks {
		windows = max(windows, int(a.at/w)+1)
		if a.lat > limit {
			over[int(a.at/w)]++
		}
	}
	byCount := slices.Collect(maps.Keys(over))
	slices.SortFunc(byCount, func(a, b int) int { return cmp.Or(over[b]-over[a], a-b) })
	return over, windows, byCount[:min(len(byCount), max(1, windows/10))]
}

// windowSample is the machine, each watched process's CPU time and
// MariaDB's counters at the start of a window of (d) (sample i at start +
// i × the window).
type windowSample struct {
	m     machine
	procs cpu // each process's CPU time (cpuSnapshot)
	// MariaDB's global counters (windowCounters; -1 unknown).
	c [len(windowCounters)]int64
}

// windowCounters are MariaDB's status counters sampled per window: its
// fsyncs (fewer where each took longer), the pages its page cleaner wrote
// back, and the row lock waits.
var windowCounters = [...]string{"Innodb_data_fsyncs", "Innodb_buffer_pool_pages_flushed", "Innodb_row_lock_waits"}

// statusCounters reads windowCounters in one statement.
func statusCounters(ctx context.Context, raw *sqlx.DB) (out [len(windowCounters)]int64) {
	for i := range out {
		out[i] = -1
	}
	q, args, err := sqlx.In(`SHOW GLOBAL STATUS WHERE Variable_name IN (?)`, windowCounters[:])
	if err != nil {
		return out
	}
	rows, err := raw.QueryContext(ctx, q, args...)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if rows.Scan(&name, &v) != nil {
			continue
		}
		for i, c := range windowCounters {
			if strings.EqualFold(c, name) {
				out[i] = v
			}
		}
	}
	return out
}

// sampleWindows takes a windowSample at start and every w after it until
// stop is closed; the samples are in the returned channel's one value.
func sampleWindows(ctx context.Context, raw *sqlx.DB, procs []watched, start time.Time, w time.Duration, stop <-chan struct{}) <-chan []windowSample {
	out := make(chan []windowSample, 1)
	go func() {
		var samples []windowSample
		for i := 0; ; i++ {
			select {
			case <-stop:
				out <- samples
				return
			case <-time.After(time.Until(start.Add(time.Duration(i) * w))):
			}
			samples = append(samples, windowSample{m: machineSnapshot(), procs: cpuSnapshot(procs...), c: statusCounters(ctx, raw)})
		}
	}()
	return out
}

// syncProbe writes 4 KiB and fdatasyncs it every `every`, in a file of
// dir (the filesystem MariaDB's redo log is on), until stop is closed: how
// long the disk takes to make a write durable, each by when it began
// (since start). A commit waits for at least one of these.
func syncProbe(dir string, start time.Time, every time.Duration, stop <-chan struct{}) <-chan []timedLat {
	out := make(chan []timedLat, 1)
	go func() {
		var lats []timedLat
		defer func() { out <- lats }()
		if dir == "" { // MariaDB's files are not on this machine
			<-stop
			return
		}
		f, err := os.CreateTemp(dir, "benchingest-sync-*")
		if err != nil {
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		buf := make([]byte, 4096)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			t0 := time.Now()
			if _, err := f.WriteAt(buf, 0); err != nil {
				return
			}
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				return
			}
			lats = append(lats, timedLat{at: t0.Sub(start), lat: time.Since(t0)})
		}
	}()
	return out
}

// stallCauses compares the worst tenth of the windows (as congestion
// names them) with the other windows: cores busy, the share of time the
// hypervisor gave to other guests, and MariaDB's counters per window
// (windowCounters). A CPU queue shows as busy cores, a slow disk as fewer
// fsyncs, a descheduled machine as steal, InnoDB writing back as pages
// flushed, a lock held across a commit as lock waits.
func stallCauses(acks []timedLat, samples []windowSample, syncs []timedLat, w, limit time.Duration) string {
	over, windows, worstWindows := slowWindows(acks, w, limit)
	if len(over) == 0 || len(samples) < 2 {
		return ""
	}
	isWorst := map[int]bool{}
	for _, wi := range worstWindows {
		isWorst[wi] = true
	}
	type agg struct {
		m     machine
		procs cpu
		c     [len(windowCounters)]int64
		n     int
		syncs []time.Duration
	}
	worst, rest := agg{procs: cpu{}}, agg{procs: cpu{}}
	for i := 0; i+1 < len(samples) && i < windows; i++ {
		a, b := samples[i], samples[i+1]
		g := &rest
		if isWorst[i] {
			g = &worst
		}
		g.m = g.m.plus(b.m.minus(a.m))
		for name, t := range b.procs {
			g.procs[name] += t - a.procs[name]
		}
		for k := range g.c {
			if a.c[k] < 0 || b.c[k] < 0 || g.c[k] < 0 {
				g.c[k] = -1
				continue
			}
			g.c[k] += b.c[k] - a.c[k]
		}
		g.n++
	}
	for _, p := range syncs {
		if i := int(p.at / w); i < windows {
			if isWorst[i] {
				worst.syncs = append(worst.syncs, p.lat)
			} else {
				rest.syncs = append(rest.syncs, p.lat)
			}
		}
	}
	describe := func(g agg) string {
		if g.n == 0 {
			return "none"
		}
		slices.Sort(g.syncs)
		all := g.m.busy + g.m.idle + g.m.steal
		if all <= 0 {
			return "n/a"
		}
		per := func(k int) string {
			if g.c[k] < 0 {
				return "?"
			}
			return fmt.Sprintf("%.0f", float64(g.c[k])/float64(g.n))
		}
		span := w.Seconds() * float64(g.n)
		var procs []string
		var sum time.Duration
		for _, name := range cpuOrder {
			if t, ok := g.procs[name]; ok {
				procs = append(procs, fmt.Sprintf("%s %.2f", name, t.Seconds()/span))
				sum += t
			}
		}
		if len(procs) > 0 {
			// Interrupts, kernel threads (block I/O completion, say) and
			// every other process: busy time no watched process was
			// charged with.
			procs = append(procs, fmt.Sprintf("the rest %.2f", (g.m.busy-sum).Seconds()/span))
		}
		out := fmt.Sprintf("%.2f cores busy", g.m.busy.Seconds()/span)
		if len(procs) > 0 {
			out += " (" + strings.Join(procs, ", ") + ")"
		}
		out += fmt.Sprintf(", %.1f %% stolen; per window %s fsyncs, %s pages written back, %s row lock waits",
			100*g.m.steal.Seconds()/all.Seconds(), per(0), per(1), per(2))
		if len(g.syncs) > 0 {
			out += fmt.Sprintf("; a 4 KiB write + fdatasync beside MariaDB's files took %s (p50), %s (max)",
				pct(g.syncs, 50).Round(10*time.Microsecond), pct(g.syncs, 100).Round(10*time.Microsecond))
		}
		return out
	}
	return fmt.Sprintf("the worst tenth of the windows: %s; the other windows: %s", describe(worst), describe(rest))
}

// dupCostResult is the CPU of each process per new delivery and per
// duplicate, each kind sent alone.
type dupCostResult struct {
	n                int
	ingestOnly       bool          // no worker: the acknowledgement alone
	background       time.Duration // MariaDB's CPU per second from other clients, taken off (ingest only)
	newTook, dupTook time.Duration
	newCPU, dupCPU   map[string]time.Duration
	// floorCPU (ingest only): the same requests' bytes sent as GET
	// /healthz, answered by the same server through the same middleware
	// without the webhook's work: what any request costs here.
	floorTook time.Duration
	floorCPU  map[string]time.Duration
}

// system is the CPU of the product's processes (the load generator's apart).
func system(m map[string]time.Duration) time.Duration {
	return m["server"] + m["worker"] + m["mariadbd"] + m["redis-server"]
}

// dupCost sends n new deliveries from conns closed-loop senders and holds
// the window open until the worker has made every lead (a new delivery's
// cost is its lead too), then the same n again, all duplicates, and holds
// the window until the leads' times_seen has them (the sightings flush
// within half a second). The load generator's own CPU is left out: it
// runs in this process, the server and the worker in theirs.
//
// With ingestOnly (-worker-off) no worker runs: a new delivery's cost is
// its acknowledgement alone (the claim), a duplicate's its answer and its
// count's flush, the server and MariaDB compared.
//
// With a profile directory the processes' CPU profiles of the duplicates'
// first 3 s are written into it as dup-<process>.pprof.
func dupCost(ctx context.Context, raw *sqlx.DB, tenantID string, f *feed, host string, conns, n int, procs []watched, ingestOnly bool,
	profileDir string, profiled []profiledProc) (dupCostResult, error) {
	out := dupCostResult{n: n, ingestOnly: ingestOnly}
	// The harness's own queries (the polls below, the thread snapshots)
	// run on one connection whose thread's CPU is taken off MariaDB's:
	// a duplicate's window held for its count polls every 200 ms, and
	// those scans are the harness's cost, not the duplicates'.
	hc, err := raw.Connx(ctx)
	if err != nil {
		return out, err
	}
	defer hc.Close()
	harness := harnessThread(ctx, hc)
	settle := func(cond func() (bool, error)) error {
		for limit := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			ok, err := cond()
			if err != nil || ok {
				return err
			}
			if time.Now().After(limit) {
				return errors.New("(e): the worker did not catch up within 5 minutes")
			}
		}
	}
	received := func() (bool, error) {
		var left int
		err := hc.GetContext(ctx, &left, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'received'`, tenantID)
		return left == 0, err
	}
	// With the worker: the window ends when the worker has folded every
	// duplicate's count into deliveries, and the sightings flush after it.
	hold := func() error {
		err := settle(func() (bool, error) {
			var dups int
			err := hc.GetContext(ctx, &dups, `SELECT IF(EXISTS (SELECT 1 FROM delivery_dup_log WHERE tenant_id = ?), -1,
				(SELECT IFNULL(SUM(dup_count), 0) FROM deliveries WHERE tenant_id = ?))`, tenantID, tenantID)
			return dups >= n, err
		})
		time.Sleep(1500 * time.Millisecond) // the sightings flush
		return err
	}
	if ingestOnly {
		received = func() (bool, error) { return true, nil }
	}
	if err := settle(received); err != nil { // what earlier phases left
		return out, err
	}
	if err := f.ensure(0, n); err != nil {
		return out, err
	}
	measure := func(send func() (time.Duration, error), wait func() error) (time.Duration, map[string]time.Duration, error) {
		// MariaDB is shared with other clients on this machine: its CPU
		// over a quiet second before the window is their share, taken off
		// the window's at the same rate (ingest only, where MariaDB's part
		// is small enough for it to matter).
		var idle time.Duration
		if ingestOnly {
			b0 := cpuSnapshot(procs...)
			time.Sleep(time.Second)
			idle = cpuSnapshot(procs...)["mariadbd"] - b0["mariadbd"]
		}
		th0, thOK := snapshotThreads(ctx, hc)
		h0 := harness()
		before, t0 := cpuSnapshot(procs...), time.Now()
		took, err := send()
		if err != nil {
			return 0, nil, err
		}
		if err := wait(); err != nil {
			return 0, nil, err
		}
		after := cpuSnapshot(procs...)
		hq := min(harness()-h0, after["mariadbd"]-before["mariadbd"])
		after["mariadbd"] -= hq
		before["harness-queries"], after["harness-queries"] = 0, hq
		if th1, ok := snapshotThreads(ctx, hc); ok && thOK {
			// A pseudo process: the MariaDB threads of this database's
			// connections (mariathreads.go), per delivery below.
			before["mariadb-conns"], after["mariadb-conns"] = 0, ourCPU(th0, th1)
		}
		if ingestOnly {
			after["mariadbd"] -= min(time.Duration(float64(idle)*time.Since(t0).Seconds()), after["mariadbd"]-before["mariadbd"])
			out.background = max(out.background, idle)
		}
		each, _ := after.per(before, int64(n))
		return took, each, nil
	}
	if ingestOnly { // the duplicates' window ends when their counts are durable
		// A server logs the counts of the duplicates it answered from
		// memory (delivery_dup_log) and the worker, not running here,
		// folds them into deliveries: a count is durable in either, and
		// one statement reads both as of one moment.
		hold = func() error {
			return settle(func() (bool, error) {
				var dups int
				err := hc.GetContext(ctx, &dups, `SELECT (SELECT IFNULL(SUM(dup_count), 0) FROM deliveries WHERE tenant_id = ?)
					+ (SELECT IFNULL(SUM(dups), 0) FROM delivery_dup_log WHERE tenant_id = ?)`, tenantID, tenantID)
				return dups >= n, err
			})
		}
	}
	deliveries := func() (time.Duration, error) {
		if err := f.ensure(0, n); err != nil { // re-signs what has aged
			return 0, err
		}
		return sendN(f.at, host, conns, n)
	}
	if out.newTook, out.newCPU, err = measure(deliveries, func() error { return settle(received) }); err != nil {
		return out, err
	}
	var profiling sync.WaitGroup
	if profileDir != "" {
		dir := filepath.Join(profileDir, "dup")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return out, err
		}
		profileAll(dir, profiled, 4*time.Second, &profiling)
	}
	if out.dupTook, out.dupCPU, err = measure(deliveries, hold); err != nil {
		return out, err
	}
	profiling.Wait()
	if ingestOnly {
		floor := make([]*request, n)
		for i := range floor {
			floor[i] = f.at(i).asHealthz(f.path)
		}
		at := func(i int) *request { return floor[i] }
		if out.floorTook, out.floorCPU, err = measure(func() (time.Duration, error) { return sendN(at, host, conns, n) },
			func() error { return nil }); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (r dupCostResult) print() {
	line := func(m map[string]time.Duration) string {
		var parts []string
		for _, k := range cpuOrder {
			if v, ok := m[k]; ok {
				parts = append(parts, fmt.Sprintf("%s %s", k, v.Round(time.Microsecond)))
			}
		}
		return strings.Join(parts, ", ")
	}
	fmt.Printf("(e) %d new deliveries alone (%.0f req/s), the window held until the worker made their leads: CPU per new delivery %s (%s; self is the load generator)\n",
		r.n, float64(r.n)/r.newTook.Seconds(), system(r.newCPU).Round(time.Microsecond), line(r.newCPU))
	held := "the window held until the worker folded their counts, then 1.5 s for the sightings flush"
	if r.ingestOnly {
		held = "the window held until their counts were written"
	}
	fmt.Printf("    the same %d again, all duplicates (%.0f req/s), %s: CPU per duplicate %s (%s)\n",
		r.n, float64(r.n)/r.dupTook.Seconds(), held, system(r.dupCPU).Round(time.Microsecond), line(r.dupCPU))
	if r.ingestOnly {
		ing := func(m map[string]time.Duration) time.Duration { return m["server"] + m["mariadbd"] }
		fmt.Printf("    ingest only (no worker; the duplicates' window held until their counts were written; MariaDB's other clients, %.2f cores before the windows, and this harness's polls, %s per duplicate, taken off)\n",
			r.background.Seconds(), r.dupCPU["harness-queries"].Round(time.Microsecond))
		fmt.Printf("    ingest only: CPU per duplicate / per new delivery: %.2f for server + MariaDB (%s / %s; target ≤ 0.40), %.2f for the server process alone\n",
			float64(ing(r.dupCPU))/float64(max(ing(r.newCPU), 1)), ing(r.dupCPU).Round(time.Microsecond), ing(r.newCPU).Round(time.Microsecond),
			float64(r.dupCPU["server"])/float64(max(r.newCPU["server"], 1)))
		if r.floorCPU != nil {
			fl := r.floorCPU["server"]
			fmt.Printf("    the HTTP floor: the same %d requests' bytes as GET /healthz (%.0f req/s; same server, middleware and keep-alive connections, no webhook work): server %s per request, %.2f of a new delivery's server + MariaDB; a duplicate's server CPU above the floor %s\n",
				r.n, float64(r.n)/r.floorTook.Seconds(), fl.Round(time.Microsecond), float64(fl)/float64(max(ing(r.newCPU), 1)), (r.dupCPU["server"] - fl).Round(time.Microsecond))
		}
		if _, ok := r.dupCPU["mariadb-conns"]; ok {
			conn := func(m map[string]time.Duration) time.Duration { return m["server"] + m["mariadb-conns"] }
			fmt.Printf("    ingest only, MariaDB as the threads of this database's connections (no background work; steadier on a shared server): MariaDB %s / %s, %.2f for server + MariaDB (%s / %s)\n",
				r.dupCPU["mariadb-conns"].Round(time.Microsecond), r.newCPU["mariadb-conns"].Round(time.Microsecond),
				float64(conn(r.dupCPU))/float64(max(conn(r.newCPU), 1)), conn(r.dupCPU).Round(time.Microsecond), conn(r.newCPU).Round(time.Microsecond))
		}
		return
	}
	fmt.Printf("    CPU per duplicate / per new delivery: %.2f for server + worker + MariaDB + Redis (target ≤ 0.60), %.2f for the server process alone\n",
		float64(system(r.dupCPU))/float64(max(system(r.newCPU), 1)), float64(r.dupCPU["server"])/float64(max(r.newCPU["server"], 1)))
}

// sendN sends requests at(0)..at(n-1) from conns closed-loop senders and
// returns how long that took.
func sendN(at func(i int) *request, host string, conns, n int) (time.Duration, error) {
	p, err := dialPool(host, conns, false, "")
	if err != nil {
		return 0, err
	}
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	t0 := time.Now()
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if _, err := p.send(at(i)); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), first
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func timeoutNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d samples not readable within %s", n, readTimeout)
}

// steadyRun drives new signed deliveries at a fixed rate.
type steadyRun struct {
	api                *apiClient
	raw                *sqlx.DB
	tenantID, sourceID string
	feed               *feed
	host               string
	rate               float64
	d                  time.Duration
	procs              []watched
	noWorker           bool           // no worker runs: the acknowledgement alone
	samples            int            // deliveries per second followed until readable (0: none)
	profile            string         // a directory for the CPU profiles of the processes below
	profiled           []profiledProc // processes serving pprof
	syncDir            string         // where the fdatasync probe writes ("": no probe; see syncDirFor)
}

// withVars is env with the KEY=VALUE settings of kvs added (or replaced).
func withVars(env map[string]string, kvs []string) map[string]string {
	out := maps.Clone(env)
	for _, kv := range kvs {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// syncDirFor is a directory on the filesystem of MariaDB's data
// directory, for the fdatasync probe: the temporary directory when it is
// on the same device, else the data directory itself; "" when MariaDB's
// files are not on this machine.
func syncDirFor(ctx context.Context, raw *sqlx.DB) string {
	var datadir string
	if err := raw.GetContext(ctx, &datadir, `SELECT @@datadir`); err != nil {
		return ""
	}
	var data, tmp syscall.Stat_t
	if syscall.Stat(datadir, &data) != nil {
		return ""
	}
	if syscall.Stat(os.TempDir(), &tmp) == nil && tmp.Dev == data.Dev {
		return os.TempDir()
	}
	return datadir
}

// profiledProc is a process built with -tags pprof, serving it on addr.
type profiledProc struct{ name, addr string }

// profileAll fetches a CPU profile of d from each process into dir, and
// returns at once; wait for the WaitGroup before reading the files.
func profileAll(dir string, procs []profiledProc, d time.Duration, wg *sync.WaitGroup) {
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fetchProfile(filepath.Join(dir, p.name+".pprof"), p.addr, d); err != nil {
				fmt.Fprintf(os.Stderr, "profile of %s: %v\n", p.name, err)
			}
		}()
	}
}

func fetchProfile(file, addr string, d time.Duration) error {
	c := &http.Client{Timeout: d + 30*time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d.Seconds()))))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type steadyResult struct {
	acked, errors int
	ackLat        []time.Duration // sorted, from ackAt
	ackAt         []timedLat      // each acknowledgement's latency by when it was due
	readLat       []time.Duration
	readTimeouts  int
	leadsPerSec   float64
	tail          time.Duration
	cpu           string
	redo          int64  // bytes of InnoDB redo per lead (per request without the worker), -1 unknown
	machine       string // the whole machine while sending (machine.since)
	windows       []windowSample
	syncs         []timedLat // the fdatasync probe's (syncProbe)
}

// congestionWindow is the window (d) reports its slow acknowledgements in.
const congestionWindow = 250 * time.Millisecond

const (
	pollEvery   = 50 * time.Millisecond
	readTimeout = 30 * time.Second
)

// steady sends rate deliveries per second for d from a pool of
// connections, each at its scheduled time (a late request's latency counts
// from when it was due, so a stall is not hidden), follows a sample until
// each one's lead is readable through the API, then waits for the worker
// to finish what was sent.
func steady(ctx context.Context, r steadyRun) (steadyResult, error) {
	var out steadyResult
	total := int(r.rate * r.d.Seconds())
	if total < 1 {
		return out, errors.New("the fixed rate is below one request per run")
	}
	if err := r.feed.ensure(0, total); err != nil {
		return out, err
	}
	const conns = 64
	pool, err := dialPool(r.host, conns, false, "")
	if err != nil {
		return out, err
	}
	every := 0 // follow every every-th delivery (0: none)
	if r.samples > 0 && !r.noWorker {
		every = max(1, int(r.rate/float64(r.samples)))
	}
	before, err := processedCount(ctx, r.raw, r.tenantID)
	if err != nil {
		return out, err
	}
	cpu0, lsn0, m0 := cpuSnapshot(r.procs...), innodbLSN(ctx, r.raw), machineSnapshot()
	var profiling sync.WaitGroup
	defer profiling.Wait()
	if r.profile != "" {
		profileAll(r.profile, r.profiled, r.d, &profiling)
	}
	start := time.Now()
	stopSampling := make(chan struct{})
	sampled := sampleWindows(ctx, r.raw, r.procs, start, congestionWindow, stopSampling)
	synced := syncProbe(r.syncDir, start, 20*time.Millisecond, stopSampling)
	type due struct {
		i  int
		at time.Time
	}
	work := make(chan due, total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failures atomic.Int64
	follow := newFollower(r.api, r.sourceID)
	pollCtx, stopPolls := context.WithCancel(ctx)
	defer stopPolls()
	polled := make(chan struct{})
	go func() { defer close(polled); follow.run(pollCtx) }()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var acks []timedLat
			for d := range work {
				rq := r.feed.at(d.i)
				if _, err := pool.send(rq); err != nil {
					if failures.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "first error:", err)
					}
					continue
				}
				acked := time.Now()
				acks = append(acks, timedLat{at: d.at.Sub(start), lat: acked.Sub(d.at)})
				if every > 0 && d.i%every == 0 {
					follow.add(fmt.Sprintf("u%d@example.com", rq.n), acked)
				}
			}
			mu.Lock()
			out.ackAt = append(out.ackAt, acks...)
			mu.Unlock()
		}()
	}
	// The schedule: request i is due at start + i/rate; a 1 ms tick hands
	// out whatever is due.
	interval := time.Duration(float64(time.Second) / r.rate)
	tick := time.NewTicker(time.Millisecond)
	for i := 0; i < total; {
		now := <-tick.C
		for ; i < total; i++ {
			at := start.Add(time.Duration(i) * interval)
			if at.After(now) {
				break
			}
			work <- due{i: i, at: at}
		}
	}
	tick.Stop()
	close(work)
	wg.Wait()
	lastAck := time.Now()
	out.machine = machineSnapshot().since(m0, lastAck.Sub(start))
	close(stopSampling)
	out.windows, out.syncs = <-sampled, <-synced
	for _, a := range out.ackAt {
		out.ackLat = append(out.ackLat, a.lat)
	}
	slices.Sort(out.ackLat)
	window := lastAck.Sub(start)
	during, err := processedCount(ctx, r.raw, r.tenantID)
	if err != nil {
		return out, err
	}
	out.leadsPerSec = float64(during-before) / window.Seconds()
	if r.noWorker { // acknowledgements alone: CPU per request
		out.cpu = cpuSnapshot(r.procs...).since(cpu0, int64(total))
		out.redo = redoPer(lsn0, innodbLSN(ctx, r.raw), total)
		follow.finish()
		<-polled
		out.acked = total - int(failures.Load())
		return out, nil
	}
	if err := waitProcessed(ctx, r.raw, r.tenantID, 10*time.Minute); err != nil {
		return out, err
	}
	out.tail = time.Since(lastAck)
	after, err := processedCount(ctx, r.raw, r.tenantID)
	if err != nil {
		return out, err
	}
	out.cpu = cpuSnapshot(r.procs...).since(cpu0, int64(after-before))
	out.redo = redoPer(lsn0, innodbLSN(ctx, r.raw), after-before)
	follow.finish()
	<-polled
	out.readLat, out.readTimeouts = follow.result()
	out.errors = int(failures.Load())
	out.acked = total - out.errors
	return out, nil
}

// processedCount is how many of the tenant's deliveries are processed.
func processedCount(ctx context.Context, raw *sqlx.DB, tenantID string) (int, error) {
	var n int
	err := raw.GetContext(ctx, &n, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'processed'`, tenantID)
	return n, err
}

// apiClient calls Leadpipe's JSON API.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func (a *apiClient) call(ctx context.Context, method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// follower measures, for a sample of acknowledged deliveries, when each
// one's lead is readable through the API: GET /api/v1/leads?q=<email>,
// every pollEvery, at most maxPolls requests at once, so the polls cost
// the server a bounded share whatever the backlog (with more samples
// waiting than that, each is polled less often).
type follower struct {
	api      *apiClient
	sourceID string

	mu       sync.Mutex
	waiting  []*sample
	done     []time.Duration
	timeouts int
	finished bool
}

type sample struct {
	email      string
	acked      time.Time
	lastPolled time.Time
}

const maxPolls = 4

func newFollower(api *apiClient, sourceID string) *follower {
	return &follower{api: api, sourceID: sourceID}
}

func (f *follower) add(email string, acked time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting = append(f.waiting, &sample{email: email, acked: acked})
}

// finish lets run return once every sample is readable or timed out.
func (f *follower) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = true
}

func (f *follower) run(ctx context.Context) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.mu.Lock()
		if f.finished && len(f.waiting) == 0 {
			f.mu.Unlock()
			return
		}
		// The samples polled longest ago first.
		sort.Slice(f.waiting, func(i, j int) bool { return f.waiting[i].lastPolled.Before(f.waiting[j].lastPolled) })
		batch := append([]*sample(nil), f.waiting[:min(maxPolls, len(f.waiting))]...)
		f.mu.Unlock()
		var wg sync.WaitGroup
		for _, s := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				found := f.api.readable(ctx, f.sourceID, s.email)
				now := time.Now()
				f.mu.Lock()
				defer f.mu.Unlock()
				s.lastPolled = now
				switch {
				case found:
					f.done = append(f.done, now.Sub(s.acked))
				case now.Sub(s.acked) > readTimeout:
					f.timeouts++
				default:
					return
				}
				f.waiting = slices.DeleteFunc(f.waiting, func(w *sample) bool { return w == s })
			}()
		}
		wg.Wait()
	}
}

// result is the sorted latencies and how many samples timed out.
func (f *follower) result() ([]time.Duration, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.Sort(f.done)
	return f.done, f.timeouts + len(f.waiting)
}

// readable reports whether the lead with this email is listed.
func (a *apiClient) readable(ctx context.Context, sourceID, email string) bool {
	var page struct {
		Items []struct {
			Email string `json:"email"`
		} `json:"items"`
	}
	if err := a.call(ctx, "GET", "/api/v1/leads?limit=5&source="+sourceID+"&q="+url.QueryEscape(email), a.token, nil, &page); err != nil {
		return false
	}
	for _, it := range page.Items {
		if it.Email == email {
			return true
		}
	}
	return false
}

// pool is a set of keep-alive sender connections.
type pool chan *sender

func dialPool(host string, n int, useNetHTTP bool, url string) (pool, error) {
	p := make(pool, n)
	for i := 0; i < n; i++ {
		s, err := dialSender(host, useNetHTTP, url)
		if err != nil {
			return nil, err
		}
		p <- s
	}
	return p, nil
}

// send writes one request on a free connection; it reports whether the
// answer was a duplicate.
func (p pool) send(rq *request) (bool, error) {
	s := <-p
	defer func() { p <- s }()
	status, b, err := s.send(rq.wire, rq.h, rq.body)
	if err != nil {
		return false, err
	}
	if status != 200 {
		return false, fmt.Errorf("status %d: %s", status, b)
	}
	return bytes.Contains(b, []byte(`"duplicate"`)), nil
}

// child is a Leadpipe process this command started (and alone ends).
type child struct {
	name, bin string
	args      []string
	env       map[string]string
	log       string

	mu  sync.Mutex
	cmd *exec.Cmd
}

func (c *child) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(c.bin, c.args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.name, err)
	}
	c.cmd = cmd
	return nil
}

// pid is the process id as /proc names it ("" when not running).
func (c *child) pid() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return ""
	}
	return fmt.Sprint(c.cmd.Process.Pid)
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (c *child) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.cmd = nil
}

func (c *child) tail(n int) string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// problems counts the WARN and ERROR lines of the process's log and
// returns the first n.
func (c *child) problems(n int) (int, string) {
	b, _ := os.ReadFile(c.log)
	var first []string
	count := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			if count++; count <= n {
				first = append(first, line)
			}
		}
	}
	return count, strings.Join(first, "\n")
}

// buildBinaries builds cmd/server and cmd/worker of this module into dir.
func buildBinaries(ctx context.Context, dir string, pprof bool) (server, worker string, err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", "", errors.New("-e2e builds cmd/server and cmd/worker: run it inside the module")
	}
	for _, c := range []string{"server", "worker"} {
		args := []string{"build", "-o", filepath.Join(dir, c)}
		if pprof {
			args = append(args, "-tags", "pprof")
		}
		cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/"+c)...)
		cmd.Dir = filepath.Dir(gomod)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build ./cmd/%s: %v\n%s", c, err, b)
		}
	}
	return filepath.Join(dir, "server"), filepath.Join(dir, "worker"), nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitReady(u string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not 200 within %s", u, limit)
}

// settleMariaDB waits (at most limit) until InnoDB has written back most
// of what the previous phase left in its redo log: checkpoint age under a
// fifth of the log's size. A phase that starts while InnoDB is still
// flushing the previous one's pages measures that flushing (commits stall
// when the log is nearly full; with the Debian defaults, a 96 MB log and a
// 128 MB buffer pool, a drain of 50,000 deliveries leaves it at 70 %+).
// It prints how long it waited and where the log stood.
func settleMariaDB(ctx context.Context, raw *sqlx.DB, limit time.Duration) {
	var logSize int64
	if err := raw.GetContext(ctx, &logSize, `SELECT @@innodb_log_file_size`); err != nil || logSize <= 0 {
		return
	}
	t0 := time.Now()
	first := int64(-1)
	low, lowAt := int64(math.MaxInt64), t0
	for {
		age := checkpointAge(ctx, raw)
		if first < 0 {
			first = age
		}
		if age < low {
			low, lowAt = age, time.Now()
		}
		// Done below a fifth of the log, or once InnoDB has stopped writing
		// back for 3 s (an idle MariaDB 10.11 leaves the rest for later).
		if age < 0 || age < logSize/5 || time.Since(lowAt) > 3*time.Second || time.Since(t0) > limit {
			if time.Since(t0) > time.Second || age >= logSize/5 {
				fmt.Printf("    (MariaDB's redo log was %.0f %% full; waited %s for InnoDB to write back to %.0f %%)\n",
					100*float64(first)/float64(logSize), time.Since(t0).Round(100*time.Millisecond), 100*float64(age)/float64(logSize))
			}
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// innodbLSN is InnoDB's current log sequence number: the bytes of redo
// written so far (-1 if unknown).
func innodbLSN(ctx context.Context, raw *sqlx.DB) int64 {
	return innodbStatus(ctx, raw, "Innodb_lsn_current")
}

// redoPer is the redo written between two LSNs per item (-1 if unknown).
func redoPer(lsn0, lsn1 int64, n int) int64 {
	if lsn0 < 0 || lsn1 < lsn0 || n <= 0 {
		return -1
	}
	return (lsn1 - lsn0) / int64(n)
}

// checkpointAge is InnoDB's checkpoint age in bytes (-1 if unknown).
func checkpointAge(ctx context.Context, raw *sqlx.DB) int64 {
	return innodbStatus(ctx, raw, "Innodb_checkpoint_age")
}

// innodbStatus reads one numeric global status variable (-1 if unknown).
func innodbStatus(ctx context.Context, raw *sqlx.DB, variable string) int64 {
	var name string
	var v int64
	if err := raw.QueryRowContext(ctx, `SHOW GLOBAL STATUS LIKE ?`, variable).Scan(&name, &v); err != nil {
		return -1
	}
	return v
}
