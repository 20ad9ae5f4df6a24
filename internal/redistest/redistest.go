// Package redistest starts private Redis topologies for tests from the
// machine's redis-server binary (Debian's redis-server; Sentinel is the
// same binary started with --sentinel, so the redis-sentinel package is not
// needed): a single server, a master + replica watched by three Sentinels,
// and a three-master Redis Cluster, each on free local ports in the test's
// own directory. Every process is ended by its PID when the test ends.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary finds redis-server or skips the test.
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		for _, c := range []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"} {
			if _, err := os.Stat(c); err == nil {
				return c
			}
		}
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	return p
}

// FreePort returns a TCP port nobody listens on right now. Cluster nodes
// also use port+10000 for their bus, so it checks that one too.
func FreePort(t testing.TB, withBus bool) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !withBus {
			return p
		}
		if p+10000 > 65535 {
			continue
		}
		if b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			b.Close()
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

// Server is one redis-server (or Sentinel) process.
type Server struct {
	Port int
	Dir  string
	args []string
	bin  string
	t    testing.TB

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Addr is 127.0.0.1:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Start launches the process and waits until it answers PING.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	log, err := os.OpenFile(filepath.Join(s.Dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		s.t.Fatalf("start %s: %v", s.bin, err)
	}
	log.Close()
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		time.Sleep(30 * time.Millisecond)
	}
	s.t.Fatalf("redis on %s did not answer within 10s; log in %s", s.Addr(), filepath.Join(s.Dir, "redis.log"))
}

// Stop ends the process with SIGTERM and waits for it (a no-op when it is
// not running).
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill ends the process with SIGKILL: no shutdown, no final save.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Running says whether the process was started and not ended.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	Signal(s.cmd, sig, 10*time.Second)
	s.cmd = nil
}

// Signal sends sig to a started process and waits for it to exit, killing
// it (SIGKILL) if it has not exited after grace.
func Signal(cmd *exec.Cmd, sig syscall.Signal, grace time.Duration) {
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Client is a plain client to this one process.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second})
}

func newServer(t testing.TB, bin string, port int, dir string, args ...string) *Server {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
		"--protected-mode", "no"}
	s := &Server{Port: port, Dir: dir, bin: bin, t: t, args: append(base, args...)}
	t.Cleanup(s.Kill)
	return s
}

// Single starts one private redis-server.
func Single(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	port := FreePort(t, false)
	s := newServer(t, bin, port, filepath.Join(t.TempDir(), "redis-"+strconv.Itoa(port)))
	s.Start()
	return s
}

// SentinelSet is a master, one replica and three Sentinels watching them.
type SentinelSet struct {
	MasterName string
	Nodes      []*Server // Nodes[0] starts as the master, Nodes[1] as its replica
	Sentinels  []*Server
	t          testing.TB
}

// StartSentinel starts the set and waits until every Sentinel knows the
// master, the replica and the other Sentinels.
func StartSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	bin := Binary(t)
	root := t.TempDir()
	ss := &SentinelSet{MasterName: "leadpipe", t: t}
	mport := FreePort(t, false)
	master := newServer(t, bin, mport, filepath.Join(root, "master"))
	master.Start()
	rport := FreePort(t, false)
	replica := newServer(t, bin, rport, filepath.Join(root, "replica"), "--replicaof", "127.0.0.1", strconv.Itoa(mport))
	replica.Start()
	ss.Nodes = []*Server{master, replica}
	for i := 0; i < 3; i++ {
		port := FreePort(t, false)
		dir := filepath.Join(root, fmt.Sprintf("sentinel-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "sentinel.conf")
		// Sentinel rewrites its config file: it must be its own and writable.
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 10000\n"+
			"sentinel parallel-syncs %s 1\n", port, dir, ss.MasterName, mport, ss.MasterName, ss.MasterName, ss.MasterName)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &Server{Port: port, Dir: dir, bin: bin, t: t, args: []string{conf, "--sentinel"}}
		t.Cleanup(s.Kill)
		s.Start()
		ss.Sentinels = append(ss.Sentinels, s)
	}
	ss.waitReplicaInSync(master, replica)
	ss.waitSentinelsAgree(master.Addr(), 2, 20*time.Second)
	return ss
}

