package main

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// phase is one side of the comparison, summed over its rounds.
type phase struct {
	name string
	fn   func() error
	n    int64
	lat  []time.Duration
	cpu  cpu
	per  []float64 // rate of each round

	// The requests the phase sends, in order: fn takes the next one with
	// take. Before each round the feed signs ahead what the round may need.
	feed *feed
	seq  atomic.Int64
}

// take is the index of the phase's next request.
func (p *phase) take() int { return int(p.seq.Add(1) - 1) }

// best is the phase's best rate of a round so far (0 before its first).
func (p *phase) best() float64 {
	b := 0.0
	for _, r := range p.per {
		b = max(b, r)
	}
	return b
}

// prepare signs ahead the requests a round of d may need; anyRate is the
// best rate any phase of the run has reached.
func (p *phase) prepare(anyRate float64, d time.Duration) error {
	if p.feed == nil {
		return nil
	}
	return p.feed.ensure(int(p.seq.Load()), estimate(p.best(), anyRate, d))
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

// hammer runs fn from n goroutines for d and returns successes and latencies.
func hammer(n int, d time.Duration, fn func() error) (int64, []time.Duration) {
	var count atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error // under mu
	var errs atomic.Int64
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
					if errs.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
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
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "%d requests failed, the first: %v\n", errs.Load(), firstErr)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return count.Load(), all
}

func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)*p/100, len(lat)-1)].Round(10 * time.Microsecond)
}

// cpu is the CPU time used so far by this process (server and load
// generator alike in the in-process modes), the watched child processes,
// MariaDB and Redis, read from /proc (Linux only; zeros elsewhere), to
// show where each request's cost goes.
type cpu map[string]time.Duration

// watched is a child process whose CPU time is read too (pid "" while
// it is not running).
type watched struct {
	name string
	pid  func() string
}

// cpuOrder is the order in which the processes are printed.
var cpuOrder = []string{"self", "server", "worker", "mariadbd", "redis-server"}

// servers are the MySQL and Redis server processes of this run, found by
// their listening ports once at start (findServers); other MariaDB and
// Redis processes on the machine are not counted.
var servers []watched

// findServers finds the processes listening on the run's MySQL and Redis
// ports (none when they are not local).
func findServers(mysqlAddr, redisAddr string) {
	servers = nil
	for _, s := range []struct{ name, addr string }{{"mariadbd", mysqlAddr}, {"redis-server", redisAddr}} {
		if pid := pidListening(s.addr); pid != "" {
			servers = append(servers, watched{s.name, func() string { return pid }})
		}
	}
}

func cpuSnapshot(children ...watched) cpu {
	c := cpu{"self": procCPU("self")}
	for _, w := range append(children, servers...) {
		if pid := w.pid(); pid != "" {
			c[w.name] = procCPU(pid)
		} else {
			c[w.name] = 0
		}
	}
	return c
}

// per is each process's CPU time since before, per unit of n, and their
// total.
func (c cpu) per(before cpu, n int64) (map[string]time.Duration, time.Duration) {
	out := map[string]time.Duration{}
	var total time.Duration
	if n == 0 {
		return out, 0
	}
	for k, v := range c {
		d := (v - before[k]) / time.Duration(n)
		out[k] = d
		total += d
	}
	return out, total
}

func (c cpu) since(before cpu, n int64) string {
	if n == 0 {
		return "n/a"
	}
	each, total := c.per(before, n)
	var parts []string
	for _, k := range cpuOrder {
		if _, ok := c[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", k, each[k].Round(time.Microsecond)))
		}
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

// pidListening is the process listening on addr's TCP port, from
// /proc/net/tcp{,6} and the processes' socket descriptors ("" if none).
func pidListening(addr string) string {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return ""
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			if i := strings.LastIndexByte(fs[1], ':'); i >= 0 {
				if p, err := strconv.ParseInt(fs[1][i+1:], 16, 32); err == nil && int(p) == port {
					inodes["socket:["+fs[9]+"]"] = true
				}
			}
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		fds, err := os.ReadDir("/proc/" + p.Name() + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name()); err == nil && inodes[l] {
				return p.Name()
			}
		}
	}
	return ""
}

// machine is the whole machine's CPU time so far (/proc/stat): what was
// busy, what was idle, and what the hypervisor gave to other guests
// (steal). Two snapshots tell how loaded the machine was between them and
// whether it ran at its full speed: identical runs here cost 0.7–1.4 ms of
// CPU per lead in different minutes, and steal is the part of that a
// guest can see.
type machine struct {
	busy, idle, steal time.Duration
}

func machineSnapshot() machine {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machine{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	if len(f) < 9 || f[0] != "cpu" {
		return machine{}
	}
	var v [8]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * 10 * time.Millisecond } // USER_HZ = 100
	return machine{
		busy:  tick(v[0] + v[1] + v[2] + v[5] + v[6]),
		idle:  tick(v[3] + v[4]),
		steal: tick(v[7]),
	}
}

func (m machine) minus(o machine) machine {
	return machine{busy: m.busy - o.busy, idle: m.idle - o.idle, steal: m.steal - o.steal}
}

func (m machine) plus(o machine) machine {
	return machine{busy: m.busy + o.busy, idle: m.idle + o.idle, steal: m.steal + o.steal}
}

// since describes the machine between before and m, over wall time.
func (m machine) since(before machine, wall time.Duration) string {
	d := m.minus(before)
	busy, idle, steal := d.busy, d.idle, d.steal
	all := busy + idle + steal
	if all <= 0 || wall <= 0 {
		return "machine: n/a"
	}
	return fmt.Sprintf("machine: %.2f of %d cores busy, %.1f %% idle, %.1f %% stolen by the hypervisor",
		busy.Seconds()/wall.Seconds(), runtime.NumCPU(), 100*idle.Seconds()/all.Seconds(), 100*steal.Seconds()/all.Seconds())
}
