// Command benchreplicas measures ingest with one and with two server
// processes (the real cmd/server binary, LEADPIPE_WORKER=off) in front of
// one MariaDB/MySQL: signed `standard` deliveries, 10 % duplicates, from
// concurrent keep-alive senders spread round-robin over the servers as a
// load balancer would. The two set-ups alternate in rounds so a slow
// minute of a shared machine weighs on both alike, and it prints
// acknowledged deliveries/s for each with p50/p99 and the ratio.
//
//	go run ./cmd/benchreplicas -d 10s -rounds 3
//
// It builds cmd/server, makes (and drops) a scratch database, and flushes
// the Redis database it is given (default 13).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"leadpipe/internal/db"
	"leadpipe/internal/webhooks/kinds"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchreplicas:", err)
		os.Exit(1)
	}
}

func run() error {
	dsn := flag.String("dsn", envOr("LEADPIPE_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/leadpipe?parseTime=true&loc=UTC"), "MySQL server (the database name is replaced by a scratch one)")
	redisAddr := flag.String("redis", envOr("LEADPIPE_REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	redisDB := flag.Int("redis-db", 13, "Redis database number to use (flushed)")
	conns := flag.Int("c", 16, "concurrent senders")
	dur := flag.Duration("d", 10*time.Second, "duration of each set-up per round")
	rounds := flag.Int("rounds", 3, "rounds (1 server, 2 servers, 1 server, ...)")
	dupFrac := flag.Float64("dup", 0.10, "fraction of duplicate deliveries")
	flag.Parse()
	ctx := context.Background()

	cfg, err := mysql.ParseDSN(*dsn)
	if err != nil {
		return err
	}
	cfg.DBName = fmt.Sprintf("lp_bench_replicas_%d", time.Now().UnixNano()%1e9)
	benchDSN := cfg.FormatDSN()
	defer db.DropDatabase(context.Background(), benchDSN)
	rc := redis.NewClient(&redis.Options{Addr: *redisAddr, DB: *redisDB})
	if err := rc.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	rc.Close()

	dir, err := os.MkdirTemp("", "lp-benchreplicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "server")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/server").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %v\n%s", err, out)
	}
	const admin = "bench-admin-token-0123456789"
	var servers []*exec.Cmd
	defer func() {
		for _, c := range servers {
			_ = c.Process.Kill()
			_, _ = c.Process.Wait()
		}
	}()
	var addrs []string
	for i := 0; i < 2; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "LEADPIPE_ADDR="+addr, "LEADPIPE_MYSQL_DSN="+benchDSN,
			"LEADPIPE_REDIS_URL="+fmt.Sprintf("redis://%s/%d", *redisAddr, *redisDB), "LEADPIPE_WORKER=off",
			"LEADPIPE_ADMIN_TOKEN="+admin, "LEADPIPE_SECRET_KEY=YmVuY2gta2V5LWJlbmNoLWtleS1iZW5jaC1rZXktMzI=",
			"LEADPIPE_BASE_URL=http://"+addr)
		devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		cmd.Stdout, cmd.Stderr = devnull, devnull
		if err := cmd.Start(); err != nil {
			return err
		}
		servers = append(servers, cmd)
		addrs = append(addrs, addr)
		if err := waitReady("http://"+addr, 120*time.Second); err != nil {
			return err
		}
	}

	// Tenant and source through the first server's API.
	var ten struct {
		Token string `json:"api_token"`
	}
	if err := postJSON("http://"+addrs[0]+"/api/admin/v1/tenants", admin, map[string]string{"slug": "bench", "name": "Bench",
		"admin_email": "bench@bench.test", "admin_password": "bench-password-1"}, &ten); err != nil {
		return err
	}
	var src struct {
		Secret string `json:"secret"`
	}
	if err := postJSON("http://"+addrs[0]+"/api/v1/sources", ten.Token, map[string]string{"slug": "landing", "name": "Landing", "kind": "standard"}, &src); err != nil {
		return err
	}

	// Pre-signed deliveries, so senders spend no CPU on HMAC.
	type req struct {
		h    http.Header
		body []byte
	}
	est := int(8000*dur.Seconds())*(*rounds)*2 + 1000
	reqs := make([]req, est)
	ts := time.Now()
	for i := range reqs {
		n := i
		if float64(i%100) < *dupFrac*100 && i > 0 {
			n = i - 1 - (i % 50)
		}
		id := fmt.Sprintf("msg_%d", n)
		body := kinds.SampleBody(kinds.Standard, id, fmt.Sprintf("contact_%d", n), kinds.Lead{Email: fmt.Sprintf("u%d@example.com", n), Name: "Bench"}, ts)
		h, b, err := kinds.Sign(kinds.Standard, nil, src.Secret, id, body, ts)
		if err != nil {
			return err
		}
		reqs[i] = req{h, b}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conns, MaxIdleConns: 4 * *conns}, Timeout: 30 * time.Second}
	var next atomic.Int64
	phase := func(n int) (float64, time.Duration, time.Duration, error) {
		var ok atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		var firstErr error
		deadline := time.Now().Add(*dur)
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < *conns; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for time.Now().Before(deadline) {
					i := int(next.Add(1) - 1)
					if i >= len(reqs) {
						return
					}
					url := "http://" + addrs[i%n] + "/hooks/bench/landing"
					hr, _ := http.NewRequest("POST", url, bytes.NewReader(reqs[i].body))
					for k, v := range reqs[i].h {
						hr.Header[k] = v
					}
					t0 := time.Now()
					res, err := client.Do(hr)
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						continue
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode == 200 {
						ok.Add(1)
						mine = append(mine, time.Since(t0))
					} else {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("status %d", res.StatusCode)
						}
						mu.Unlock()
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		el := time.Since(start)
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		if len(lat) == 0 {
			return 0, 0, 0, fmt.Errorf("no acknowledged deliveries: %v", firstErr)
		}
		return float64(ok.Load()) / el.Seconds(), lat[len(lat)/2], lat[len(lat)*99/100], firstErr
	}
	fmt.Printf("benchreplicas: %d senders, %s per set-up and round, %d rounds, %.0f%% duplicates, %d CPUs\n", *conns, *dur, *rounds, *dupFrac*100, numCPU())
	var one, two []float64
	for r := 1; r <= *rounds; r++ {
		for _, n := range []int{1, 2} {
			rate, p50, p99, err := phase(n)
			if err != nil && rate == 0 {
				return err
			}
			fmt.Printf("round %d  %d server(s): %7.0f acknowledged/s  p50 %6.2f ms  p99 %6.2f ms\n", r, n, rate, ms(p50), ms(p99))
			if n == 1 {
				one = append(one, rate)
			} else {
				two = append(two, rate)
			}
		}
	}
	m1, m2 := median(one), median(two)
	fmt.Printf("median: 1 server %.0f/s, 2 servers %.0f/s, ratio 2/1 = %.2f\n", m1, m2, m2/m1)
	return nil
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func waitReady(base string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s/readyz not ready within %s", base, limit)
}

func postJSON(url, token string, body any, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, res.StatusCode, rb)
	}
	return json.Unmarshal(rb, out)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
