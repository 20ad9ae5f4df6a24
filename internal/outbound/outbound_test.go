package outbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest/fakesleep"
)

func testClient(s *fakesleep.Recorder, mod func(*Options)) *Client {
	o := Options{AllowPrivate: true, Sleep: s.Sleep, Rand: func() float64 { return 0.5 }}
	if mod != nil {
		mod(&o)
	}
	return New(o)
}

// scripted answers each request with the next status of the script, then 200 "ok".
func scripted(t *testing.T, script ...func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(script) {
			script[i](w)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func status(code int, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, http.StatusText(code))
	}
}

func get(t *testing.T, c *Client, url string) (*Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(context.Background(), req)
}

func TestRetriesUntilSuccess(t *testing.T) {
	srv, hits := scripted(t,
		status(429, "Retry-After", "2"),
		status(503),
		status(503),
	)
	var s fakesleep.Recorder
	resp, err := get(t, testClient(&s, nil), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || string(resp.Body) != "ok" || resp.Attempts != 4 || hits.Load() != 4 {
		t.Fatalf("got status %d body %q attempts %d hits %d", resp.Status, resp.Body, resp.Attempts, hits.Load())
	}
	// Retry-After honoured, then full jitter with Rand=0.5: 0.5·1s, 0.5·2s.
	want := []time.Duration{2 * time.Second, 500 * time.Millisecond, time.Second}
	if got := s.All(); !slices.Equal(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
}

func TestRealRetryAfterSleep(t *testing.T) {
	srv, hits := scripted(t, status(503, "Retry-After", "1"))
	c := New(Options{AllowPrivate: true})
	start := time.Now()
	resp, err := get(t, c, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second || el > 5*time.Second {
		t.Errorf("took %v, want about 1s", el)
	}
	if resp.Status != 200 || resp.Attempts != 2 || hits.Load() != 2 {
		t.Errorf("status %d attempts %d hits %d", resp.Status, resp.Attempts, hits.Load())
	}
}

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2025, 3, 4, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"0", 0},
		{"7", 7 * time.Second},
		{"3600", time.Minute}, // capped by MaxRetryAfter
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"soon", 500 * time.Millisecond}, // unparseable: backoff instead (Rand 0.5 · 1s)
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			srv, _ := scripted(t, status(429, "Retry-After", tt.header))
			var s fakesleep.Recorder
			c := testClient(&s, func(o *Options) {
				o.Now = func() time.Time { return now }
				o.BaseBackoff = time.Second
			})
			if _, err := get(t, c, srv.URL); err != nil {
				t.Fatal(err)
			}
			if got := s.All(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("sleeps %v, want [%v]", got, tt.want)
			}
		})
	}
}

// getAfterStatus gets from a server that answers code first (200 after
// that) and returns the response, the server's hits and the waits.
func getAfterStatus(t *testing.T, code int) (*Response, int32, []time.Duration) {
	t.Helper()
	srv, hits := scripted(t, status(code))
	var s fakesleep.Recorder
	resp, err := get(t, testClient(&s, nil), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return resp, hits.Load(), s.All()
}

func TestStatusesNotRetried(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 409, 410, 422, 500, 501} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			resp, hits, slept := getAfterStatus(t, code)
			if resp.Status != code || resp.Attempts != 1 || hits != 1 || len(slept) != 0 {
				t.Errorf("status %d attempts %d hits %d sleeps %v", resp.Status, resp.Attempts, hits, slept)
			}
		})
	}
}

func TestRetriedStatuses(t *testing.T) {
	for _, code := range []int{408, 429, 502, 503, 504} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			resp, hits, _ := getAfterStatus(t, code)
			if resp.Status != 200 || resp.Attempts != 2 || hits != 2 {
				t.Errorf("status %d attempts %d hits %d", resp.Status, resp.Attempts, hits)
			}
		})
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	srv, hits := scripted(t, status(503), status(503), status(503), status(503), status(503))
	var s fakesleep.Recorder
	resp, err := get(t, testClient(&s, nil), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 503 || resp.Attempts != 4 || hits.Load() != 4 || len(s.All()) != 3 {
		t.Errorf("status %d attempts %d hits %d sleeps %v", resp.Status, resp.Attempts, hits.Load(), s.All())
	}
}

