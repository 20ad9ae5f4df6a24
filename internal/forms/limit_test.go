package forms

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"leadpipe/internal/ids"
)

// testRedis is a client of the test Redis (database 0: the form limits'
// keys are per form, and every test uses forms of its own).
func testRedis(t *testing.T, addr string) redis.UniversalClient {
	t.Helper()
	if addr == "" {
		addr = os.Getenv("LEADPIPE_TEST_REDIS_ADDR")
	}
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newShared is one server's limiter, closed (its last flush) at the end.
func newShared(t *testing.T, rdb redis.UniversalClient, log *slog.Logger) *sharedLimiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &sharedLimiter{rdb: rdb, log: log}
	t.Cleanup(func() { _ = l.close(context.Background()) })
	return l
}

func scard(t *testing.T, rdb redis.UniversalClient, key string) int64 {
	t.Helper()
	n, err := rdb.SCard(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// 200 submissions a minute from one address, on one server: exactly the
// address's budget passes (a small one decided in Redis almost from the
// start, a larger one mostly from memory), the rest are refused with the
// wait for the next minute, and Redis holds exactly the accepted ones.
func TestSharedLimiterPerAddress(t *testing.T) {
	rdb := testRedis(t, "")
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis: %v (is redis-server running?)", err)
	}
	now := time.Now()
	for _, perIP := range []int{10, 50} {
		l := newShared(t, rdb, nil)
		form := ids.New()
		passed := 0
		for i := 0; i < 200; i++ {
			ok, retry := l.allow(ctx, form, "203.0.113.7", "k"+strconv.Itoa(i), perIP, 600, now)
			if ok {
				passed++
			} else if retry <= 0 || retry > time.Minute {
				t.Fatalf("refused with Retry-After %v", retry)
			}
			if i%20 == 0 {
				time.Sleep(flushInterval / 4) // flushes happen in between
			}
		}
		if passed != perIP {
			t.Fatalf("per address %d: %d passed", perIP, passed)
		}
		if err := l.close(ctx); err != nil {
			t.Fatal(err)
		}
		fk, ak := limitKeys(form, "203.0.113.7", now.Unix()/60)
		if a, f := scard(t, rdb, ak), scard(t, rdb, fk); a != int64(perIP) || f != int64(perIP) {
			t.Fatalf("per address %d: Redis counts %d and %d", perIP, a, f)
		}
		if ttl := rdb.TTL(ctx, ak).Val(); ttl <= 0 || ttl > setTTL {
			t.Fatalf("the address's set expires in %v", ttl)
		}
	}
}

// A new minute starts with fresh budgets; what the last one counted from
// memory is still sent, and its sets are no longer held in memory.
func TestSharedLimiterNextMinute(t *testing.T) {
	rdb := testRedis(t, "")
	ctx := context.Background()
	l := newShared(t, rdb, nil)
	form, now := ids.New(), time.Unix(time.Now().Unix()/60*60+5, 0)
	passed := 0
	for i := 0; i < 30; i++ {
		if ok, _ := l.allow(ctx, form, "192.0.2.5", "k"+strconv.Itoa(i), 10, 600, now); ok {
			passed++
		}
	}
	if ok, _ := l.allow(ctx, form, "192.0.2.6", "last", 10, 600, now); !ok || passed != 10 {
		t.Fatalf("this minute: %d passed, then %v", passed, ok)
	}
	next := now.Add(time.Minute)
	if ok, _ := l.allow(ctx, form, "192.0.2.5", "k99", 10, 600, next); !ok {
		t.Fatal("the next minute was refused")
	}
	l.mu.Lock()
	held := len(l.sets)
	l.mu.Unlock()
	if held != 2 {
		t.Fatalf("%d sets held after the minute turned, want the new minute's 2", held)
	}
	if err := l.flush(ctx); err != nil {
		t.Fatal(err)
	}
	fk, _ := limitKeys(form, "", now.Unix()/60)
	nfk, _ := limitKeys(form, "", next.Unix()/60)
	if f, nf := scard(t, rdb, fk), scard(t, rdb, nfk); f != 11 || nf != 1 {
		t.Fatalf("Redis counts %d and %d, want 11 and 1", f, nf)
	}
}

// A submission repeated (a double click, a retry), on the same server or
// another one, is counted once and always passes, also once the budget
// is spent.
func TestSharedLimiterRepeats(t *testing.T) {
	rdb := testRedis(t, "")
	ctx := context.Background()
	a, b := newShared(t, rdb, nil), newShared(t, rdb, nil)
	form, now := ids.New(), time.Now()
	for i := 0; i < 3; i++ {
		for _, l := range []*sharedLimiter{a, b, a} {
			if ok, _ := l.allow(ctx, form, "198.51.100.1", "same", 20, 600, now); !ok {
				t.Fatal("a repeat was refused")
			}
		}
	}
	_ = a.flush(ctx)
	_ = b.flush(ctx)
	fk, ak := limitKeys(form, "198.51.100.1", now.Unix()/60)
	if n, f := scard(t, rdb, ak), scard(t, rdb, fk); n != 1 || f != 1 {
		t.Fatalf("one submission counted %d, %d times", n, f)
	}
	// Spend the budget with 19 more on one server (one server alone never
	// overshoots).
	passed := 0
	for i := 0; i < 40; i++ {
		if ok, _ := a.allow(ctx, form, "198.51.100.1", "k"+strconv.Itoa(i), 20, 600, now); ok {
			passed++
		}
	}
	if passed != 19 {
		t.Fatalf("%d more passed a budget of 20 with 1 spent", passed)
	}
	for _, l := range []*sharedLimiter{a, b} {
		for _, k := range []string{"same", "k0", "k1"} {
			if ok, _ := l.allow(ctx, form, "198.51.100.1", k, 20, 600, now); !ok {
				t.Fatalf("a repeat of %s after the budget was refused", k)
			}
		}
	}
	_ = a.flush(ctx)
	_ = b.flush(ctx)
	if n := scard(t, rdb, ak); n != 20 {
		t.Fatalf("the address's set holds %d, want 20", n)
	}
	if ok, _ := b.allow(ctx, form, "198.51.100.1", "new", 20, 600, now); ok {
		t.Fatal("the other server passed a new submission past the budget")
	}
}

// Two servers sharing one Redis, each taking a submission every 5 ms
// (20 per flush interval) from ever new addresses: the form's budget
// passes in full and is overshot by no more than docs/FORMS.md says
// (max(20, 2 × 20 − 8) = 32; checked against 2 × 20, as a loaded machine
// stretches a flush interval).
func TestSharedLimiterAcrossServers(t *testing.T) {
	rdb := testRedis(t, "")
	ctx := context.Background()
	servers := []*sharedLimiter{newShared(t, rdb, nil), newShared(t, testRedis(t, ""), nil)}
	form, now := ids.New(), time.Now()
	const budget, each, pace = 100, 150, 5 * time.Millisecond
	var passed atomic.Int64
	var wg sync.WaitGroup
	for s, l := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ip := "10.0." + strconv.Itoa(s) + "." + strconv.Itoa(i)
				if ok, _ := l.allow(ctx, form, ip, ip, 10, budget, now); ok {
					passed.Add(1)
				}
				time.Sleep(pace)
			}
		}()
	}
	wg.Wait()
	for _, l := range servers {
		if err := l.close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	perInterval := int64(flushInterval / pace)
	n := passed.Load()
	t.Logf("%d passed a budget of %d on 2 servers (bound %d)", n, budget, budget+2*perInterval)
	if n < budget || n > budget+2*perInterval {
		t.Fatalf("%d passed a budget of %d on 2 servers", n, budget)
	}
	fk, _ := limitKeys(form, "", now.Unix()/60)
	if f := scard(t, rdb, fk); f != n {
		t.Fatalf("Redis counted %d of %d passed", f, n)
	}
}

