package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"leadpipe/internal/config"
	"leadpipe/internal/webhooks/kinds"
)

var firstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Linus", "Margaret", "Dennis"}
var lastNames = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Torvalds", "Hamilton", "Ritchie"}
var companies = []string{"Analytical Engines", "Cobol Corp", "Enigma Ltd", "Shortest Path", "Substitution Inc", "TeX Works", "Fortran Labs", "Unix Co"}

// demoSend posts correctly signed deliveries of every demo source kind to a
// running server: a sender simulator for newcomers and load tests.
func demoSend(ctx context.Context, cfg *config.Config, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet("demo-send", flag.ContinueOnError)
	fs.SetOutput(out)
	base := fs.String("url", cfg.BaseURL, "server base URL")
	tenant := fs.String("tenant", demoSlug, "tenant slug")
	n := fs.Int("n", 60, "distinct deliveries to send (spread over the kinds)")
	dup := fs.Float64("dup", 0.1, "fraction of extra duplicate sends (0..1)")
	conc := fs.Int("c", 8, "concurrent senders")
	only := fs.String("kinds", "", "comma-separated kinds (default: all demo sources)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dup < 0 || *dup > 1 || *n < 1 || *conc < 1 {
		return fmt.Errorf("demo-send: -n ≥ 1, -c ≥ 1, 0 ≤ -dup ≤ 1")
	}
	var srcs []demoSource
	for _, s := range demoSources {
		if *only == "" || strings.Contains(","+*only+",", ","+s.Kind+",") {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		return fmt.Errorf("demo-send: no demo source matches -kinds %q", *only)
	}
	type job struct {
		src      demoSource
		id, ref  string
		fields   kinds.Lead
		repeated bool
	}
	run := time.Now().UnixNano()
	var list []job
	for i := 0; i < *n; i++ {
		s := srcs[i%len(srcs)]
		ref := fmt.Sprintf("lead-%d-%d", run, i)
		id := fmt.Sprintf("demo-%d-%d", run, i)
		if s.Kind == kinds.Meta {
			id = ref // Meta's delivery id is the leadgen id; the Graph stand-in knows the person by it
		}
		j := job{src: s, id: id, ref: ref, fields: demoPerson(ref, i)}
		list = append(list, j)
		if rand.Float64() < *dup {
			j.repeated = true
			list = append(list, j)
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	var mu sync.Mutex
	statuses := map[string]int{}
	var lat []time.Duration
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(list) || ctx.Err() != nil {
					return
				}
				j := list[i]
				now := time.Now()
				body := kinds.SampleBody(j.src.Kind, j.id, j.ref, j.fields, now)
				url := strings.TrimRight(*base, "/") + "/hooks/" + *tenant + "/" + j.src.Slug
				h, body, err := kinds.SignTo(j.src.Kind, j.src.Config, j.src.Secret, j.id, url, body, now) // HubSpot signs the URL
				if err != nil {
					mu.Lock()
					statuses["sign error"]++
					mu.Unlock()
					continue
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				if err != nil { // a -url that is no URL
					mu.Lock()
					statuses["error: "+err.Error()]++
					mu.Unlock()
					continue
				}
				req.Header = h
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				res, err := client.Do(req)
				d := time.Since(t0)
				key := ""
				if err != nil {
					key = "error: " + err.Error()
				} else {
					var ack struct{ Status string }
					b, rerr := io.ReadAll(res.Body)
					res.Body.Close()
					if rerr != nil || json.Unmarshal(b, &ack) != nil {
						ack.Status = "(no JSON answer)" // counted under its status code all the same
					}
					key = fmt.Sprintf("%d %s", res.StatusCode, ack.Status)
				}
				mu.Lock()
				statuses[key]++
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	fmt.Fprintf(out, "sent %d requests (%d distinct deliveries) to %s in %s (%.0f req/s)\n", len(list), *n, *base, el.Round(time.Millisecond), float64(len(list))/el.Seconds())
	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  %-24s %d\n", k, statuses[k])
	}
	if len(lat) > 0 {
		fmt.Fprintf(out, "  latency p50 %s  p99 %s\n", lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond))
	}
	return nil
}