func TestRetryBudgetStopsBeforeDeadline(t *testing.T) {
	srv, hits := scripted(t, status(429, "Retry-After", "30"))
	var s fakesleep.Recorder
	c := testClient(&s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := c.Do(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 429 || resp.Attempts != 1 || hits.Load() != 1 || len(s.All()) != 0 {
		t.Errorf("status %d attempts %d hits %d sleeps %v", resp.Status, resp.Attempts, hits.Load(), s.All())
	}
}

func TestNetworkErrorsRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // reset before any response
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	var s fakesleep.Recorder
	resp, err := get(t, testClient(&s, nil), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || resp.Attempts != 2 {
		t.Errorf("status %d attempts %d", resp.Status, resp.Attempts)
	}
}

func TestConnectionRefusedGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var s fakesleep.Recorder
	resp, err := get(t, testClient(&s, nil), "http://"+addr+"/x?access_token=s3cret")
	if err == nil || resp != nil {
		t.Fatalf("got %v, %v; want an error", resp, err)
	}
	if !strings.Contains(err.Error(), "after 4 attempts") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q: want attempt count and no token", err)
	}
	if len(s.All()) != 3 {
		t.Errorf("sleeps %v, want 3", s.All())
	}
}

func TestHangingServerCutOff(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	t.Run("headers", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(hang))
		defer srv.Close()
		s := timesOut(t, srv.URL, 2)
		if len(s.All()) != 1 {
			t.Errorf("sleeps %v: a timeout should be retried", s.All())
		}
	})
	t.Run("body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			hang(w, r)
		}))
		defer srv.Close()
		timesOut(t, srv.URL, 1)
	})
}

// timesOut gets url with a 100 ms read timeout and up to attempts tries,
// fails the test unless that ends in a timeout within 3 s, and returns
// the retry sleeps.
func timesOut(t *testing.T, url string, attempts int) *fakesleep.Recorder {
	t.Helper()
	s := &fakesleep.Recorder{}
	c := testClient(s, func(o *Options) { o.ReadTimeout = 100 * time.Millisecond; o.MaxAttempts = attempts })
	start := time.Now()
	_, err := get(t, c, url)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("got %v, want a timeout", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v", el)
	}
	return s
}

func TestRedirectNotFollowed(t *testing.T) {
	var followed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed.Store(true) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var s fakesleep.Recorder
	resp, err := get(t, testClient(&s, nil), srv.URL+"/start")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 302 || resp.Header.Get("Location") != "/elsewhere" || followed.Load() {
		t.Errorf("status %d location %q followed %v", resp.Status, resp.Header.Get("Location"), followed.Load())
	}
}

// The guard must refuse before any packet leaves: these addresses are never
// connected to, and the refusal is not retried.
func TestGuardRefusesTargets(t *testing.T) {
	var hits atomic.Int32
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer tlsSrv.Close()
	port := tlsSrv.Listener.Addr().(*net.TCPAddr).Port
	portStr := ":" + strconv.Itoa(port)

	tests := []struct {
		name         string
		url          string
		allowPrivate bool
		want         string
	}{
		{"metadata even with AllowPrivate", "http://169.254.169.254/latest/meta-data/", true, "outbound: 169.254.169.254 is a cloud metadata address"},
		{"metadata over https", "https://169.254.169.254/", false, "cloud metadata address"},
		{"ipv6 mapped metadata", "http://[::ffff:169.254.169.254]/", true, "cloud metadata address"},
		{"loopback without AllowPrivate", "https://127.0.0.1" + portStr + "/", false, "127.0.0.1 is a loopback address"},
		{"name resolving to loopback", "https://localhost" + portStr + "/", false, "localhost resolves to"},
		{"private literal", "https://10.0.0.1/", false, "10.0.0.1 is a private address"},
		{"CGNAT literal", "https://100.64.1.1/", false, "carrier-grade NAT"},
		{"plain http without AllowPrivate", "http://93.184.215.14/", false, "http:// targets are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s fakesleep.Recorder
			c := testClient(&s, func(o *Options) { o.AllowPrivate = tt.allowPrivate; o.ConnectTimeout = 200 * time.Millisecond })
			resp, err := get(t, c, tt.url)
			if resp != nil {
				t.Fatalf("got a response %d", resp.Status)
			}
			if !errors.Is(err, ErrForbiddenTarget) {
				t.Fatalf("got %v, want ErrForbiddenTarget", err)
			}
			var te *TargetError
			if !errors.As(err, &te) {
				t.Fatalf("%v is not a *TargetError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			t.Log(err)
			if len(s.All()) != 0 {
				t.Errorf("a refusal was retried: sleeps %v", s.All())
			}
		})
	}
	if hits.Load() != 0 {
		t.Errorf("the loopback server was reached %d times", hits.Load())
	}
}

func TestBodyCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 2048))
	}))
	defer srv.Close()
	var s fakesleep.Recorder
	c := testClient(&s, func(o *Options) { o.MaxBody = 1024 })
	resp, err := get(t, c, srv.URL)
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("got %v, want ErrBodyTooLarge", err)
	}
	if resp == nil || resp.Status != 200 || len(resp.Body) != 1024 || resp.Attempts != 1 {
		t.Fatalf("got %+v", resp)
	}
	c = testClient(&s, func(o *Options) { o.MaxBody = 2048 })
	if resp, err := get(t, c, srv.URL); err != nil || len(resp.Body) != 2048 {
		t.Fatalf("at the cap: %v, %d bytes", err, len(resp.Body))
	}
}

