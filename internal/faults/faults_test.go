//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/redistest"
	"leadpipe/internal/webhooks/kinds"
)

type scale struct {
	perPhase, keysPerPhase, senders int
	settle                          time.Duration
}

func suiteScale() (string, scale) {
	if os.Getenv("LEADPIPE_FAULTS") == "long" {
		return "long", scale{perPhase: 4000, keysPerPhase: 100, senders: 16, settle: 5 * time.Minute}
	}
	return "short", scale{perPhase: 150, keysPerPhase: 8, senders: 8, settle: 3 * time.Minute}
}

const adminToken = "faults-admin-token-0123456789"

type suite struct {
	t      *testing.T
	sc     scale
	mdb    *mariaDB
	redis  *redistest.Server
	server *proc
	worker *proc
	base   string
	check  *sqlx.DB // the suite's own connection to the private database

	tenantID, token, sourceID, secret, hookURL string

	mu       sync.Mutex
	acks     map[string]map[string]bool // msg → delivery ids answered
	msgRef   map[string]string          // msg → natural key
	keyLeads map[string]map[string]bool // Idempotency-Key → lead ids answered
	human    map[string]string          // lead id → status a human set
	next     int                        // next message number
	nextKey  int
	retries  int
}

func newSuite(t *testing.T, sc scale) *suite {
	return &suite{t: t, sc: sc, acks: map[string]map[string]bool{}, msgRef: map[string]string{},
		keyLeads: map[string]map[string]bool{}, human: map[string]string{}}
}

func TestFaults(t *testing.T) {
	mode, sc := suiteScale()
	t.Logf("fault suite, %s version: %d deliveries and %d Idempotency-Key POSTs per fault", mode, sc.perPhase, sc.keysPerPhase)
	s := newSuite(t, sc)
	s.start("leadpipe_faults")
	var err error
	s.provision()
	s.humanEdits(10)

	faults := []struct {
		name   string
		inject func()
	}{
		{"worker killed and restarted", func() {
			s.worker.signal(syscall.SIGKILL)
			time.Sleep(2 * time.Second)
			s.worker.start(t)
		}},
		{"Redis stopped for 5 s (restarts empty)", func() {
			s.redis.Kill()
			time.Sleep(5 * time.Second)
			s.redis.Start()
		}},
		{"server's MySQL connections KILLed", func() {
			n := s.mdb.killConnections(t)
			t.Logf("  KILLed %d connections", n)
			time.Sleep(500 * time.Millisecond)
			t.Logf("  KILLed %d more", s.mdb.killConnections(t))
		}},
		{"private MariaDB stopped for 10 s", func() {
			s.check.Close()
			s.mdb.stopFor(t, 10*time.Second)
			s.check, err = db.Open(context.Background(), s.mdb.dsn("leadpipe_faults"))
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"server kill -9 and restarted", func() {
			s.server.signal(syscall.SIGKILL)
			time.Sleep(time.Second)
			s.server.start(t)
		}},
	}
	for _, f := range faults {
		start := time.Now()
		s.phase(f.name, f.inject)
		t.Logf("%-42s ok in %5.1fs  (acknowledged so far: %d deliveries, %d keys; sender retries %d)",
			f.name, time.Since(start).Seconds(), len(s.acks), len(s.keyLeads), s.retries)
		if t.Failed() {
			return
		}
	}
}

// start runs a private MariaDB and Redis, then the server
// (LEADPIPE_WORKER=off) and the worker binaries on database dbName.
func (s *suite) start(dbName string) {
	t := s.t
	serverBin, workerBin := binaries(t)
	s.mdb = startMariaDB(t)
	s.redis = redistest.Single(t)
	dir := t.TempDir()
	port := freePort(t)
	s.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	env := s.leadpipeEnv(fmt.Sprintf("127.0.0.1:%d", port), s.mdb.dsn(dbName))
	s.server = newLeadpipe(t, "server", serverBin, env, dir)
	s.worker = newLeadpipe(t, "worker", workerBin, env, dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log tail:\n%s", s.server.tail(40))
			t.Logf("worker log tail:\n%s", s.worker.tail(40))
		}
	})
	s.server.start(t)
	waitReady(t, s.base, 90*time.Second)
	s.worker.start(t)
	var err error
	s.check, err = db.Open(context.Background(), s.mdb.dsn(dbName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.check.Close() })
}