// proxy forwards TCP connections to addr until down; up listens again on
// the same port.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func (p *proxy) up(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// logged counts the limiter's messages.
type logged struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logged) Enabled(context.Context, slog.Level) bool { return true }
func (h *logged) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.msgs = append(h.msgs, r.Message)
	h.mu.Unlock()
	return nil
}
func (h *logged) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logged) WithGroup(string) slog.Handler      { return h }
func (h *logged) count(part string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if strings.Contains(m, part) {
			n++
		}
	}
	return n
}

// While Redis cannot answer, the server counts alone (what it counted
// this minute included) and answers every submission, logging once; when
// Redis answers again it logs that once, sends what it kept and counts
// across servers again.
func TestSharedLimiterRedisDown(t *testing.T) {
	target := os.Getenv("LEADPIPE_TEST_REDIS_ADDR")
	if target == "" {
		target = "127.0.0.1:6379"
	}
	p := &proxy{addr: "127.0.0.1:0", target: target}
	p.up(t)
	t.Cleanup(p.down)
	h := &logged{}
	rdb := testRedis(t, p.addr)
	l := newShared(t, rdb, slog.New(h))
	ctx := context.Background()
	form, now := ids.New(), time.Now()
	for i := 0; i < 2; i++ { // from memory, sent by a flush
		if ok, _ := l.allow(ctx, form, "192.0.2.1", "k"+strconv.Itoa(i), 10, 600, now); !ok {
			t.Fatal("refused with Redis up")
		}
	}
	p.down()
	passed := 0
	for i := 2; i < 200; i++ {
		ok, retry := l.allow(ctx, form, "192.0.2.1", "k"+strconv.Itoa(i), 10, 600, now)
		if ok {
			passed++
		} else if retry <= 0 {
			t.Fatal("refused without Retry-After")
		}
		if i%50 == 0 {
			time.Sleep(2 * flushInterval) // the flush loop keeps trying
		}
	}
	if passed != 8 {
		t.Fatalf("Redis down: %d passed after the 2 counted, want 8", passed)
	}
	if ok, _ := l.allow(ctx, form, "192.0.2.1", "k1", 10, 600, now); !ok {
		t.Fatal("Redis down: a repeat was refused")
	}
	if n := h.count("did not answer"); n != 1 {
		t.Fatalf("logged Redis down %d times: %v", n, h.msgs)
	}
	p.up(t)
	deadline := time.Now().Add(10 * time.Second)
	for l.down.Load() && time.Now().Before(deadline) {
		time.Sleep(flushInterval)
	}
	if l.down.Load() || h.count("answers again") != 1 {
		t.Fatalf("Redis back: down %v, logged %v", l.down.Load(), h.msgs)
	}
	if err := l.flush(ctx); err != nil {
		t.Fatal(err)
	}
	_, ak := limitKeys(form, "192.0.2.1", now.Unix()/60)
	if n := scard(t, rdb, ak); n < 2 {
		t.Fatalf("the submissions counted before Redis went away were not sent: %d", n)
	}
	if ok, _ := l.allow(ctx, form, "192.0.2.9", "other", 10, 600, now); !ok {
		t.Fatal("refused after Redis came back")
	}
	if h.count("did not answer") != 1 || h.count("answers again") != 1 {
		t.Fatalf("logged %v", h.msgs)
	}
}
