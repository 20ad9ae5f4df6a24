package main

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"leadpipe/internal/loadgen"
	"leadpipe/internal/webhooks/kinds"
)

// request is one signed standard delivery, ready to write on a sender's
// connection.
type request struct {
	n        int // delivery number: msg_<n>, natural key contact_<n>
	h        http.Header
	body     []byte
	wire     []byte // the whole HTTP/1.1 request
	signedAt time.Time
}

// feed is the request sequence of one run: request i carries delivery
// mixNumber(i, dupPer100). Requests are signed ahead, between rounds
// (ensure), so the senders spend no CPU on HMAC while they are measured;
// a round that outruns the estimate signs the rest on demand (counted in
// onDemand), so the mix is exactly the one asked for and never wraps
// around.
type feed struct {
	secret    string
	host      string
	path      string
	dupPer100 int       // duplicates in every 100 requests
	offset    int       // added to delivery numbers (feeds of one run never share one)
	eventTime time.Time // the records' event time: a repeated delivery is the same bytes

	ready    []*request // requests 0..len-1, grown only between rounds
	onDemand atomic.Int64
}

func newFeed(secret, host, path string, dup float64, offset int) *feed {
	d := int(math.Round(dup * 100))
	d = max(0, min(d, 99)) // at least one new delivery in every hundred, to repeat
	return &feed{secret: secret, host: host, path: path, dupPer100: d, offset: offset, eventTime: time.Now().UTC()}
}

// mixNumber is request i's delivery number: of every 100 requests the
// first 100-dup are new deliveries (numbered in order) and the other dup
// repeat one of the last 50 new ones, so exactly dup in every 100 are
// duplicates, whatever the number of requests.
func mixNumber(i, dup int) int {
	fresh := 100 - dup
	c, j := i/100, i%100
	if j < fresh {
		return c*fresh + j
	}
	sent := (c + 1) * fresh // new deliveries so far, this hundred's included
	return sent - 1 - j%min(50, sent)
}

// at is request i. Safe for concurrent use while no ensure runs.
func (f *feed) at(i int) *request {
	if i < len(f.ready) {
		return f.ready[i]
	}
	f.onDemand.Add(1)
	r, err := f.sign(i, time.Now())
	if err != nil {
		panic(err) // signing a sample body cannot fail once the first succeeded
	}
	return r
}

// maxSignatureAge keeps pre-signed requests well inside the kinds' 300 s
// timestamp tolerance.
const maxSignatureAge = 2 * time.Minute

// ensure signs requests ahead so that requests from..from+n-1 are ready
// and recently signed. Never call it while a phase runs.
func (f *feed) ensure(from, n int) error {
	now := time.Now()
	for i := from; i < min(from+n, len(f.ready)); i++ {
		if now.Sub(f.ready[i].signedAt) > maxSignatureAge {
			r, err := f.sign(i, now)
			if err != nil {
				return err
			}
			f.ready[i] = r
		}
	}
	for len(f.ready) < from+n {
		r, err := f.sign(len(f.ready), now)
		if err != nil {
			return err
		}
		f.ready = append(f.ready, r)
	}
	return nil
}

func (f *feed) sign(i int, now time.Time) (*request, error) {
	n := f.offset + mixNumber(i, f.dupPer100)
	id := fmt.Sprintf("msg_%d", n)
	body := kinds.SampleBody(kinds.Standard, id, fmt.Sprintf("contact_%d", n),
		kinds.Lead{Email: fmt.Sprintf("u%d@example.com", n), Name: "Bench"}, f.eventTime)
	h, b, err := kinds.Sign(kinds.Standard, nil, f.secret, id, body, now)
	if err != nil {
		return nil, err
	}
	h.Set("Content-Type", "application/json")
	return &request{n: n, h: h, body: b, wire: loadgen.Request(f.host, f.path, h, b), signedAt: now}, nil
}

// estimate is how many requests a phase of d may need: its own best rate so
// far, else twice the best rate of any phase of the run, else 20,000/s,
// with half again as margin.
func estimate(own, anyPhase float64, d time.Duration) int {
	rate := own
	if rate == 0 {
		rate = 2 * anyPhase
	}
	if rate == 0 {
		rate = 20000
	}
	return int(1.5*rate*d.Seconds()) + 1000
}

// asHealthz is r's bytes with the request line GET /healthz instead of
// POST path: the same headers and body through the same server, answered
// without the webhook's work (the HTTP floor of dupCost).
func (r *request) asHealthz(path string) *request {
	line := "POST " + path + " "
	if !bytes.HasPrefix(r.wire, []byte(line)) {
		panic("benchingest: a request line not from loadgen.Request")
	}
	wire := append([]byte("GET /healthz "), r.wire[len(line):]...)
	return &request{n: r.n, h: r.h, body: r.body, wire: wire, signedAt: r.signedAt}
}