// leadpipeEnv is the environment of a server or worker process listening
// on addr, on the database of dsn and the suite's Redis.
func (s *suite) leadpipeEnv(addr, dsn string) map[string]string {
	return map[string]string{
		"LEADPIPE_ADDR":                  addr,
		"LEADPIPE_MYSQL_DSN":             dsn,
		"LEADPIPE_REDIS_URL":             "redis://" + s.redis.Addr() + "/0",
		"LEADPIPE_BASE_URL":              s.base,
		"LEADPIPE_ADMIN_TOKEN":           adminToken,
		"LEADPIPE_SECRET_KEY":            "ZmF1bHRzLWtleS1mYXVsdHMta2V5LWZhdWx0cy0zMmI=",
		"LEADPIPE_WORKER":                "off",
		"LEADPIPE_SWEEP_AFTER":           "2s",
		"LEADPIPE_LOG_LEVEL":             "warn",
		"LEADPIPE_ALLOW_PRIVATE_TARGETS": "true",
		// Any free port at each (re)start: nothing here calls the worker's
		// listener, and a port picked once can be taken by an outgoing
		// connection before the worker restarts.
		"LEADPIPE_WORKER_ADDR": "127.0.0.1:0",
	}
}

// phase sends one burst, injects the fault once a third of it is
// acknowledged, waits for the burst, then checks the invariants.
func (s *suite) phase(name string, inject func()) {
	t := s.t
	t.Helper()
	s.mu.Lock()
	first := s.next
	s.next += s.sc.perPhase
	firstKey := s.nextKey
	s.nextKey += s.sc.keysPerPhase
	s.mu.Unlock()
	work := make(chan int)
	var done sync.WaitGroup
	var acked int64
	var ackMu sync.Mutex
	third := make(chan struct{})
	var thirdOnce sync.Once
	for w := 0; w < s.sc.senders; w++ {
		done.Add(1)
		go func() {
			defer done.Done()
			for i := range work {
				if i < 0 {
					s.postWithKey(fmt.Sprintf("key-%d", -i-1))
					continue
				}
				s.deliver(i)
				ackMu.Lock()
				acked++
				if acked >= int64(s.sc.perPhase/3) {
					thirdOnce.Do(func() { close(third) })
				}
				ackMu.Unlock()
			}
		}()
	}
	go func() {
		for i := 0; i < s.sc.perPhase; i++ {
			work <- first + i
			if s.sc.keysPerPhase > 0 && i%(s.sc.perPhase/s.sc.keysPerPhase) == 0 && firstKey < s.nextKey {
				work <- -(firstKey + 1)
				firstKey++
			}
		}
		close(work)
	}()
	select {
	case <-third:
	case <-time.After(5 * time.Minute):
		t.Fatalf("%s: a third of the burst was not acknowledged in 5 minutes", name)
	}
	t.Logf("fault: %s", name)
	inject()
	wait := make(chan struct{})
	go func() { done.Wait(); close(wait) }()
	select {
	case <-wait:
	case <-time.After(10 * time.Minute):
		t.Fatalf("%s: senders did not finish in 10 minutes", name)
	}
	s.invariants(name)
}

func (s *suite) provision() {
	h := s.newTenant("faults")
	s.tenantID, s.token, s.sourceID, s.secret, s.hookURL = h.tenantID, h.token, h.sourceID, h.secret, h.hookURL
}

// hooks is a provisioned tenant with one standard source.
type hooks struct {
	tenantID, token, sourceID, secret, hookURL string
}

// newTenant provisions a tenant through the admin API and creates its
// standard source "hooks".
func (s *suite) newTenant(slug string) hooks {
	t := s.t
	var ten struct {
		ID    string `json:"id"`
		Token string `json:"api_token"`
	}
	s.mustJSON("POST", "/api/admin/v1/tenants", adminToken, map[string]string{"slug": slug, "name": slug,
		"admin_email": "admin@" + slug + ".test", "admin_password": "faults-password-123"}, 201, &ten)
	var src struct {
		ID         string `json:"id"`
		Secret     string `json:"secret"`
		WebhookURL string `json:"webhook_url"`
	}
	s.mustJSON("POST", "/api/v1/sources", ten.Token, map[string]string{"slug": "hooks", "name": "Hooks", "kind": "standard"}, 201, &src)
	if !strings.HasPrefix(src.WebhookURL, s.base) {
		t.Fatalf("webhook url %q", src.WebhookURL)
	}
	return hooks{tenantID: ten.ID, token: ten.Token, sourceID: src.ID, secret: src.Secret, hookURL: src.WebhookURL}
}

