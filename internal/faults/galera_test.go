//go:build faults && galera

package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/redistest"
)

// The Galera fault test: three real mariadbd nodes with the galera-4
// provider on loopback ports, two servers and a worker each preferring a
// different node (a DSN listing all three, docs/SCALING.md "Database"),
// the retrying sender alternating between the two servers, and a node
// SIGKILLed mid-storm and restarted (IST rejoin). Before the kills, the
// worker's node lags the cluster twice mid-storm (its applier held 4 s:
// by a backup's FLUSH TABLES WITH READ LOCK, then behind a held table
// lock), and no acknowledged delivery may go missing for the worker. The
// fault suite's invariants are checked after each phase, and every node
// must hold the same rows.
//
//	short (.ci/run):  go test -tags 'faults galera' -run TestGalera -count=1 ./internal/faults/
//	control: LEADPIPE_GALERA_SYNC_WAIT=0 … (the worker reads without waiting
//	                  for its node: the held-applier phase must fail)
//	LEADPIPE_GALERA_VIEWS=1 logs the membership changes of each kill.
//	long (three kills, one per node): LEADPIPE_GALERA=long …
//	cost (three nodes against one plain MariaDB, same sitting):
//	                  LEADPIPE_GALERA=cost go test -tags 'faults galera' -run TestGaleraIngestCost -v ./internal/faults/

// galeraNode is one private mariadbd of the cluster, stopped by its PID.
type galeraNode struct {
	proc
	n                      int // 1-based
	port, gport, iport, sp int
	dir, tmp               string
	base                   []string // arguments without the cluster address
}

type galeraCluster struct {
	t     *testing.T
	nodes []*galeraNode
	runAs []string
}

func mysqlTools(t *testing.T) (mariadbd, installDB string) {
	t.Helper()
	mariadbd, installDB = mariadbTools(t)
	if _, err := os.Stat("/usr/lib/galera/libgalera_smm.so"); err != nil {
		t.Skip("galera-4 not installed (/usr/lib/galera/libgalera_smm.so)")
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync not installed (the SST method)")
	}
	return mariadbd, installDB
}