// URL is the LEADPIPE_REDIS_URL of the set.
func (ss *SentinelSet) URL(db int) string {
	addrs := make([]string, len(ss.Sentinels))
	for i, s := range ss.Sentinels {
		addrs[i] = s.Addr()
	}
	return fmt.Sprintf("redis-sentinel://%s/%d?master=%s", strings.Join(addrs, ","), db, ss.MasterName)
}

// MasterAddr asks a Sentinel which node is the master now.
func (ss *SentinelSet) MasterAddr() string {
	for _, s := range ss.Sentinels {
		if !s.Running() {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		addr, err := c.GetMasterAddrByName(ctx, ss.MasterName).Result()
		cancel()
		c.Close()
		if err == nil && len(addr) == 2 {
			return net.JoinHostPort(addr[0], addr[1])
		}
	}
	return ""
}

// Master returns the node that is master now.
func (ss *SentinelSet) Master() *Server {
	addr := ss.MasterAddr()
	for _, n := range ss.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// KillMaster SIGKILLs the current master and waits until the Sentinels
// have promoted the replica (and every Sentinel reports it). It returns the
// time the failover took.
func (ss *SentinelSet) KillMaster(timeout time.Duration) time.Duration {
	ss.t.Helper()
	old := ss.Master()
	if old == nil {
		ss.t.Fatal("redistest: no master known to the Sentinels")
	}
	start := time.Now()
	old.Kill()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if addr := ss.MasterAddr(); addr != "" && addr != old.Addr() {
			if n := ss.nodeAt(addr); n != nil && isMaster(n) {
				return time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	ss.t.Fatalf("redistest: Sentinels did not fail over within %s", timeout)
	return 0
}

// RestartOld starts a killed node again; Sentinel turns it into a replica
// of the new master.
func (ss *SentinelSet) RestartOld() {
	for _, n := range ss.Nodes {
		if !n.Running() {
			n.Start()
		}
	}
}

func (ss *SentinelSet) nodeAt(addr string) *Server {
	for _, n := range ss.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

func isMaster(n *Server) bool {
	c := n.Client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "role:master")
}

func (ss *SentinelSet) waitReplicaInSync(master, replica *Server) {
	ss.t.Helper()
	c := replica.Client()
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ss.t.Fatalf("redistest: replica on %s never synced with %s", replica.Addr(), master.Addr())
}

// waitSentinelsAgree waits until every Sentinel names addr as master and
// sees the replica and the other Sentinels (a failover needs them).
func (ss *SentinelSet) waitSentinelsAgree(addr string, otherSentinels int, timeout time.Duration) {
	ss.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ok := true
		for _, s := range ss.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
			ctx := context.Background()
			m, err := c.Master(ctx, ss.MasterName).Result()
			c.Close()
			if err != nil || net.JoinHostPort(m["ip"], m["port"]) != addr || m["num-slaves"] != "1" ||
				m["num-other-sentinels"] != strconv.Itoa(otherSentinels) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ss.t.Fatalf("redistest: Sentinels did not agree on master %s within %s", addr, timeout)
}

// Cluster is a Redis Cluster of three masters (no replicas).
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts three cluster-enabled servers, assigns the 16384
// slots among them with redis-cli --cluster create, and waits until every
// node reports cluster_state:ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := Binary(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (apt-get install redis-tools)")
	}
	root := t.TempDir()
	cl := &Cluster{}
	var addrs []string
	for i := 0; i < 3; i++ {
		port := FreePort(t, true)
		dir := filepath.Join(root, fmt.Sprintf("node-%d", i))
		n := newServer(t, bin, port, dir, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "5000")
		n.Start()
		cl.Nodes = append(cl.Nodes, n)
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, n := range cl.Nodes {
			c := n.Client()
			info, err := c.ClusterInfo(context.Background()).Result()
			c.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			return cl
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("redistest: cluster never reached cluster_state:ok")
	return nil
}

// URL is the LEADPIPE_REDIS_URL of the cluster.
func (cl *Cluster) URL() string {
	addrs := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		addrs[i] = n.Addr()
	}
	return "redis-cluster://" + strings.Join(addrs, ",")
}