// humanEdits: deliveries for n natural keys, then a human qualifies each
// lead; later deliveries for those keys must not reset the status.
func (s *suite) humanEdits(n int) {
	t := s.t
	s.mu.Lock()
	first := s.next
	s.next += n
	s.mu.Unlock()
	for i := 0; i < n; i++ {
		s.deliver(first + i)
	}
	s.settled("before the first fault")
	var ids []string
	if err := s.check.Select(&ids, `SELECT id FROM leads WHERE tenant_id = ? AND source_id = ? ORDER BY source_ref`, s.tenantID, s.sourceID); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		res := s.do("GET", "/api/v1/leads/"+id, s.token, nil, nil)
		if res.status != 200 {
			t.Fatalf("GET lead %s: %d %s", id, res.status, res.body)
		}
		r := s.do("PATCH", "/api/v1/leads/"+id, s.token, map[string]string{"status": "qualified"}, map[string]string{"If-Match": res.header.Get("ETag")})
		if r.status != 200 {
			t.Fatalf("PATCH lead %s: %d %s", id, r.status, r.body)
		}
		s.human[id] = "qualified"
	}
}

// refOf: two deliveries per natural key, spread over the whole run, and
// the first keys (humanly edited) keep coming back.
func refOf(i int) string {
	if i%7 == 0 {
		return fmt.Sprintf("ref-%d", (i/7)%10)
	}
	return fmt.Sprintf("ref-%d", 10+i/2)
}

// deliver sends delivery i until it is answered 2xx (every fifth twice: a
// sender's own duplicate), re-signing each attempt as a real sender does.
func (s *suite) deliver(i int) {
	msg := fmt.Sprintf("msg_%d", i)
	ref := refOf(i)
	s.mu.Lock()
	s.msgRef[msg] = ref
	s.mu.Unlock()
	times := 1
	if i%5 == 0 {
		times = 2
	}
	h := hooks{secret: s.secret, hookURL: s.hookURL}
	for k := 0; k < times; k++ {
		id := s.deliverTo(h, msg, ref)
		s.mu.Lock()
		if s.acks[msg] == nil {
			s.acks[msg] = map[string]bool{}
		}
		s.acks[msg][id] = true
		s.mu.Unlock()
	}
}

// deliverTo sends one signed delivery of the record ref to a tenant's
// source until it is answered 2xx and returns the delivery id answered.
func (s *suite) deliverTo(h hooks, msg, ref string) string {
	return s.untilAccepted(func() (*http.Request, error) {
		now := time.Now()
		body := kinds.SampleBody(kinds.Standard, msg, ref, kinds.Lead{Email: ref + "@example.com", Name: "Lead " + ref}, now)
		hdr, b, err := kinds.Sign(kinds.Standard, nil, h.secret, msg, body, now)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequest("POST", h.hookURL, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		for name, v := range hdr {
			req.Header[name] = v
		}
		return req, nil
	}, "delivery_id")
}

// postWithKey creates a manual lead with an Idempotency-Key, retrying
// (same key, same body) until 2xx; every fourth key is sent twice.
func (s *suite) postWithKey(key string) {
	body, _ := json.Marshal(map[string]string{"name": "Manual " + key, "email": key + "@manual.test"})
	for k := 0; k < 2; k++ {
		id := s.untilAccepted(func() (*http.Request, error) {
			req, err := http.NewRequest("POST", s.base+"/api/v1/leads", bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.token)
			req.Header.Set("Idempotency-Key", key)
			return req, nil
		}, "id")
		s.mu.Lock()
		if s.keyLeads[key] == nil {
			s.keyLeads[key] = map[string]bool{}
		}
		s.keyLeads[key][id] = true
		s.mu.Unlock()
		if !strings.HasSuffix(key, "0") && !strings.HasSuffix(key, "4") && !strings.HasSuffix(key, "8") {
			break
		}
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

// untilAccepted is the retrying sender: any error or non-2xx answer is
// retried with capped exponential backoff and jitter; 4xx other than 408,
// 409 and 429 fail the test (the request itself is wrong).
func (s *suite) untilAccepted(build func() (*http.Request, error), idField string) string {
	t := s.t
	backoff := 50 * time.Millisecond
	deadline := time.Now().Add(5 * time.Minute)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		req, err := build()
		if err != nil {
			t.Errorf("build request: %v", err)
			return ""
		}
		res, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				var v map[string]any
				if err := json.Unmarshal(b, &v); err != nil {
					t.Errorf("2xx with a body that is not JSON: %q", b)
					return ""
				}
				id, _ := v[idField].(string)
				if id == "" {
					t.Errorf("2xx without %s: %s", idField, b)
				}
				return id
			}
			if res.StatusCode/100 == 4 && res.StatusCode != 408 && res.StatusCode != 409 && res.StatusCode != 429 {
				t.Errorf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, b)
				return ""
			}
		}
		s.mu.Lock()
		s.retries++
		s.mu.Unlock()
		time.Sleep(backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1)))
		backoff = min(backoff*2, time.Second)
	}
	t.Errorf("not acknowledged within 5 minutes")
	return ""
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (s *suite) do(method, path, token string, body any, headers map[string]string) response {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}