// startGalera installs three data directories, bootstraps node 1 and
// joins nodes 2 and 3 one after the other (each by rsync SST).
func startGalera(t *testing.T) *galeraCluster {
	t.Helper()
	mariadbd, installDB := mysqlTools(t)
	root := mysqlDir(t, "lp-galera-")
	c := &galeraCluster{t: t, runAs: runAsMySQL()}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := 1; i <= 3; i++ {
		g := &galeraNode{n: i, port: freePort(t), gport: freePort(t), iport: freePort(t), sp: freePort(t), dir: filepath.Join(root, fmt.Sprintf("node%d", i))}
		if err := os.Mkdir(g.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Its own temporary directory: installs running side by side
		// name their temporary tables alike.
		g.tmp, g.env = mysqlTmp(t, g.dir)
		c.nodes = append(c.nodes, g)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i-1] = installDataDir(installDB, g.dir, g.env, c.runAs)
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	chownToMySQL(root)
	for _, g := range c.nodes {
		g.name, g.bin, g.log = fmt.Sprintf("galera%d", g.n), mariadbd, filepath.Join(g.dir, "stdout.log")
		g.base = append(mariadbdArgs(g.dir, g.tmp, g.port),
			"--wsrep-on=ON", "--wsrep-provider=/usr/lib/galera/libgalera_smm.so", "--binlog-format=ROW",
			"--innodb-autoinc-lock-mode=2", "--wsrep-cluster-name=leadpipe_galera_test", "--wsrep-sst-method=rsync",
			fmt.Sprintf("--wsrep-node-address=127.0.0.1:%d", g.gport),
			fmt.Sprintf("--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d", g.gport, g.iport),
			fmt.Sprintf("--wsrep-sst-receive-address=127.0.0.1:%d", g.sp))
		g.base = append(g.base, c.runAs...)
		t.Cleanup(func() { g.signal(syscall.SIGKILL) })
	}
	start := time.Now()
	for i, g := range c.nodes {
		addr := "gcomm://"
		if i > 0 {
			addr = fmt.Sprintf("gcomm://127.0.0.1:%d", c.nodes[0].gport)
		}
		g.args = append(append([]string{}, g.base...), "--wsrep-cluster-address="+addr)
		g.start(t)
		c.waitSynced(g, i+1, 3*time.Minute)
	}
	t.Logf("galera: three nodes Synced in %.1fs (ports %d, %d, %d)", time.Since(start).Seconds(), c.nodes[0].port, c.nodes[1].port, c.nodes[2].port)
	return c
}

func (g *galeraNode) addr() string { return fmt.Sprintf("127.0.0.1:%d", g.port) }

// dsn names every node, the preferred one first.
func (c *galeraCluster) dsn(prefer int, dbName string) string {
	addrs := []string{c.nodes[prefer].addr()}
	for i, g := range c.nodes {
		if i != prefer {
			addrs = append(addrs, g.addr())
		}
	}
	return fmt.Sprintf("root@tcp(%s)/%s?parseTime=true&loc=UTC", strings.Join(addrs, ","), dbName)
}

// status reads one wsrep status variable of a node ("" when it does not answer).
func (g *galeraNode) status(name string) string {
	d, err := sqlx.Open("mysql", fmt.Sprintf("root@tcp(%s)/?timeout=2s", g.addr()))
	if err != nil {
		return ""
	}
	defer d.Close()
	var k, v string
	if err := d.QueryRow("SHOW STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		return ""
	}
	return v
}

func (c *galeraCluster) waitSynced(g *galeraNode, size int, limit time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if g.status("wsrep_local_state_comment") == "Synced" && g.status("wsrep_cluster_size") == strconv.Itoa(size) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(g.dir, "error.log"))
	lines := strings.Split(string(b), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	c.t.Fatalf("galera node %d not Synced in a cluster of %d within %s:\n%s", g.n, size, limit, strings.Join(lines, "\n"))
}

// viewLine: the log lines of a membership change.
var viewLine = regexp.MustCompile(`(?i)suspect|inactive|declar|view\(|new component|Primary|forgetting|connection established|Shifting|Member .* (synced|desynced)|IST`)

// waitSize waits until node g sees a cluster of size nodes and returns
// how long that took from the call.
func (c *galeraCluster) waitSize(g *galeraNode, size int, limit time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if g.status("wsrep_cluster_size") == strconv.Itoa(size) {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("galera node %d did not see a cluster of %d within %s", g.n, size, limit)
	return 0
}

var recovered = regexp.MustCompile(`WSREP: Recovered position: ([0-9a-f-]+:-?[0-9]+)`)

// kill SIGKILLs node g and starts it again the way that rejoins by IST:
// first once with --wsrep-recover (a killed node's grastate says seqno
// -1), then with --wsrep-start-position from its output and the full
// cluster address. It returns when the node is Synced in a cluster of
// three again.
func (c *galeraCluster) kill(g *galeraNode) (rejoin time.Duration) {
	t := c.t
	t.Helper()
	start := time.Now()
	other := c.nodes[g.n%3]
	var logAt int64
	if fi, err := os.Stat(filepath.Join(other.dir, "error.log")); err == nil {
		logAt = fi.Size()
	}
	g.signal(syscall.SIGKILL)
	var all []string
	for _, o := range c.nodes {
		all = append(all, fmt.Sprintf("127.0.0.1:%d", o.gport))
	}
	cluster := "--wsrep-cluster-address=gcomm://" + strings.Join(all, ",")
	rec := exec.Command(g.bin, append(append([]string{}, g.base...), cluster, "--wsrep-recover", "--log-error="+filepath.Join(g.dir, "recover.log"))...)
	rec.Env = g.env
	out, err := rec.CombinedOutput()
	b, _ := os.ReadFile(filepath.Join(g.dir, "recover.log"))
	if err != nil {
		t.Fatalf("node %d --wsrep-recover: %v\n%s\n%s", g.n, err, out, b)
	}
	m := recovered.FindAllSubmatch(b, -1)
	if len(m) == 0 {
		t.Fatalf("node %d --wsrep-recover printed no position:\n%s", g.n, b)
	}
	pos := string(m[len(m)-1][1])
	g.args = append(append([]string{}, g.base...), cluster, "--wsrep-start-position="+pos)
	// Start it again once the others have dropped its dead instance
	// (Galera's suspect timeout, ~5 s). Started sooner, the new instance
	// joins while the old one is being evicted, and the two membership
	// changes merged stalled every commit on the surviving nodes ~13 s
	// instead of ~6 s (the suspect timeout plus a failed view install):
	// longer than a sender's 10 s timeout. A service manager's restart
	// delay does the same in production (docs/SCALING.md, "Database").
	evicted := c.waitSize(other, 2, time.Minute)
	restarted := time.Since(start)
	g.start(t)
	c.waitSynced(g, 3, 3*time.Minute)
	for _, o := range c.nodes {
		c.waitSynced(o, 3, time.Minute)
	}
	t.Logf("  node %d dropped by the others %.1fs after the kill, started again at %.1fs", g.n, evicted.Seconds(), restarted.Seconds())
	if os.Getenv("LEADPIPE_GALERA_VIEWS") != "" {
		t.Logf("  membership changes in node %d's log:", other.n)
		lb, _ := os.ReadFile(filepath.Join(other.dir, "error.log"))
		for _, line := range strings.Split(string(lb[min(logAt, int64(len(lb))):]), "\n") {
			if viewLine.MatchString(line) {
				t.Logf("    node %d: %s", other.n, line[:min(len(line), 160)])
			}
		}
	}
	b, _ = os.ReadFile(filepath.Join(g.dir, "error.log"))
	how := "SST"
	if strings.Contains(string(b[max(0, len(b)-200000):]), "IST received") {
		how = "IST"
	}
	t.Logf("  node %d restarted at position %s, rejoined by %s, Synced %.1fs after the kill", g.n, pos, how, time.Since(start).Seconds())
	return time.Since(start)
}

// ingestLog records every webhook POST's outcome, for the seconds a kill
// cost (answers other than 2xx).
type ingestLog struct {
	mu    sync.Mutex
	fails []time.Time
	slow  []time.Duration
	all   int
	// late: the answers that took over a second, for where a kill's
	// latency goes.
	late []lateAnswer
}

// lateAnswer is one webhook attempt answered (or not) after more than a
// second.
type lateAnswer struct {
	start   time.Time
	took    time.Duration
	host    string
	outcome string
}

// alternating is the load balancer in front of the two servers: each
// request goes to the next one, and its outcome is logged.
type alternating struct {
	hosts []string
	mu    sync.Mutex
	n     int
	log   *ingestLog
}

func (a *alternating) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	host := a.hosts[a.n%len(a.hosts)]
	a.n++
	a.mu.Unlock()
	r := req.Clone(req.Context())
	r.URL.Host = host
	r.Host = host
	start := time.Now()
	res, err := http.DefaultTransport.RoundTrip(r)
	if strings.HasPrefix(req.URL.Path, "/hooks/") {
		a.log.mu.Lock()
		a.log.all++
		if err != nil || res.StatusCode/100 != 2 {
			a.log.fails = append(a.log.fails, time.Now())
		}
		took := time.Since(start)
		a.log.slow = append(a.log.slow, took)
		if took > time.Second {
			outcome := ""
			if err != nil {
				outcome = err.Error()
			} else {
				outcome = res.Status
			}
			a.log.late = append(a.log.late, lateAnswer{start: start, took: took, host: host, outcome: outcome})
		}
		a.log.mu.Unlock()
	}
	return res, err
}

// logLate logs the attempts started after since that took over a
// second, each with its start relative to since.
func (l *ingestLog) logLate(t *testing.T, since time.Time) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int
	for _, a := range l.late {
		if a.start.Before(since.Add(-10 * time.Second)) {
			continue
		}
		n++
		if n <= 20 {
			t.Logf("    slow answer: sent at %+.1fs, %.1fs, %s: %s", a.start.Sub(since).Seconds(), a.took.Seconds(), a.host, a.outcome)
		}
	}
	if n > 20 {
		t.Logf("    … %d slow answers in all", n)
	}
}