func TestPostRetriedOnlyWhenIdempotent(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n <= 2 {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	var s fakesleep.Recorder
	c := testClient(&s, nil)

	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"a":1}`))
	resp, err := c.Do(context.Background(), req)
	if err != nil || resp.Status != 503 || resp.Attempts != 1 {
		t.Fatalf("plain POST: %v %+v", err, resp)
	}

	// A reader without GetBody is buffered so the retry sends the same bytes.
	req, _ = http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader(`{"b":2}`)))
	req.Header.Set("webhook-id", "msg_1")
	resp, err = c.Do(context.Background(), req)
	if err != nil || resp.Status != 200 || resp.Attempts != 2 {
		t.Fatalf("POST with webhook-id: %v %+v", err, resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 3 || bodies[1] != `{"b":2}` || bodies[2] != `{"b":2}` {
		t.Errorf("bodies %q", bodies)
	}
}

func TestBackoffFullJitter(t *testing.T) {
	tests := []struct {
		retry int
		rand  float64
		want  time.Duration
	}{
		{0, 0, 0},
		{0, 0.5, 250 * time.Millisecond},
		{0, 0.999, 499500 * time.Microsecond},
		{1, 1, time.Second},
		{2, 0.5, time.Second},
		{5, 1, 16 * time.Second},
		{6, 1, 30 * time.Second}, // 32s capped
		{60, 1, 30 * time.Second},
		{1000, 0.5, 15 * time.Second}, // no overflow
	}
	for _, tt := range tests {
		c := New(Options{Rand: func() float64 { return tt.rand }})
		if got := c.backoff(tt.retry); got != tt.want {
			t.Errorf("backoff(%d) with rand %v = %v, want %v", tt.retry, tt.rand, got, tt.want)
		}
	}
}

func TestGetJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" || r.Header.Get("Accept") != "application/json" {
			w.WriteHeader(401)
			return
		}
		io.WriteString(w, `{"n":3}`)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		io.WriteString(w, `{"error":"no such form"}`)
	})
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{`) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var s fakesleep.Recorder
	c := testClient(&s, nil)
	ctx := context.Background()

	var out struct{ N int }
	if err := c.GetJSON(ctx, srv.URL+"/ok", http.Header{"Authorization": {"Bearer t"}}, &out); err != nil || out.N != 3 {
		t.Fatalf("ok: %v %+v", err, out)
	}
	err := c.GetJSON(ctx, srv.URL+"/missing?access_token=s3cret", nil, &out)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 404 || se.Body != `{"error":"no such form"}` {
		t.Fatalf("missing: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "access_token=REDACTED") {
		t.Errorf("token not redacted: %q", err)
	}
	if err := c.GetJSON(ctx, srv.URL+"/garbage", nil, &out); err == nil || !strings.Contains(err.Error(), "decoding JSON") {
		t.Errorf("garbage: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	got := RedactURL("https://user:pw@graph.example/v21.0/1/leads?access_token=abc&limit=5&appsecret_proof=x")
	for _, secret := range []string{"abc", "pw", "appsecret_proof=x"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q still contains %q", got, secret)
		}
	}
	if !strings.Contains(got, "limit=5") {
		t.Errorf("%q lost limit", got)
	}
}

func TestContextCancelStopsRetries(t *testing.T) {
	srv, hits := scripted(t, status(503), status(503), status(503))
	c := New(Options{AllowPrivate: true, BaseBackoff: time.Hour, MaxBackoff: time.Hour, Rand: func() float64 { return 1 }})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	start := time.Now()
	resp, _ := c.Do(ctx, req)
	if time.Since(start) > 3*time.Second || hits.Load() != 1 || resp == nil || resp.Status != 503 {
		t.Errorf("took %v, hits %d, resp %+v", time.Since(start), hits.Load(), resp)
	}
}
