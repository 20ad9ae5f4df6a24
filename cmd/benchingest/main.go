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
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/tracing"
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
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of phase (b), or with -drain of the drain, to this file")
	stagger := flag.Duration("stagger", 0, "override the claimer's stagger (0: keep the default)")
	claimWorkers := flag.Int("claim-workers", 0, "override the claimer's concurrent batches (0: keep the default)")
	drainN := flag.Int("drain", 0, "instead: store this many deliveries (tasks queued, no worker), then start the worker and time the drain against raw single-row ODKU into leads")
	assignRR := flag.Bool("assign", false, "with -drain: the tenant has one round-robin assignment rule among 3 users (compare with a run without)")
	assignOwner := flag.Bool("assign-owner", false, "with -drain -assign: a fixed-owner rule instead (no round-robin position to lock)")
	assignCmp := flag.Int("assign-compare", 0, "with -drain: instead, this many pairs of drains in one run, each of a fresh tenant, without rules and with one round-robin rule (with -assign-owner: a fixed owner), alternating which goes first; prints each pair's ratio (see assigncmp.go)")
	together := flag.Bool("together", false, "with -drain -assign-compare: each pair's two drains run at the same time, each tenant drained by a worker of its own from a Redis database of its own (-redis-db and the next one; see runAssignTogether)")
	assignInTx := flag.Bool("assign-intx", false, "with -drain: the worker's batches take round-robin positions in their own transaction (locked to the commit) instead of reserving them apart")
	workerConc := flag.Int("worker-concurrency", 64, "with -drain and -e2e: the worker's concurrency")
	e2e := flag.Bool("e2e", false, "instead: end to end, with cmd/server and cmd/worker built and run as separate processes (see e2e.go)")
	fraction := flag.Float64("fraction", 0.5, "with -e2e: the fixed rate as a fraction of the measured maximum")
	backlog := flag.Int("backlog", 50000, "with -e2e: deliveries of the stored backlog the worker drains")
	fixedRate := flag.Float64("rate", 0, "with -e2e: run (d) at this many requests/s instead of -fraction × the maximum (to compare builds at one load)")
	workerArgs := flag.String("worker-args", "", "with -e2e: more arguments for cmd/worker, space-separated (e.g. \"-runners 1 -gather 50ms\")")
	phaseSel := flag.String("phases", "abcde", "with -e2e: the phases to run ((a) and (b) go together; (d) needs (c) unless -rate is given)")
	workerOff := flag.Bool("worker-off", false, "with -e2e and -phases without a and b: never start the worker (what the acknowledgement costs alone)")
	indexN := flag.Int("indexes", 0, "instead: what each secondary index of leads costs the worker's upsert, with this many records per round (see indexes.go)")
	serverEnv := flag.String("server-env", "", "with -e2e: more KEY=VALUE settings for the server process, space-separated (e.g. GOGC=400)")
	workerEnv := flag.String("worker-env", "", "with -e2e: more KEY=VALUE settings for the worker process, space-separated (e.g. GOMAXPROCS=1)")
	dupN := flag.Int("dup-n", 20000, "with -e2e: deliveries sent new, then again as duplicates, for the CPU of each (e)")
	probe := flag.Duration("probe", 3*time.Second, "with -e2e: how long the maximum acknowledged rate is measured")
	workerNice := flag.Int("worker-nice", 0, "with -e2e: run the worker at this nice value above the server's (0-19)")
	logLevel := flag.String("log-level", "info", "with -e2e: the processes' LEADPIPE_LOG_LEVEL (info: a line per request, as deployed)")
	profile := flag.String("profile", "", "with -e2e: build the server and the worker with -tags pprof and write their CPU profiles of (d) into this directory")
	samples := flag.Int("read-samples", 10, "with -e2e: deliveries per second of (d) followed until their lead is readable through the API (0: none)")
	purgeN := flag.Int("purge", 0, "instead: seed this many old processed deliveries with payloads, then alternate (b) without and with the retention purge running until it removed them all (see purge.go)")
	purgePause := flag.Duration("purge-pause", -1, "with -purge: the purge's rest between batches (-1: the production default)")
	purgeFactor := flag.Float64("purge-factor", -1, "with -purge: the purge's rest after a batch as a multiple of the batch's time (-1: the production default)")
	purgeBatch := flag.Int("purge-batch", 0, "with -purge: rows per purge statement (0: the production default)")
	traceRatio := flag.Float64("trace-ratio", 0, "also run (b) with tracing on, sampling this ratio of traces (e.g. 0.01), the spans exported over OTLP/HTTP to a local receiver that discards them; alternating with (b)")
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
	if err := flushRedis(ctx, *redisAddr, *redisDB); err != nil {
		return err
	}
	findServers(cfg.Addr, *redisAddr)
	if *indexN > 0 {
		return runIndexCost(ctx, benchDSN, *indexN, 128, *rounds)
	}
	if *e2e {
		return runE2E(ctx, e2eOptions{benchDSN: benchDSN, redisAddr: *redisAddr, redisDB: *redisDB, conns: *conns, d: *dur,
			probe: *probe, fraction: *fraction, backlog: *backlog, dupN: *dupN, rate: *fixedRate, workerArgs: strings.Fields(*workerArgs), phases: *phaseSel, workerOff: *workerOff, serverEnv: strings.Fields(*serverEnv), workerEnv: strings.Fields(*workerEnv), workerConc: *workerConc, workerNice: *workerNice, logLevel: *logLevel, profile: *profile, samples: *samples})
	}
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
	a, err := app.Open(ctx, c, log, app.WithClaimer(*claimWorkers, *stagger), app.WithAssignInTx(*assignInTx))
	if err != nil {
		return err
	}
	defer a.Close()
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

	if *drainN > 0 && *assignCmp > 0 && *together {
		cancel()
		// The second app: the same database, the next Redis database.
		env2 := maps.Clone(env)
		env2["LEADPIPE_REDIS_DB"] = fmt.Sprint(*redisDB + 1)
		if err := flushRedis(ctx, *redisAddr, *redisDB+1); err != nil {
			return err
		}
		c2, err := config.Load(func(k string) string { return env2[k] })
		if err != nil {
			return err
		}
		b, err := app.Open(ctx, c2, log, app.WithAssignInTx(*assignInTx))
		if err != nil {
			return err
		}
		defer b.Close()
		return runAssignTogether(ctx, a, b, raw, *drainN, *assignCmp, *workerConc, *assignOwner)
	}
	if *drainN > 0 && *assignCmp > 0 {
		cancel()
		return runAssignCompare(ctx, a, raw, *drainN, *assignCmp, *conns, *workerConc, *assignOwner)
	}
	if *drainN > 0 && *assignRR {
		var members []string
		for _, n := range []string{"ada", "bob", "cy"} {
			u, err := a.Tenants.CreateUser(ctx, p.Tenant.ID, tenants.CreateUserInput{Email: n + "@bench.test", Name: n, Role: "staff", Password: "bench-password-1"})
			if err != nil {
				return err
			}
			members = append(members, u.ID)
		}
		rule := leads.AssignmentRule{Name: "Everyone", Strategy: leads.StrategyRoundRobin, Members: members}
		if *assignOwner {
			rule = leads.AssignmentRule{Name: "Ada", Strategy: leads.StrategyOwner, OwnerID: &members[0]}
		}
		if _, err := a.Web.Leads.PutAssignment(ctx, p.Tenant.ID, leads.Assignment{Rules: []leads.AssignmentRule{rule}}); err != nil {
			return err
		}
	}
	if *drainN > 0 {
		cancel()
		dctx, stop := context.WithCancel(ctx)
		defer stop()
		dr := drain{raw: raw, queue: a.Queue, tenantID: p.Tenant.ID, sourceID: src.ID, n: *drainN, conns: *conns, d: *dur,
			startWorker: func() error {
				if *cpuprofile != "" { // the drain's profile
					f, err := os.Create(*cpuprofile)
					if err != nil {
						return err
					}
					if err := pprof.StartCPUProfile(f); err != nil {
						return err
					}
				}
				go a.RunWorker(dctx, *workerConc)
				return nil
			}}
		res, err := dr.run(ctx)
		pprof.StopCPUProfile()
		if err != nil {
			return err
		}
		res.print(*conns, *workerConc, *dur)
		return nil
	}

	// Request i of the webhook phase carries delivery number mixNumber(i)
	// (a fraction -dup repeats one of the last 50 new ones); the raw
	// baseline inserts the same sequence. For the CPU of a new delivery
	// against a duplicate's: deliveries never sent before, then the same
	// again.
	host, path := ln.Addr().String(), "/hooks/bench/landing"
	mixed := newFeed(secret, host, path, *dupFrac, 0)
	fresh := newFeed(secret, host, path, 0, 1_000_000_000)
	// Each sender keeps one HTTP/1.1 keep-alive connection and writes
	// pre-serialised requests on it (as wrk does), so the load generator,
	// which shares this machine's two cores with the server, spends as
	// little CPU as it can; -nethttp uses net/http's client instead.
	pool, err := dialPool(host, *conns, *netHTTP, url)
	if err != nil {
		return err
	}
	send := pool.send
	if *purgeN > 0 {
		newB := func(name string, offset int) *phase {
			f := newFeed(secret, host, path, *dupFrac, offset)
			ph := &phase{name: name, feed: f}
			ph.fn = func() error { _, err := send(f.at(ph.take())); return err }
			return ph
		}
		svc := a.Retention
		if *purgePause >= 0 {
			svc.Pause = *purgePause
		}
		if *purgeFactor >= 0 {
			svc.PauseFactor = *purgeFactor
		}
		if *purgeBatch > 0 {
			svc.Batch = *purgeBatch
		}
		pb := &purgeBench{raw: raw, svc: svc, tenantID: p.Tenant.ID, sourceID: src.ID, n: *purgeN,
			payload: mixed.at(0).body, conns: *conns, slice: slice, rounds: *rounds, maxRounds: 1000,
			plain: newB("b", 0), purging: newB("b-purge", 1_000_000_000)}
		best := 0.0
		return pb.run(ctx, func(ph *phase) error {
			if err := ph.prepare(best, slice); err != nil {
				return err
			}
			ph.run(*conns, slice)
			best = max(best, ph.best())
			return nil
		})
	}

	// One raw row per statement, autocommit, with the same columns and the
	// same payload bytes the server stores, each phase under a tenant of
	// its own.
	rawInsert := func(name, table string, prepared bool, tenant string) (*phase, error) {
		ph := &phase{name: name, feed: mixed}
		q := `INSERT IGNORE INTO ` + table + ` (tenant_id, source_id, id, delivery_id, origin, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
		exec := func(args ...any) error { _, err := raw.ExecContext(ctx, q, args...); return err }
		if prepared {
			stmt, err := raw.PrepareContext(ctx, q)
			if err != nil {
				return nil, err
			}
			exec = func(args ...any) error { _, err := stmt.ExecContext(ctx, args...); return err }
		}
		ph.fn = func() error {
			rq := mixed.at(ph.take())
			return exec(tenant, "S0000000000000000000000000", ids.New(),
				fmt.Sprintf("msg_%d", rq.n), "webhook", rq.body, time.Now().UTC())
		}
		return ph, nil
	}
	ra, err := rawInsert("a", "deliveries", false, "T0000000000000000000000000")
	if err != nil {
		return err
	}
	rmin, err := rawInsert("a-min", "raw_claims", false, "T0000000000000000000000001")
	if err != nil {
		return err
	}
	rprep, err := rawInsert("a-prep", "deliveries", true, "T0000000000000000000000002")
	if err != nil {
		return err
	}
	var dups, accepted atomic.Int64
	hb := &phase{name: "b", feed: mixed}
	hb.fn = func() error {
		dup, err := send(mixed.at(hb.take()))
		if err != nil {
			return err
		}
		if dup {
			dups.Add(1)
		} else {
			accepted.Add(1)
		}
		return nil
	}
	// Only new deliveries, then only duplicates of them: CPU of each kind.
	pNew := &phase{name: "new", feed: fresh}
	pNew.fn = func() error {
		if dup, err := send(fresh.at(pNew.take())); err != nil || dup {
			return cmp.Or(err, errors.New("a new delivery answered as a duplicate"))
		}
		return nil
	}
	pDup := &phase{name: "dup"}
	pDup.fn = func() error {
		sent := pNew.seq.Load()
		if dup, err := send(fresh.at(pDup.take() % int(sent))); err != nil || !dup {
			return cmp.Or(err, errors.New("a repeated delivery answered as new"))
		}
		return nil
	}

	phases := []*phase{ra, rmin, rprep, hb}
	// (b) with tracing on: the same mix of requests of its own.
	var ht *phase
	var traced *sdktrace.TracerProvider
	var exported atomic.Int64
	if *traceRatio > 0 {
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			exported.Add(n)
			w.WriteHeader(http.StatusOK)
		}))
		defer sink.Close()
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
		if err != nil {
			return err
		}
		traced = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*traceRatio))))
		defer traced.Shutdown(context.Background())
		tf := newFeed(secret, host, path, *dupFrac, 2_000_000_000)
		ht = &phase{name: "b-traced", feed: tf}
		ht.fn = func() error {
			_, err := send(tf.at(ht.take()))
			return err
		}
		phases = append(phases, ht)
	}
	best := 0.0 // the best rate of any phase so far, to size what is signed ahead
	runPhase := func(ph *phase) error {
		if err := ph.prepare(best, slice); err != nil {
			return err
		}
		ph.run(*conns, slice)
		best = max(best, ph.best())
		return nil
	}
	for r := 0; r < *rounds; r++ {
		for _, ph := range phases {
			if ph == hb && *cpuprofile != "" && r == 0 {
				f, err := os.Create(*cpuprofile)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if ph == ht {
				tracing.Install(traced)
			}
			err := runPhase(ph)
			tracing.Install(nil)
			if err != nil {
				return err
			}
		}
	}
	// New-only, then duplicate-only (the duplicates need the new ones).
	for _, ph := range []*phase{pNew, pDup} {
		if err := runPhase(ph); err != nil {
			return err
		}
	}
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
	if ht != nil {
		var per []string
		for i := range ht.per {
			per = append(per, fmt.Sprintf("%.2f", ht.per[i]/hb.per[i]))
		}
		fmt.Printf("(b') the same with tracing on, sampling %g: %.0f req/s  p99 %s  CPU per request %s; %d bytes of spans exported\n",
			*traceRatio, ht.rate(secs), pct(ht.lat, 99), ht.cpuPer(), exported.Load())
		fmt.Printf("    b'/b = %.3f (each round: %s); b'/a = %.2f\n", ht.rate(secs)/hb.rate(secs), strings.Join(per, " "), ht.rate(secs)/ra.rate(secs))
	}
	if n := mixed.onDemand.Load() + fresh.onDemand.Load(); n > 0 {
		fmt.Printf("    %d requests were signed on demand (a round outran the requests signed ahead): the load generator's CPU weighs a little more in those rounds\n", n)
	}
	return nil
}

// problemsOnly passes on the log lines of level WARN and ERROR.
type problemsOnly struct{ w io.Writer }

func (p problemsOnly) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("level=WARN")) || bytes.Contains(b, []byte("level=ERROR")) {
		return p.w.Write(b)
	}
	return len(b), nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// flushRedis empties the benchmark's Redis database n.
func flushRedis(ctx context.Context, addr string, n int) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, DB: n})
	defer rc.Close()
	if err := rc.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}