// failedSeconds: the distinct seconds after since in which some delivery
// was not answered 2xx, and the span from the first to the last.
func (l *ingestLog) failedSeconds(since time.Time) (n int, span time.Duration, attempts int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	secs := map[int64]bool{}
	var first, last time.Time
	for _, f := range l.fails {
		if f.Before(since) {
			continue
		}
		attempts++
		secs[f.Unix()] = true
		if first.IsZero() {
			first = f
		}
		last = f
	}
	if attempts == 0 {
		return 0, 0, 0
	}
	return len(secs), last.Sub(first), attempts
}

// galeraSuite is the fault suite's sender and invariants, with two
// servers and a worker on three nodes.
type galeraSuite struct {
	*suite
	cluster *galeraCluster
	server2 *proc
	log     *ingestLog
}

func startLeadpipeOn(t *testing.T, s *suite, dsns [3]string, dir string) (*proc, []string) {
	t.Helper()
	serverBin, workerBin := binaries(t)
	ports := []int{freePort(t), freePort(t)}
	hosts := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	s.base = "http://" + hosts[0]
	s.server = newLeadpipe(t, "server1", serverBin, s.leadpipeEnv(hosts[0], dsns[0]), dir)
	server2 := newLeadpipe(t, "server2", serverBin, s.leadpipeEnv(hosts[1], dsns[1]), dir)
	s.worker = newLeadpipe(t, "worker", workerBin, s.leadpipeEnv("127.0.0.1:0", dsns[2]), dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server1 log tail:\n%s", s.server.tail(30))
			t.Logf("server2 log tail:\n%s", server2.tail(30))
			t.Logf("worker log tail:\n%s", s.worker.tail(30))
		}
	})
	// All three at once: the migrations must run once cluster-wide.
	s.server.start(t)
	server2.start(t)
	s.worker.start(t)
	waitReady(t, "http://"+hosts[0], 3*time.Minute)
	waitReady(t, "http://"+hosts[1], 3*time.Minute)
	return server2, hosts
}

