// Command benchingest measures the ingest path against the database's own
// ceiling, in one run on the same MariaDB/MySQL:
//
//	(a) raw autocommit single-row INSERT IGNORE rows/s from 16 connections
//	    into the real `deliveries` table (the claim statement itself, with
//	    every index the product keeps), and, for reference, into a minimal
//	    table with only the primary and unique keys;
//	(b) signed `standard` webhook deliveries/s acknowledged by a running
//	    Leadpipe server from 16 concurrent senders, 10% duplicates;
//
// and prints b/a with p50/p99 acknowledgement latency. The phases alternate
// in short rounds (a, a-minimal, b, a, a-minimal, b, ...) so that a slow
// minute of a shared machine weighs on both sides of the ratio alike. It
// makes (and drops) its own database and uses its own Redis database number.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchingest:", err)
		os.Exit(1)
	}
}

func run() error {
	dsn := flag.String("dsn", envOr("LEADPIPE_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/leadpipe?parseTime=true&loc=UTC"), "MySQL server (the database name is replaced by a scratch one)")
	redisAddr := flag.String("redis", envOr("LEADPIPE_REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	redisDB := flag.Int("redis-db", 14, "Redis database number to use (flushed)")
	conns := flag.Int("c", 16, "connections / concurrent senders")
	dur := flag.Duration("d", 10*time.Second, "total duration of each phase, split over the rounds")
	rounds := flag.Int("rounds", 5, "rounds of alternating phases")
	dupFrac := flag.Float64("dup", 0.10, "fraction of duplicate deliveries")
	worker := flag.Bool("worker", false, "also run the Asynq worker in the server process (off: measure acknowledgement alone, as with LEADPIPE_WORKER=off and separate workers)")
	netHTTP := flag.Bool("nethttp", false, "senders use net/http's client instead of raw keep-alive connections")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of phase (b) to this file")
	stagger := flag.Duration("stagger", 0, "override the claimer's stagger (0: keep the default)")
	claimWorkers := flag.Int("claim-workers", 0, "override the claimer's concurrent batches (0: keep the default)")
	drain := flag.Int("drain", 0, "instead: store this many deliveries (tasks queued, no worker), then start the worker and time the drain against raw single-row ODKU into leads")
	workerConc := flag.Int("worker-concurrency", 64, "with -drain: the worker's concurrency")
	flag.Parse()
	if *rounds < 1 {
		*rounds = 1
	}
	slice := *dur / time.Duration(*rounds)
	ctx := context.Background()

	cfg, err := mysql.ParseDSN(*dsn)
	if err != nil {
		return err
	}
	cfg.DBName = fmt.Sprintf("leadpipe_bench_%d", time.Now().Unix())
	benchDSN := cfg.FormatDSN()
	defer db.DropDatabase(context.Background(), benchDSN)

	// The real server on a loopback port; app.Open applies the migrations,
	// so phase (a) writes to the very table the server claims into.
	rc := redis.NewClient(&redis.Options{Addr: *redisAddr, DB: *redisDB})
	if err := rc.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	rc.Close()
	env := map[string]string{"LEADPIPE_MYSQL_DSN": benchDSN, "LEADPIPE_REDIS_ADDR": *redisAddr,
		"LEADPIPE_REDIS_DB":   fmt.Sprint(*redisDB),
		"LEADPIPE_SECRET_KEY": "YmVuY2gta2V5LWJlbmNoLWtleS1iZW5jaC1rZXktMzI="}
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	// The server logs as configured by default (a line per request at
	// info), so the benchmark pays for logging; only warnings and errors
	// reach the terminal.
	log := app.NewLogger(c, problemsOnly{os.Stderr})
	a, err := app.Open(ctx, c, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if *stagger > 0 {
		a.Ingest.Claimer.Stagger = *stagger
	}
	if *claimWorkers > 0 {
		a.Ingest.Claimer.Workers = *claimWorkers
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *worker {
		go a.RunWorker(wctx, 8)
	}
	p, err := a.Tenants.Provision(ctx, tenants.ProvisionInput{Slug: "bench", Name: "Bench", AdminEmail: "bench@bench.test", AdminPassword: "bench-password-1"})
	if err != nil {
		return err
	}
	src, secret, err := a.Sources.Create(ctx, p.Tenant.ID, sources.CreateInput{Slug: "landing", Name: "Landing", Kind: kinds.Standard})
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/hooks/bench/landing"

	// Phase (a)'s connections, and the minimal reference table.
	raw, err := db.Open(ctx, benchDSN)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(*conns)
	raw.SetMaxIdleConns(*conns)
	if _, err := raw.ExecContext(ctx, `CREATE TABLE raw_claims (tenant_id CHAR(26) CHARACTER SET ascii NOT NULL,
		source_id CHAR(26) CHARACTER SET ascii NOT NULL, id CHAR(26) CHARACTER SET ascii NOT NULL,
		delivery_id VARCHAR(191) COLLATE utf8mb4_bin NOT NULL, origin VARCHAR(16) CHARACTER SET ascii NOT NULL,
		payload LONGBLOB NOT NULL, received_at DATETIME(6) NOT NULL,
		PRIMARY KEY (tenant_id, id), UNIQUE KEY uq (tenant_id, source_id, delivery_id))`); err != nil {
		return err
	}

	if *drain > 0 {
		cancel()
		return runDrain(ctx, a, p.Tenant.ID, src.ID, raw, *drain, *conns, *workerConc, *dur)
	}

	// Pre-sign enough deliveries so the senders spend no CPU on HMAC. A
	// fraction -dup of the requests repeats one of the last 50 new
	// deliveries (a duplicate); mix[i] is request i's delivery number, the
	// same sequence the raw baseline inserts.
	type req struct {
		h    http.Header
		body []byte
	}
	est := int(15000*dur.Seconds()) + 1000
	mix := mixSequence(est, *dupFrac)
	reqs := make([]req, est)
	var ts time.Time
	signedAt := map[int]time.Time{}
	for i := range reqs {
		if i%1000 == 0 {
			ts = time.Now().Add(time.Duration(i/2000) * time.Second)
		}
		n := mix[i]
		t, ok := signedAt[n]
		if !ok {
			t = ts
			signedAt[n] = t
		}
		rq, err := signedRequest(secret, n, t)
		if err != nil {
			return err
		}
		reqs[i] = rq
	}
	// For the CPU of a new delivery against a duplicate's: requests of
	// deliveries never sent before, then the same requests again.
	fresh := make([]req, int(8000*slice.Seconds())+1000)
	for i := range fresh {
		if i%1000 == 0 {
			ts = time.Now().Add(time.Duration(i/2000) * time.Second)
		}
		if fresh[i], err = signedRequest(secret, 1_000_000_000+i, ts); err != nil {
			return err
		}
	}
	// Each sender keeps one HTTP/1.1 keep-alive connection and writes
	// pre-serialised requests on it (as wrk does), so the load generator,
	// which shares this machine's two cores with the server, spends as
	// little CPU as it can; -nethttp uses net/http's client instead.
	pool := make(chan *sender, *conns)
	for i := 0; i < *conns; i++ {
		s, err := dialSender(ln.Addr().String(), *netHTTP, url)
		if err != nil {
			return err
		}
		pool <- s
	}
	wire := make([][]byte, len(reqs))
	for i, rq := range reqs {
		wire[i] = serialise(ln.Addr().String(), "/hooks/bench/landing", rq.h, rq.body)
	}
	freshWire := make([][]byte, len(fresh))
	for i, rq := range fresh {
		freshWire[i] = serialise(ln.Addr().String(), "/hooks/bench/landing", rq.h, rq.body)
	}

	// One raw row per statement, autocommit, with the same columns and the
	// same payload bytes the server stores, under a tenant of its own.
	rawInsert := func(table string, prepared bool, tenant string) (func() error, error) {
		var seq atomic.Int64 // each phase its own sequence, under a tenant of its own
		q := `INSERT IGNORE INTO ` + table + ` (tenant_id, source_id, id, delivery_id, origin, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
		exec := func(args ...any) error { _, err := raw.ExecContext(ctx, q, args...); return err }
		if prepared {
			stmt, err := raw.PrepareContext(ctx, q)
			if err != nil {
				return nil, err
			}
			exec = func(args ...any) error { _, err := stmt.ExecContext(ctx, args...); return err }
		}
		return func() error {
			i := int(seq.Add(1)-1) % len(mix) // the webhook phase's mix of new and repeated ids
			return exec(tenant, "S0000000000000000000000000", ids.New(),
				fmt.Sprintf("msg_%d", mix[i]), "webhook", reqs[i].body, time.Now().UTC())
		}, nil
	}
	rawDeliveries, err := rawInsert("deliveries", false, "T0000000000000000000000000")
	if err != nil {
		return err
	}
	rawMinimal, err := rawInsert("raw_claims", false, "T0000000000000000000000001")
	if err != nil {
		return err
	}
	rawPrepared, err := rawInsert("deliveries", true, "T0000000000000000000000002")
	if err != nil {
		return err
	}
	var next atomic.Int64
	var dups, accepted atomic.Int64
	hook := func() error {
		i := int(next.Add(1)-1) % len(reqs)
		s := <-pool
		defer func() { pool <- s }()
		status, b, err := s.send(wire[i], reqs[i].h, reqs[i].body)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("status %d: %s", status, b)
		}
		if bytes.Contains(b, []byte(`"duplicate"`)) {
			dups.Add(1)
		} else {
			accepted.Add(1)
		}
		return nil
	}

	// Only new deliveries, then only duplicates of them: CPU of each kind.
	var freshNext, freshSent, freshDup atomic.Int64
	sendFresh := func(i int, wantDup bool) error {
		s := <-pool
		defer func() { pool <- s }()
		status, b, err := s.send(freshWire[i], fresh[i].h, fresh[i].body)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("status %d: %s", status, b)
		}
		if bytes.Contains(b, []byte(`"duplicate"`)) != wantDup {
			return fmt.Errorf("want duplicate=%v: %s", wantDup, b)
		}
		return nil
	}
	newOnly := func() error {
		i := int(freshNext.Add(1) - 1)
		if i >= len(fresh) {
			return errors.New("out of fresh deliveries (raise the estimate)")
		}
		err := sendFresh(i, false)
		freshSent.Store(max(freshSent.Load(), int64(i+1)))
		return err
	}
	dupOnly := func() error {
		n := freshSent.Load()
		if n == 0 {
			return errors.New("no deliveries to repeat")
		}
		return sendFresh(int((freshDup.Add(1)-1)%n), true)
	}

	phases := []*phase{
		{name: "a", fn: rawDeliveries},
		{name: "a-min", fn: rawMinimal},
		{name: "a-prep", fn: rawPrepared},
		{name: "b", fn: hook},
	}
	for r := 0; r < *rounds; r++ {
		for _, ph := range phases {
			if ph.name == "b" && *cpuprofile != "" && r == 0 {
				f, err := os.Create(*cpuprofile)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			ph.run(*conns, slice)
		}
	}
	ra, rmin, rprep, hb := phases[0], phases[1], phases[2], phases[3]
	// New-only, then duplicate-only (the duplicates need the new ones).
	pNew, pDup := &phase{name: "new", fn: newOnly}, &phase{name: "dup", fn: dupOnly}
	pNew.run(*conns, slice)
	pDup.run(*conns, slice)
	secs := dur.Seconds()
	fmt.Printf("%d rounds of %s per phase, alternating\n", *rounds, slice)
	fmt.Printf("(a) raw INSERT IGNORE into deliveries, %d connections: %.0f rows/s  p50 %s  p99 %s\n", *conns, ra.rate(secs), pct(ra.lat, 50), pct(ra.lat, 99))
	fmt.Printf("    CPU per row: %s\n", ra.cpuPer())
	fmt.Printf("    reference, minimal table (primary + unique key only): %.0f rows/s  p50 %s  p99 %s  CPU per row %s\n",
		rmin.rate(secs), pct(rmin.lat, 50), pct(rmin.lat, 99), rmin.cpuPer())
	fmt.Printf("    reference, deliveries through one prepared statement (binary payload, no parsing): %.0f rows/s  p50 %s  p99 %s  CPU per row %s\n",
		rprep.rate(secs), pct(rprep.lat, 50), pct(rprep.lat, 99), rprep.cpuPer())
	fmt.Printf("(b) webhook deliveries acknowledged, %d senders: %.0f req/s (%d accepted, %d duplicates)  p50 %s  p99 %s  worker in process: %v\n",
		*conns, hb.rate(secs), accepted.Load(), dups.Load(), pct(hb.lat, 50), pct(hb.lat, 99), *worker)
	fmt.Printf("    CPU per request: %s\n", hb.cpuPer())
	fmt.Printf("(c) only new deliveries: %.0f req/s  p99 %s  CPU per new delivery: %s\n", pNew.rate(slice.Seconds()), pct(pNew.lat, 99), pNew.cpuPer())
	fmt.Printf("    only duplicates of them: %.0f req/s  p99 %s  CPU per duplicate: %s\n", pDup.rate(slice.Seconds()), pct(pDup.lat, 99), pDup.cpuPer())
	fmt.Printf("    CPU per duplicate / CPU per new delivery = %.2f (target ≤ 0.60)\n", float64(pDup.cpuTotal())/float64(max(pNew.cpuTotal(), 1)))
	if st := a.Ingest.Claimer.Stats(); st.Batches > 0 {
		fmt.Printf("    claims: %d rows in %d group-commit batches (%.1f rows per batch, %s per batch, %s per claim)\n",
			st.Rows, st.Batches, float64(st.Rows)/float64(st.Batches), (st.BatchTime / time.Duration(st.Batches)).Round(time.Microsecond),
			(st.ClaimTime / time.Duration(st.Rows)).Round(time.Microsecond))
	}
	if g := a.QueueRedis.Groups.Load(); g > 0 {
		fmt.Printf("    enqueues: %d in %d Redis round trips (%.1f per trip)\n", a.QueueRedis.Calls.Load(), g, float64(a.QueueRedis.Calls.Load())/float64(g))
	}
	var perRound []string
	for i := range hb.per {
		perRound = append(perRound, fmt.Sprintf("%.2f", hb.per[i]/ra.per[i]))
	}
	fmt.Printf("    b/a of each round: %s\n", strings.Join(perRound, " "))
	fmt.Printf("ratio b/a = %.2f at %.0f %% duplicates (targets: ≥ 1.0 at 10 %%, ≥ 1.2 at 90 %%), p99 ack latency %s (target ≤ 25ms)\n",
		hb.rate(secs)/ra.rate(secs), 100*float64(dups.Load())/float64(max(dups.Load()+accepted.Load(), 1)), pct(hb.lat, 99))
	fmt.Printf("    against the references: minimal table %.2f, prepared statement %.2f\n", hb.rate(secs)/rmin.rate(secs), hb.rate(secs)/rprep.rate(secs))
	return nil
}

// phase is one side of the comparison, summed over its rounds.
type phase struct {
	name string
	fn   func() error
	n    int64
	lat  []time.Duration
	cpu  cpu
	per  []float64 // rate of each round
}

func (p *phase) run(conns int, d time.Duration) {
	before := cpuSnapshot()
	n, lat := hammer(conns, d, p.fn)
	after := cpuSnapshot()
	if p.cpu == nil {
		p.cpu = cpu{}
	}
	for k, v := range after {
		p.cpu[k] += v - before[k]
	}
	p.n += n
	p.per = append(p.per, float64(n)/d.Seconds())
	p.lat = append(p.lat, lat...)
	sort.Slice(p.lat, func(i, j int) bool { return p.lat[i] < p.lat[j] })
}

func (p *phase) rate(secs float64) float64 { return float64(p.n) / secs }

func (p *phase) cpuPer() string { return p.cpu.since(cpu{}, p.n) }

// cpuTotal is the phase's CPU time of every process per request.
func (p *phase) cpuTotal() time.Duration {
	if p.n == 0 {
		return 0
	}
	var t time.Duration
	for _, v := range p.cpu {
		t += v
	}
	return t / time.Duration(p.n)
}

// mixSequence numbers n requests' deliveries: a fraction dup of them
// repeats one of the last 50 new ones, the rest are new (numbered in
// order).
func mixSequence(n int, dup float64) []int {
	out := make([]int, n)
	next := 0
	for i := range out {
		if next > 0 && float64(i%100) < dup*100 {
			out[i] = next - 1 - i%min(50, next)
			continue
		}
		out[i] = next
		next++
	}
	return out
}

// signedRequest is the signed standard delivery number n.
func signedRequest(secret string, n int, ts time.Time) (struct {
	h    http.Header
	body []byte
}, error) {
	var out struct {
		h    http.Header
		body []byte
	}
	id := fmt.Sprintf("msg_%d", n)
	body := kinds.SampleBody(kinds.Standard, id, fmt.Sprintf("contact_%d", n), kinds.Lead{Email: fmt.Sprintf("u%d@example.com", n), Name: "Bench"}, ts)
	h, b, err := kinds.Sign(kinds.Standard, nil, secret, id, body, ts)
	if err != nil {
		return out, err
	}
	h.Set("Content-Type", "application/json")
	out.h, out.body = h, b
	return out, nil
}

// problemsOnly passes on the log lines of level WARN and ERROR.
type problemsOnly struct{ w io.Writer }

func (p problemsOnly) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("level=WARN")) || bytes.Contains(b, []byte("level=ERROR")) {
		return p.w.Write(b)
	}
	return len(b), nil
}

// hammer runs fn from n goroutines for d and returns successes and latencies.
func hammer(n int, d time.Duration, fn func() error) (int64, []time.Duration) {
	var count atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := fn(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				local = append(local, time.Since(t0))
				count.Add(1)
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		fmt.Fprintln(os.Stderr, "first error:", err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return count.Load(), all
}

func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[len(lat)*p/100].Round(10 * time.Microsecond)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// cpu is the CPU time used so far by this process (server and load
// generator alike), MariaDB and Redis, read from /proc (Linux only; zeros
// elsewhere), to show where each request's cost goes.
type cpu map[string]time.Duration

func cpuSnapshot() cpu {
	c := cpu{"self": procCPU("self")}
	for _, name := range []string{"mariadbd", "mysqld", "redis-server"} {
		if pid := pidOf(name); pid != "" {
			c[name] = procCPU(pid)
		}
	}
	return c
}

func (c cpu) since(before cpu, n int64) string {
	if n == 0 {
		return "n/a"
	}
	var parts []string
	var total time.Duration
	for _, k := range []string{"self", "mariadbd", "mysqld", "redis-server"} {
		if _, ok := c[k]; !ok {
			continue
		}
		d := (c[k] - before[k]) / time.Duration(n)
		total += d
		parts = append(parts, fmt.Sprintf("%s %s", k, d.Round(time.Microsecond)))
	}
	return fmt.Sprintf("%s (%s)", total.Round(time.Microsecond), strings.Join(parts, ", "))
}

func procCPU(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100 on Linux
}

func pidOf(name string) string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == name {
			return e.Name()
		}
	}
	return ""
}

// sender is one simulated webhook sender with its own connection.
type sender struct {
	conn   net.Conn
	br     *bufio.Reader
	client *http.Client // with -nethttp
	url    string
	body   []byte // the last response body (reused)
}

func dialSender(addr string, useNetHTTP bool, url string) (*sender, error) {
	if useNetHTTP {
		return &sender{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}, url: url}, nil
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &sender{conn: c, br: bufio.NewReaderSize(c, 4096)}, nil
}

func serialise(host, path string, h http.Header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

func (s *sender) send(wire []byte, h http.Header, body []byte) (int, []byte, error) {
	if s.client != nil {
		r, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
		r.Header = h.Clone()
		res, err := s.client.Do(r)
		if err != nil {
			return 0, nil, err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, b, nil
	}
	if _, err := s.conn.Write(wire); err != nil {
		return 0, nil, err
	}
	return s.readResponse()
}

// readResponse reads one HTTP/1.1 response with a Content-Length (the
// server always sends one) with as little work as it can, as wrk does:
// the load generator's CPU is taken from the server under test.
func (s *sender) readResponse() (int, []byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := s.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(line) <= 2 { // the blank line
			break
		}
		if len(line) > 15 && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(line[15:]))); err != nil {
				return 0, nil, fmt.Errorf("bad header %q", line)
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("response without Content-Length")
	}
	if cap(s.body) < length {
		s.body = make([]byte, length)
	}
	b := s.body[:length]
	_, err = io.ReadFull(s.br, b)
	return status, b, err
}

// runDrain measures the worker alone on a stored backlog: n deliveries are
// stored and their tasks queued with no worker running, then the worker
// starts (in this process) and the drain is timed until every delivery is
// processed. The baseline, in the same run: raw autocommit single-row
// INSERT … ON DUPLICATE KEY UPDATE of the same records into the real leads
// table (all its indexes) from conns connections, for d.
func runDrain(ctx context.Context, a *app.App, tenantID, sourceID string, raw *sqlx.DB, n, conns, conc int, d time.Duration) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = kinds.SampleBody(kinds.Standard, fmt.Sprintf("dr_%d", i), fmt.Sprintf("lead_%d", i),
			kinds.Lead{Email: fmt.Sprintf("d%d@example.com", i), Name: fmt.Sprintf("Drain Lead %d", i), Company: "Bench"}, now)
	}
	// Baseline: the records as single-row upserts into leads.
	var seq atomic.Int64
	odku := func() error {
		i := int(seq.Add(1)-1) % n
		_, err := raw.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone,
				company, source_created_at, last_seen_at, times_seen, status, tags, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, '', 'Bench', ?, ?, 1, 'new', '[]', 1, ?, ?)
			ON DUPLICATE KEY UPDATE payload = VALUES(payload), email = VALUES(email), name = VALUES(name),
				company = VALUES(company), last_seen_at = VALUES(last_seen_at), times_seen = times_seen + 1, updated_at = VALUES(updated_at)`,
			"T0000000000000000000000009", ids.New(), sourceID, fmt.Sprintf("lead_%d_%d", i, seq.Load()/int64(n)), bodies[i],
			fmt.Sprintf("d%d@example.com", i), fmt.Sprintf("Drain Lead %d", i), now, now, now, now)
		return err
	}
	base := &phase{name: "odku", fn: odku}
	base.run(conns, d)
	// The backlog: stored rows, tasks queued, no worker.
	for i := 0; i < n; i += 500 {
		m := min(500, n-i)
		q := `INSERT INTO deliveries (tenant_id, source_id, id, delivery_id, origin, payload, received_at) VALUES (?, ?, ?, ?, 'webhook', ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, 'webhook', ?, ?)", m-1)
		args := make([]any, 0, m*6)
		for j := i; j < i+m; j++ {
			args = append(args, tenantID, sourceID, ids.New(), fmt.Sprintf("dr_%d", j), bodies[j], now)
		}
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	var ids []string
	if err := raw.SelectContext(ctx, &ids, `SELECT id FROM deliveries WHERE tenant_id = ? AND state = 'received'`, tenantID); err != nil {
		return err
	}
	t0 := time.Now()
	work := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				t, opts := webhooks.NewProcessTask(tenantID, id)
				if _, err := a.Queue.EnqueueContext(ctx, t, opts...); err != nil {
					fmt.Fprintln(os.Stderr, "enqueue:", err)
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	fmt.Printf("backlog: %d deliveries stored, tasks queued in %s\n", len(ids), time.Since(t0).Round(time.Millisecond))
	// Drain.
	before := cpuSnapshot()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	go a.RunWorker(wctx, conc)
	for {
		var left int
		if err := raw.GetContext(ctx, &left, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'received'`, tenantID); err != nil {
			return err
		}
		if left == 0 {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("drain: %d deliveries left after 10 minutes", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	el := time.Since(start)
	after := cpuSnapshot()
	var leadsN int
	_ = raw.GetContext(ctx, &leadsN, `SELECT COUNT(*) FROM leads WHERE tenant_id = ?`, tenantID)
	rate := float64(len(ids)) / el.Seconds()
	fmt.Printf("(a) raw single-row ODKU into leads, %d connections: %.0f rows/s  p50 %s  p99 %s  CPU per row %s\n",
		conns, base.rate(d.Seconds()), pct(base.lat, 50), pct(base.lat, 99), base.cpuPer())
	fmt.Printf("(b) worker drain of %d stored deliveries (concurrency %d): %s, %.0f leads/s (%d leads)  CPU per lead %s\n",
		len(ids), conc, el.Round(time.Millisecond), rate, leadsN, after.since(before, int64(len(ids))))
	fmt.Printf("drain ratio b/a = %.2f (target ≥ 0.80)\n", rate/base.rate(d.Seconds()))
	return nil
}
