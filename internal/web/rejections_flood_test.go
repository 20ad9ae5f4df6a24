package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// switchSink turns rejection recording on and off between rounds.
type switchSink struct {
	on  atomic.Bool
	rec *rejections.Recorder
}

func (s *switchSink) Offer(tenantID, sourceID string, q rejections.Request) {
	if s.on.Load() {
		s.rec.Offer(tenantID, sourceID, q)
	}
}

// TestRejectionFloodCost measures what keeping rejected requests costs
// valid ingest under a flood of badly signed requests (target 10,000/s):
// alternating rounds of the same flood with recording off and on, valid
// deliveries per second compared in the same run. Run it with
// LEADPIPE_FLOOD_BENCH=1 (about a minute); docs/BENCHMARKS.md keeps the
// numbers. LEADPIPE_FLOOD_ROUNDS and LEADPIPE_FLOOD_RATE change the shape.
func TestRejectionFloodCost(t *testing.T) {
	if os.Getenv("LEADPIPE_FLOOD_BENCH") == "" {
		t.Skip("set LEADPIPE_FLOOD_BENCH=1 to run the rejected-request flood benchmark")
	}
	rounds, rate := envInt("LEADPIPE_FLOOD_ROUNDS", 3), envInt("LEADPIPE_FLOOD_RATE", 10000)
	e := uiEnv(t, "web_flood")
	acme := e.Tenant("acme")
	_, secret := e.Source(acme.ID, sources.CreateInput{Slug: "site", Name: "Site", Kind: "standard"})
	sink := &switchSink{rec: e.App.Ingest.Rejections.(*rejections.Recorder)}
	e.App.Ingest.Rejections = sink // before any request: the handler reads it per request
	url := e.URL + "/hooks/acme/site"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var seq atomic.Int64
	// post sends b with h to the source's hook and reads the answer
	// through; it returns the answer's status, 0 when none came.
	post := func(h http.Header, b []byte) int {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
		req.Header = h
		res, err := client.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}

	// valid sends signed new deliveries from 8 senders for d; it returns
	// accepted deliveries per second.
	valid := func(d time.Duration) float64 {
		var ok atomic.Int64
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(end) {
					id := "evt-" + strconv.FormatInt(seq.Add(1), 10)
					now := time.Now()
					h, b, _ := kinds.Sign(kinds.Standard, nil, secret, id, kinds.SampleBody(kinds.Standard, id, id, kinds.Lead{Email: id + "@example.test"}, now), now)
					if post(h, b) == 200 {
						ok.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return float64(ok.Load()) / d.Seconds()
	}
	// flood sends badly signed requests at rate per second until stop.
	flood := func(stop <-chan struct{}, sent *atomic.Int64) *sync.WaitGroup {
		var wg sync.WaitGroup
		const senders = 16
		per := time.Second / time.Duration(max(rate/senders, 1))
		now := time.Now()
		h, b, _ := kinds.Sign(kinds.Standard, nil, "whsec_"+"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", "evt-bad", kinds.SampleBody(kinds.Standard, "evt-bad", "r", kinds.Lead{}, now), now)
		for range senders {
			wg.Go(func() {
				tick := time.NewTicker(per)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					if post(h.Clone(), b) != 0 {
						sent.Add(1)
					}
				}
			})
		}
		return &wg
	}
	const roundLen = 6 * time.Second
	valid(2 * time.Second) // warm up
	var off, on []float64
	for i := range rounds {
		quiet := valid(roundLen) // for context: no flood at all
		t.Logf("round %d without a flood: valid %.0f/s", i+1, quiet)
		for _, rec := range []bool{false, true} {
			sink.on.Store(rec)
			stop := make(chan struct{})
			var sent atomic.Int64
			wg := flood(stop, &sent)
			r := valid(roundLen)
			close(stop)
			wg.Wait()
			if rec {
				on = append(on, r)
			} else {
				off = append(off, r)
			}
			t.Logf("round %d recording=%v: valid %.0f/s beside a flood of %.0f/s", i+1, rec, r, float64(sent.Load())/roundLen.Seconds())
		}
	}
	var sOff, sOn float64
	for i := range off {
		sOff += off[i]
		sOn += on[i]
		t.Logf("round %d ratio on/off %.3f", i+1, on[i]/off[i])
	}
	ratio := sOn / sOff
	t.Logf("valid ingest with recording / without, same flood, %d rounds: %.3f (offered %d, kept %d, dropped %d)",
		rounds, ratio, sink.rec.Offered.Load(), sink.rec.Kept.Load(), sink.rec.Dropped.Load())
	if ratio < 0.90 {
		t.Errorf("recording rejections slowed valid ingest to %.1f %% under the flood", ratio*100)
	}
	fmt.Fprintf(os.Stderr, "FLOOD RATIO %.3f\n", ratio)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