func galeraScale() (string, scale, int) {
	if os.Getenv("LEADPIPE_GALERA") == "long" {
		return "long", scale{perPhase: 1500, keysPerPhase: 30, senders: 16, settle: 3 * time.Minute}, 3
	}
	return "short", scale{perPhase: 300, keysPerPhase: 8, senders: 8, settle: 2 * time.Minute}, 1
}

func TestGalera(t *testing.T) {
	mode, sc, kills := galeraScale()
	t.Logf("galera suite, %s version: %d deliveries and %d Idempotency-Key POSTs per kill, %d kill(s)", mode, sc.perPhase, sc.keysPerPhase, kills)
	const dbName = "leadpipe_galera"
	cluster := startGalera(t)
	certificationConflicts(t, cluster)
	readsWaitForHeldApplier(t, cluster)
	s := newSuite(t, sc)
	s.redis = redistest.Single(t)
	// Server 1 prefers node 1, server 2 node 2, the worker node 3.
	binaries(t)
	migStart := time.Now()
	// LEADPIPE_GALERA_SYNC_WAIT=0 is the control of the held-applier
	// phase: the worker's sessions read without waiting for their node,
	// as before db.Open set wsrep_sync_wait, and the phase must fail.
	workerDSN := cluster.dsn(2, dbName)
	if v := os.Getenv("LEADPIPE_GALERA_SYNC_WAIT"); v != "" {
		workerDSN += "&wsrep_sync_wait=" + v
		t.Logf("galera: the worker's DSN sets wsrep_sync_wait=%s (control run)", v)
	}
	server2, hosts := startLeadpipeOn(t, s, [3]string{cluster.dsn(0, dbName), cluster.dsn(1, dbName), workerDSN}, t.TempDir())
	t.Logf("galera: two servers and a worker started at once, ready (migrated) in %.1fs", time.Since(migStart).Seconds())
	g := &galeraSuite{suite: s, cluster: cluster, server2: server2, log: &ingestLog{}}
	old := client
	client = &http.Client{Timeout: 10 * time.Second, Transport: &alternating{hosts: hosts, log: g.log}}
	t.Cleanup(func() { client = old })
	var err error
	s.check, err = db.Open(context.Background(), cluster.dsn(0, dbName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.check.Close() })
	g.migratedOnce(dbName)

	s.provision()
	s.humanEdits(10)
	// The worker's node lags: first under a backup's lock (the case
	// docs/SCALING.md "Database" names), then behind a held lock that
	// leaves the worker's reads free to run.
	g.heldApplier(cluster.nodes[2], byBackup, 4*time.Second)
	g.heldApplier(cluster.nodes[2], byTableLock, 4*time.Second)
	if t.Failed() {
		return
	}
	// Server 2's node first, then the worker's, then server 1's (the
	// bootstrap node).
	order := []int{1, 2, 0}
	for k := 0; k < kills; k++ {
		node := cluster.nodes[order[k%3]]
		var killed time.Time
		var rejoin time.Duration
		start := time.Now()
		name := fmt.Sprintf("galera node %d SIGKILLed and restarted", node.n)
		s.phase(name, func() {
			killed = time.Now()
			rejoin = cluster.kill(node)
		})
		secs, span, failed := g.log.failedSeconds(killed)
		t.Logf("%-42s ok in %5.1fs  (acknowledged so far: %d deliveries, %d keys; sender retries %d)",
			name, time.Since(start).Seconds(), len(s.acks), len(s.keyLeads), s.retries)
		t.Logf("  kill cost: ingest non-2xx in %d distinct seconds (%d attempts, first to last %.1fs); node Synced again %.1fs after the kill",
			secs, failed, span.Seconds(), rejoin.Seconds())
		g.log.logLate(t, killed)
		g.nodesAgree(dbName)
		if t.Failed() {
			return
		}
	}
	g.log.mu.Lock()
	var worst time.Duration
	for _, d := range g.log.slow {
		worst = max(worst, d)
	}
	t.Logf("galera: %d webhook attempts, slowest answer %.1fs", g.log.all, worst.Seconds())
	g.log.mu.Unlock()
}