func (s *suite) mustJSON(method, path, token string, body any, want int, out any) {
	r := s.do(method, path, token, body, nil)
	if r.status != want {
		s.t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// settled waits until no delivery is left received.
func (s *suite) settled(when string) {
	t := s.t
	t.Helper()
	if n, ok := s.untilNone(`SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = 'received'`, s.tenantID); !ok {
		t.Fatalf("%s: %d deliveries still received after the settle time (%s)", when, n, s.sc.settle)
	}
}

// untilNone polls the count query every 250 ms until it answers 0 or the
// settle time is over; it returns the last count and whether it reached 0.
func (s *suite) untilNone(query string, args ...any) (int, bool) {
	deadline := time.Now().Add(s.sc.settle)
	var n int
	for time.Now().Before(deadline) {
		if err := s.check.Get(&n, query, args...); err == nil && n == 0 {
			return 0, true
		}
		time.Sleep(250 * time.Millisecond)
	}
	return n, false
}

func (s *suite) invariants(after string) {
	t := s.t
	t.Helper()
	s.settled("after " + after)
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(format string, args ...any) { t.Errorf("after %s: "+format, append([]any{after}, args...)...) }

	// Every acknowledged delivery stored exactly once, every answer naming it.
	var rows []struct {
		DeliveryID string  `db:"delivery_id"`
		ID         string  `db:"id"`
		State      string  `db:"state"`
		LeadID     *string `db:"lead_id"`
	}
	if err := s.check.Select(&rows, `SELECT delivery_id, id, state, lead_id FROM deliveries WHERE tenant_id = ? AND source_id = ?`, s.tenantID, s.sourceID); err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, r := range rows {
		if _, dup := stored[r.DeliveryID]; dup {
			fail("delivery %s stored twice", r.DeliveryID)
		}
		stored[r.DeliveryID] = r.ID
		if r.State != "processed" || r.LeadID == nil {
			fail("delivery %s is %s (lead %v)", r.DeliveryID, r.State, r.LeadID)
		}
	}
	for msg, ids := range s.acks {
		row, ok := stored[msg]
		if !ok {
			fail("acknowledged delivery %s is not stored", msg)
			continue
		}
		if len(ids) != 1 || !ids[row] {
			fail("delivery %s answered ids %v, stored as %s", msg, keys(ids), row)
		}
	}
	if len(stored) != len(s.acks) {
		fail("%d deliveries stored, %d acknowledged", len(stored), len(s.acks))
	}
	// Leads = distinct natural keys.
	refs := map[string]bool{}
	for msg := range s.acks {
		refs[s.msgRef[msg]] = true
	}
	var perRef []struct {
		Ref string `db:"source_ref"`
		N   int    `db:"n"`
	}
	if err := s.check.Select(&perRef, `SELECT source_ref, COUNT(*) AS n FROM leads WHERE tenant_id = ? AND source_id = ? GROUP BY source_ref`, s.tenantID, s.sourceID); err != nil {
		t.Fatal(err)
	}
	for _, r := range perRef {
		if r.N != 1 {
			fail("natural key %s has %d leads", r.Ref, r.N)
		}
		if !refs[r.Ref] {
			fail("lead for %s, which no acknowledged delivery carries", r.Ref)
		}
	}
	if len(perRef) != len(refs) {
		fail("%d leads for %d distinct natural keys", len(perRef), len(refs))
	}
	// No human status reset.
	for id, want := range s.human {
		var got string
		if err := s.check.Get(&got, `SELECT status FROM leads WHERE tenant_id = ? AND id = ?`, s.tenantID, id); err != nil || got != want {
			fail("lead %s status %q (err %v), a human set %q", id, got, err, want)
		}
	}
	// One effect per Idempotency-Key.
	var manual []struct {
		ID    string `db:"id"`
		Email string `db:"email"`
	}
	if err := s.check.Select(&manual, `SELECT id, email FROM leads WHERE tenant_id = ? AND source_id = ''`, s.tenantID); err != nil {
		t.Fatal(err)
	}
	byEmail := map[string][]string{}
	for _, m := range manual {
		byEmail[m.Email] = append(byEmail[m.Email], m.ID)
	}
	for key, ids := range s.keyLeads {
		leads := byEmail[key+"@manual.test"]
		if len(leads) != 1 {
			fail("Idempotency-Key %s made %d leads", key, len(leads))
			continue
		}
		if len(ids) != 1 || !ids[leads[0]] {
			fail("Idempotency-Key %s answered lead ids %v, stored %s", key, keys(ids), leads[0])
		}
	}
	if len(manual) != len(s.keyLeads) {
		fail("%d manual leads for %d Idempotency-Keys", len(manual), len(s.keyLeads))
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
