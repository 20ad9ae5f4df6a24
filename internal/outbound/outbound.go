// Package outbound is the one HTTP client Leadpipe uses to call URLs that
// tenants configure (reconcile pulls, outbound webhooks). Every call goes
// through the SSRF guard, connect and read timeouts, a response size cap and
// a retry policy with exponential backoff, full jitter and Retry-After.
package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Options configure a Client. Zero values take the documented defaults.
type Options struct {
	// AllowPrivate (LEADPIPE_ALLOW_PRIVATE_TARGETS) lets calls reach loopback,
	// private, CGNAT and special-purpose addresses, and plain http. Metadata,
	// link-local, unspecified, multicast and broadcast addresses stay refused.
	AllowPrivate bool

	ConnectTimeout time.Duration // dial + TLS handshake; default 5s
	ReadTimeout    time.Duration // wait for response headers, then again for the body; default 15s

	MaxAttempts   int           // total tries per Do, first one included; default 4
	BaseBackoff   time.Duration // default 500ms
	MaxBackoff    time.Duration // default 30s
	MaxRetryAfter time.Duration // longest Retry-After we honour (longer ones are capped); default 60s
	MaxBody       int64         // response body cap; default 4 MiB

	Sleep func(ctx context.Context, d time.Duration) error // default: a timer that honours ctx
	Rand  func() float64                                   // in [0,1); default math/rand/v2
	Now   func() time.Time                                 // for the retry budget; default time.Now

	TLSClientConfig *tls.Config // optional, e.g. to trust an httptest TLS server
}

func (o *Options) setDefaults() {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 15 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 60 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 4 << 20
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Client is safe for concurrent use; share one per process.
type Client struct {
	o      Options
	dialer *net.Dialer
	hc     *http.Client
}

// New builds a Client.
func New(o Options) *Client {
	o.setDefaults()
	c := &Client{o: o}
	c.dialer = &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Control: c.control}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would make the guard vet the proxy instead of the target
		DialContext:            c.dial,
		TLSClientConfig:        o.TLSClientConfig,
		TLSHandshakeTimeout:    o.ConnectTimeout,
		ResponseHeaderTimeout:  o.ReadTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	c.hc = &http.Client{
		Transport: tr,
		// A redirect could point anywhere; the caller sees the 3xx as is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Response is a fully read response.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte // at most MaxBody bytes
	Attempts int    // requests sent, retries included
}

// ErrBodyTooLarge is returned (wrapped) together with the Response, truncated
// to MaxBody, when the server sends more: a webhook receiver answering 200 with
// a huge page still received the delivery.
var ErrBodyTooLarge = errors.New("outbound: response body too large")

// Do sends req, retrying network errors and 408, 429, 502, 503, 504 with
// exponential backoff and full jitter, honouring Retry-After on 429 and 503.
// It never follows redirects. A retryable status that persists is returned as
// a Response with a nil error; errors are transport failures, guard refusals
// (never retried) or ctx ending.
//
// POST and PATCH are only retried when the request carries Idempotency-Key or
// webhook-id (the receiver dedupes on them), as net/http itself does: a blind
// retry of a non-idempotent request could repeat its side effect.
//
// Retries stop early when the next wait would pass ctx's deadline. Do may
// buffer req's body (setting GetBody) and sets a User-Agent when none is given.
func (c *Client) Do(ctx context.Context, req *http.Request) (*Response, error) {
	if err := checkScheme(req.URL, c.o.AllowPrivate); err != nil {
		return nil, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		// Buffer once so every attempt sends the same bytes.
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("outbound: reading request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Leadpipe/1.0")
	}
	replayable := isReplayable(req)
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, req)
		if resp != nil {
			resp.Attempts = attempt
		}
		var te *TargetError
		if err != nil && errors.As(err, &te) {
			return nil, te // already names the address; never retried
		}
		if err != nil {
			err = &attemptError{method: req.Method, url: RedactURL(req.URL.String()), attempts: attempt, err: err}
		}
		if err != nil && ctx.Err() != nil {
			return resp, err
		}
		wait, retry := c.retryDecision(resp, err, attempt)
		if !retry || !replayable || attempt >= c.o.MaxAttempts {
			return resp, err
		}
		if dl, ok := ctx.Deadline(); ok && c.o.Now().Add(wait).After(dl) {
			return resp, err // the retry budget is spent: report what we have now
		}
		if c.o.Sleep(ctx, wait) != nil {
			return resp, err // ctx ended while waiting; the caller sees ctx.Err() itself
		}
	}
}

func isReplayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "" ||
		req.Header.Get("Webhook-Id") != ""
}

// once sends one attempt and reads the body under ReadTimeout.
func (c *Client) once(ctx context.Context, req *http.Request) (*Response, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := req.Clone(actx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("rewinding request body: %w", err)
		}
		r.Body = body
	}
	hresp, err := c.hc.Do(r)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer hresp.Body.Close()

	// ResponseHeaderTimeout covered the wait for headers; a server trickling
	// the body gets the same budget again, then the attempt is cut off.
	var timedOut atomic.Bool
	timer := time.AfterFunc(c.o.ReadTimeout, func() { timedOut.Store(true); cancel() })
	defer timer.Stop()

	resp := &Response{Status: hresp.StatusCode, Header: hresp.Header}
	body, err := io.ReadAll(io.LimitReader(hresp.Body, c.o.MaxBody+1))
	if err != nil {
		if timedOut.Load() {
			return nil, &timeoutError{what: fmt.Sprintf("reading response body took longer than %s", c.o.ReadTimeout)}
		}
		return nil, fmt.Errorf("reading response body: %w", err)
	}
	if int64(len(body)) > c.o.MaxBody {
		resp.Body = body[:c.o.MaxBody]
		return resp, fmt.Errorf("%w (over %d bytes)", ErrBodyTooLarge, c.o.MaxBody)
	}
	resp.Body = body
	return resp, nil
}

// retryDecision says whether to try again and after how long. n counts the
// attempts made so far (1 after the first).
func (c *Client) retryDecision(resp *Response, err error, n int) (time.Duration, bool) {
	if err != nil {
		if !retryableError(err) {
			return 0, false
		}
		return c.backoff(n - 1), true
	}
	switch resp.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), c.o.Now()); ok {
			return min(d, c.o.MaxRetryAfter), true
		}
		return c.backoff(n - 1), true
	case http.StatusRequestTimeout, http.StatusBadGateway, http.StatusGatewayTimeout:
		return c.backoff(n - 1), true
	}
	return 0, false
}

// backoff is full jitter: a uniform wait in [0, min(MaxBackoff, BaseBackoff·2^retry)).
func (c *Client) backoff(retry int) time.Duration {
	ceiling := c.o.BaseBackoff
	for i := 0; i < retry && ceiling < c.o.MaxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, c.o.MaxBackoff)
	return time.Duration(c.o.Rand() * float64(ceiling))
}

// ParseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3), a date in the past being a wait of 0. Every outbound
// caller (reconcile, enrichment, outbound webhooks) reads it here.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryableError: network trouble is worth another try; refusals, a full
// response we chose not to read and certificate problems are not.
func retryableError(err error) bool {
	if errors.Is(err, ErrForbiddenTarget) || errors.Is(err, ErrBodyTooLarge) {
		return false
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return false
	}
	return true
}

type timeoutError struct{ what string }

func (e *timeoutError) Error() string   { return e.what }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

// attemptError names the request (with secrets redacted) and the attempt count.
type attemptError struct {
	method, url string
	attempts    int
	err         error
}

func (e *attemptError) Error() string {
	s := fmt.Sprintf("outbound: %s %s: %v", e.method, e.url, e.err)
	if e.attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.attempts)
	}
	return s
}

func (e *attemptError) Unwrap() error { return e.err }

// StatusError is a non-2xx answer from GetJSON.
type StatusError struct {
	Status   int
	Body     string // the first bytes of the body, for logs and run records
	URL      string // with secrets redacted
	Attempts int
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("outbound: GET %s: HTTP %d", e.URL, e.Status)
	if e.Body != "" {
		s += ": " + e.Body
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

const snippetLen = 512

func snippet(b []byte) string {
	if len(b) > snippetLen {
		b = b[:snippetLen]
	}
	return string(bytes.ToValidUTF8(bytes.TrimSpace(b), []byte("?")))
}

// GetJSON fetches rawURL and decodes a 2xx JSON body into out. Other statuses
// give a *StatusError.
func (c *Client) GetJSON(ctx context.Context, rawURL string, headers http.Header, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fmt.Errorf("outbound: invalid URL %s: %w", RedactURL(rawURL), unwrapURLError(err))
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.Do(ctx, req)
	if err != nil {
		return err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return &StatusError{Status: resp.Status, Body: snippet(resp.Body), URL: RedactURL(rawURL), Attempts: resp.Attempts}
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("outbound: decoding JSON from %s: %w", RedactURL(rawURL), err)
	}
	return nil
}