// migratedOnce: servers and worker started at once on three nodes ran
// each migration exactly once.
func (g *galeraSuite) migratedOnce(dbName string) {
	t := g.t
	var dups int
	if err := g.check.Get(&dups, `SELECT COUNT(*) FROM (SELECT version_id FROM goose_db_version GROUP BY version_id HAVING COUNT(*) > 1) x`); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Errorf("%d migrations recorded more than once", dups)
	}
}

// nodesAgree: the workers have folded the servers' duplicate log, and
// every node holds the same deliveries, duplicate counts and leads.
func (g *galeraSuite) nodesAgree(dbName string) {
	t := g.t
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var logged int
		if err := g.check.Get(&logged, `SELECT COUNT(*) FROM delivery_dup_log`); err != nil {
			t.Fatal(err)
		}
		if logged == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d duplicate log rows still unfolded after 20 s", logged)
			break
		}
	}
	var want string
	for _, n := range g.cluster.nodes {
		d, err := sqlx.Open("mysql", fmt.Sprintf("root@tcp(%s)/%s?wsrep_sync_wait=1", n.addr(), dbName))
		if err != nil {
			t.Fatal(err)
		}
		var deliveries, leads, processed, dups int
		err = d.QueryRow(`SELECT (SELECT COUNT(*) FROM deliveries), (SELECT COUNT(*) FROM leads), (SELECT COUNT(*) FROM deliveries WHERE state = 'processed'),
			(SELECT IFNULL(SUM(dup_count), 0) FROM deliveries)`).Scan(&deliveries, &leads, &processed, &dups)
		d.Close()
		if err != nil {
			t.Errorf("node %d: %v", n.n, err)
			continue
		}
		got := fmt.Sprintf("%d deliveries (%d processed, %d repeats counted), %d leads", deliveries, processed, dups, leads)
		if want == "" {
			want = got
			t.Logf("  every node: %s", got)
		} else if got != want {
			t.Errorf("node %d holds %s, node 1 %s", n.n, got, want)
		}
	}
}

// TestGaleraIngestCost measures ingest on the three-node cluster against
// one plain MariaDB in the same sitting: the same two servers and worker,
// the same retrying senders, loads alternating between the two set-ups.
// Run by LEADPIPE_GALERA=cost (docs/BENCHMARKS.md, "Galera").
func TestGaleraIngestCost(t *testing.T) {
	if os.Getenv("LEADPIPE_GALERA") != "cost" {
		t.Skip("LEADPIPE_GALERA=cost runs the comparison")
	}
	n, _ := strconv.Atoi(os.Getenv("LEADPIPE_GALERA_N"))
	if n <= 0 {
		n = 3000
	}
	const senders = 16
	sc := scale{perPhase: n, senders: senders, settle: 5 * time.Minute}
	type setup struct {
		name   string
		s      *suite
		client *http.Client
	}
	old := client
	t.Cleanup(func() { client = old })

	plain := newSuite(t, sc)
	mdb := startMariaDB(t)
	plain.redis = redistest.Single(t)
	dsn := mdb.dsn("leadpipe_cost")
	_, hostsP := startLeadpipeOn(t, plain, [3]string{dsn, dsn, dsn}, t.TempDir())
	cluster := startGalera(t)
	gal := newSuite(t, sc)
	gal.redis = redistest.Single(t)
	_, hostsG := startLeadpipeOn(t, gal, [3]string{cluster.dsn(0, "leadpipe_cost"), cluster.dsn(1, "leadpipe_cost"), cluster.dsn(2, "leadpipe_cost")}, t.TempDir())
	setups := []*setup{
		{name: "one plain MariaDB", s: plain, client: &http.Client{Timeout: 10 * time.Second, Transport: &alternating{hosts: hostsP, log: &ingestLog{}}}},
		{name: "three Galera nodes", s: gal, client: &http.Client{Timeout: 10 * time.Second, Transport: &alternating{hosts: hostsG, log: &ingestLog{}}}},
	}
	var err error
	if plain.check, err = db.Open(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	if gal.check, err = db.Open(context.Background(), cluster.dsn(0, "leadpipe_cost")); err != nil {
		t.Fatal(err)
	}
	for _, st := range setups {
		client = st.client
		st.s.provision()
	}
	for round := 1; round <= 3; round++ {
		for _, st := range setups {
			client = st.client
			s := st.s
			first := s.next
			s.next += n
			work := make(chan int)
			var wg sync.WaitGroup
			start := time.Now()
			for w := 0; w < senders; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range work {
						s.deliver(i)
					}
				}()
			}
			for i := first; i < first+n; i++ {
				work <- i
			}
			close(work)
			wg.Wait()
			acked := time.Since(start)
			s.settled(st.name)
			done := time.Since(start)
			l := st.client.Transport.(*alternating).log
			l.mu.Lock()
			var lat []time.Duration
			lat = append(lat, l.slow...)
			l.slow = l.slow[:0]
			l.mu.Unlock()
			slices.Sort(lat)
			p := func(q float64) float64 { return lat[int(q*float64(len(lat)-1))].Seconds() * 1000 }
			t.Logf("round %d, %-18s %d deliveries (+%d sender duplicates), %d senders: acknowledged in %.1fs (%.0f/s, p50 %.1f ms, p99 %.1f ms), all processed in %.1fs (%.0f/s)",
				round, st.name, n, n/5, senders, acked.Seconds(), float64(n+n/5)/acked.Seconds(), p(0.5), p(0.99), done.Seconds(), float64(n)/done.Seconds())
			s.invariants(fmt.Sprintf("round %d on %s", round, st.name))
		}
	}
}

// certificationConflicts: transactions on two nodes updating one row at
// once lose certification (error 1213 at COMMIT); db.InTx re-runs them,
// so every increment lands exactly once.
func certificationConflicts(t *testing.T, c *galeraCluster) {
	t.Helper()
	ctx := context.Background()
	const workers, each = 6, 40
	var pools []*sqlx.DB
	for i := 0; i < 2; i++ {
		d, err := db.Open(ctx, fmt.Sprintf("root@tcp(%s)/galera_conflicts?parseTime=true&loc=UTC", c.nodes[i].addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		pools = append(pools, d)
	}
	if _, err := pools[0].Exec(`CREATE TABLE IF NOT EXISTS counter (id INT NOT NULL PRIMARY KEY, n INT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pools[0].Exec(`INSERT INTO counter (id, n) VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	var conflicts, failed int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(d *sqlx.DB) {
			defer wg.Done()
			for k := 0; k < each; k++ {
				err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
					var n int
					if err := tx.Get(&n, `SELECT n FROM counter WHERE id = 1 FOR UPDATE`); err != nil {
						return err
					}
					_, err := tx.Exec(`UPDATE counter SET n = ? WHERE id = 1`, n+1)
					return err
				})
				mu.Lock()
				if err != nil {
					failed++
					if db.Retryable(err) {
						conflicts++
					}
				}
				mu.Unlock()
			}
		}(pools[w%2])
	}
	wg.Wait()
	var n int
	if err := pools[1].Get(&n, `SELECT n FROM counter WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if failed > 0 || n != workers*each {
		t.Errorf("certification conflicts: %d of %d increments failed (%d still conflicting after the retries); counter %d", failed, workers*each, conflicts, n)
	}
	var aborted int
	for _, d := range pools {
		var v int
		_ = d.Get(&v, `SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')`)
		aborted += v
	}
	t.Logf("galera: %d increments of one row on two nodes at once, counter %d; %d transactions aborted by the cluster (certification failures and brute-force aborts), each re-run by db.InTx", workers*each, n, aborted)
}

// readsWaitForHeldApplier: node 3's applier held by FLUSH TABLES WITH
// READ LOCK (what a backup takes) lags the cluster. A session without
// wsrep_sync_wait reads stale rows there; a Leadpipe session (db.Open
// sets wsrep_sync_wait=1) reads a row committed through node 1: its read
// waits until the lock is released and the node has applied the write.
func readsWaitForHeldApplier(t *testing.T, c *galeraCluster) {
	t.Helper()
	ctx := context.Background()
	dsn := func(i int, extra string) string {
		return fmt.Sprintf("root@tcp(%s)/galera_conflicts?parseTime=true&loc=UTC%s", c.nodes[i].addr(), extra)
	}
	w, err := db.Open(ctx, dsn(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	leadpipe, err := db.Open(ctx, dsn(2, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer leadpipe.Close()
	raw, err := sqlx.Open("mysql", dsn(2, "&wsrep_sync_wait=0"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var wait int
	if err := leadpipe.Get(&wait, `SELECT @@SESSION.wsrep_sync_wait`); err != nil || wait != 1 {
		t.Fatalf("a Leadpipe session on a Galera node has wsrep_sync_wait %d (%v), want 1", wait, err)
	}
	lock, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, `FLUSH TABLES WITH READ LOCK`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(`INSERT INTO counter (id, n) VALUES (2, 7)`); err != nil {
		t.Fatal(err)
	}
	var stale int
	if err := raw.Get(&stale, `SELECT COUNT(*) FROM counter WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n    int
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		var n int
		err := leadpipe.Get(&n, `SELECT n FROM counter WHERE id = 2`)
		done <- result{n, err, time.Since(start)}
	}()
	const hold = 2 * time.Second
	select {
	case r := <-done:
		t.Errorf("with node 3's applier held, the Leadpipe read returned after %s (n %d, %v): it should wait", r.took, r.n, r.err)
	case <-time.After(hold):
	}
	if _, err := lock.ExecContext(ctx, `UNLOCK TABLES`); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.n != 7 {
			t.Errorf("after the applier caught up the Leadpipe read got n %d (%v), want 7", r.n, r.err)
		}
		t.Logf("galera: node 3's applier held %s by FLUSH TABLES WITH READ LOCK: a read without wsrep_sync_wait saw %d of 1 new rows; the Leadpipe read (wsrep_sync_wait=1) waited %.1fs and saw it", hold, stale, r.took.Seconds())
	case <-time.After(time.Minute):
		t.Errorf("the Leadpipe read did not return within a minute of UNLOCK TABLES")
	}
}

// An applier hold: how a node comes to lag the cluster.
type applierHold int

const (
	// byBackup: FLUSH TABLES WITH READ LOCK, what a backup takes. The
	// node desyncs and pauses applying; its own writes and every
	// SELECT … FOR UPDATE (the worker's) wait for the lock as well.
	byBackup applierHold = iota
	// byTableLock: the node desynced (wsrep_desync, as a backup tool
	// does) and a write set stuck behind a long-held lock on an unrelated
	// table (LOCK TABLES … WRITE). Write sets apply in order, so every
	// delivery committed after it waits too, while the worker's reads of
	// deliveries are not blocked: a read that does not wait for the node
	// finds them missing.
	byTableLock
)

func (h applierHold) String() string {
	if h == byBackup {
		return "FLUSH TABLES WITH READ LOCK"
	}
	return "a write set behind LOCK TABLES"
}

// heldApplier is the failure mode of a worker reading through a node
// that lags the cluster: the retry storm goes on through the servers on
// nodes 1 and 2 while the worker's node (3) has its applier held for
// hold. Write sets certified meanwhile queue on node 3 unapplied; the
// worker, told of each delivery by a task enqueued after its commit on
// another node, must not find it missing (and mark it failed, losing its
// lead): its reads wait for the node (wsrep_sync_wait). The phase's
// invariants then require every acknowledged delivery processed into one
// lead per natural key, and the worker's log no "delivery not found".
func (g *galeraSuite) heldApplier(node *galeraNode, how applierHold, hold time.Duration) {
	t := g.t
	t.Helper()
	ctx := context.Background()
	raw, err := sqlx.Open("mysql", fmt.Sprintf("root@tcp(%s)/galera_conflicts?wsrep_sync_wait=0", node.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// The write set that gets stuck comes through node 1.
	other, err := sqlx.Open("mysql", fmt.Sprintf("root@tcp(%s)/galera_conflicts", g.cluster.nodes[0].addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`CREATE TABLE IF NOT EXISTS applier_hold (id BIGINT NOT NULL PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("galera node %d's applier held %s by %s", node.n, hold, how)
	var before, during, lagging, queued int
	var state string
	missingBefore := g.worker.count("delivery not found")
	start := time.Now()
	g.phase(name, func() {
		lock, err := raw.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		g.mu.Lock()
		before = len(g.acks)
		g.mu.Unlock()
		var release []string
		switch how {
		case byBackup:
			if _, err := lock.ExecContext(ctx, `FLUSH TABLES WITH READ LOCK`); err != nil {
				t.Fatal(err)
			}
			release = []string{`UNLOCK TABLES`}
		case byTableLock:
			for _, q := range []string{`SET GLOBAL wsrep_desync = ON`, `LOCK TABLES applier_hold WRITE`} {
				if _, err := lock.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			release = []string{`UNLOCK TABLES`, `SET GLOBAL wsrep_desync = OFF`}
			if _, err := other.Exec(`INSERT INTO applier_hold (id) VALUES (?)`, time.Now().UnixNano()); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(hold)
		state = node.status("wsrep_local_state_comment")
		queued, _ = strconv.Atoi(node.status("wsrep_local_recv_queue"))
		var here, there int
		_ = raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM leadpipe_galera.deliveries`).Scan(&here) // another session: LOCK TABLES allows only its tables
		_ = g.check.Get(&there, `SELECT COUNT(*) FROM deliveries`)
		lagging = there - here
		g.mu.Lock()
		during = len(g.acks) - before
		g.mu.Unlock()
		for _, q := range release {
			if _, err := lock.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Logf("%-42s ok in %5.1fs", name, time.Since(start).Seconds())
	t.Logf("  while held: node %d %s, %d write sets queued, %d deliveries committed elsewhere not yet applied there; %d deliveries acknowledged meanwhile",
		node.n, state, queued, lagging, during)
	if lagging == 0 {
		t.Errorf("node %d's applier was not held: it lagged by no delivery", node.n)
	}
	var failed int
	if err := g.check.Get(&failed, `SELECT COUNT(*) FROM deliveries WHERE state = 'failed'`); err != nil {
		t.Fatal(err)
	}
	if failed != 0 {
		t.Errorf("%d deliveries failed while node %d lagged", failed, node.n)
	}
	// A delivery the worker did not find is marked failed only if the
	// node applied it by then; otherwise the sweeper enqueues it again and
	// the invariants hold. The worker's log tells either way.
	if n := g.worker.count("delivery not found") - missingBefore; n != 0 {
		t.Errorf("the worker on node %d found acknowledged deliveries missing (%d task failures \"delivery not found\")", node.n, n)
	}
	for _, n := range g.cluster.nodes {
		g.cluster.waitSynced(n, 3, time.Minute)
	}
}

// count returns how many lines of the process's log contain s.
func (p *proc) count(s string) int {
	b, _ := os.ReadFile(p.log)
	return strings.Count(string(b), s)
}
