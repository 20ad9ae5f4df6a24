package events_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
)

// Many relays racing over the same outbox, and many copies of the same
// attempt task: every event reaches the endpoint exactly once.
func TestConcurrentRelaysAndDuplicateTasksSendOnce(t *testing.T) {
	e := newEnv(t, envOpts{allowPrivate: true, maxInFlight: 64})
	r := newReceiver(t)
	e.subscribe(r)
	const n = 200
	for i := 0; i < n; i++ {
		e.emitLead()
	}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, err := e.S.RelayTenant(context.Background(), e.Tenants[0], 25)
				if err != nil {
					t.Error(err)
					return
				}
				if k == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	// The same attempt of every delivery run 8 times at once, beside the worker.
	var ids []string
	if err := e.DB.Select(&ids, `SELECT id FROM event_deliveries WHERE tenant_id = ?`, e.Tenants[0]); err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("%d deliveries for %d events", len(ids), n)
	}
	for _, id := range ids[:50] {
		for j := 0; j < 8; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := e.S.Deliver(context.Background(), e.Tenants[0], id, 1); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	e.settle()
	seen := map[string]int{}
	for _, g := range r.requests() {
		seen[g.ID]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct events received, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("event %s received %d times", id, c)
		}
	}
	var atts int
	_ = e.DB.Get(&atts, `SELECT COUNT(*) FROM event_attempts WHERE tenant_id = ?`, e.Tenants[0])
	if atts != n {
		t.Fatalf("%d attempts recorded, want %d", atts, n)
	}
}

// Redis down while relaying: the fan-out commits, the enqueue fails; once
// Redis is back the sweeper sends every event once.
func TestRedisDownAtRelay(t *testing.T) {
	e, r := envWithReceiver(t)
	e.subscribe(r)
	good := e.S.Queue
	e.S.Queue = deadQueue{}
	for i := 0; i < 5; i++ {
		e.emitLead()
	}
	e.relay()
	time.Sleep(300 * time.Millisecond)
	if r.count() != 0 {
		t.Fatalf("sent with Redis down")
	}
	e.S.Queue = good
	e.Clock.Advance(2 * time.Minute) // past RequeueAfter
	e.settle()
	if r.count() != 5 {
		t.Fatalf("%d received after Redis came back, want 5", r.count())
	}
}

// The crash test: a child process commits a business change with its
// event and is SIGKILLed before any relay runs. The event is delivered, once.
func TestCrashAfterCommitBeforeRelay(t *testing.T) {
	if os.Getenv("EVENTS_CRASH_CHILD_DSN") != "" {
		t.Skip("child")
	}
	e, r := envWithReceiver(t)
	e.subscribe(r)
	dsn := e.DSN
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "EVENTS_CRASH_CHILD_DSN="+dsn, "EVENTS_CRASH_TENANT="+e.Tenants[0])
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err == nil || !asExit(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "committed") {
		t.Fatalf("child output: %s", out)
	}
	var pending int
	if err := e.DB.Get(&pending, `SELECT COUNT(*) FROM events WHERE tenant_id = ? AND pending = 1`, e.Tenants[0]); err != nil || pending != 1 {
		t.Fatalf("pending events after the crash: %d (%v)", pending, err)
	}
	e.settle()
	e.Clock.Advance(time.Hour)
	e.settle()
	got := r.requests()
	if len(got) != 1 || !got[0].Verified || got[0].Envelope.Type != events.LeadCreated {
		t.Fatalf("after the crash: %+v", got)
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

// TestCrashChild runs only inside TestCrashAfterCommitBeforeRelay's child.
func TestCrashChild(t *testing.T) {
	name := os.Getenv("EVENTS_CRASH_CHILD_DSN")
	if name == "" {
		t.Skip("runs as the crash test's child process")
	}
	d, err := db.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	tenant := os.Getenv("EVENTS_CRASH_TENANT")
	id := ids.New()
	o := &events.Outbox{}
	err = db.InTx(context.Background(), d, func(tx *sqlx.Tx) error {
		// The business change and its event, one transaction.
		if _, err := tx.Exec(`INSERT INTO event_sequences (tenant_id, resource_id, seq) VALUES (?, ?, 0)`, tenant, ids.New()); err != nil {
			return err
		}
		return o.Emit(context.Background(), tx, tenant, events.Event{Type: events.LeadCreated, ResourceID: id, Data: lead{ID: id}})
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("committed")
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Minute)
}

type deadQueue struct{}

func (deadQueue) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	return nil, &net.OpError{Op: "dial", Err: fmt.Errorf("connection refused")}
}

// At delivery time the dialled address is checked again: a name that now
// resolves to loopback (DNS rebinding), and plain http, are refused and the
// attempt is recorded with the reason; nothing reaches the receiver.
func TestDeliveryTimeSSRFGuard(t *testing.T) {
	e := newEnv(t, envOpts{allowPrivate: true}) // saving is allowed (the name "looked public")
	e.S.Client = events.NewClient(false)        // delivering is production
	r := newReceiver(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.srv.URL, "http://"))
	cases := map[string]string{
		"https://localhost:" + port + "/hook":      "localhost resolves to 127.0.0.1, which is a loopback address",
		"https://127.0.0.1:" + port + "/hook":      "127.0.0.1 is a loopback address",
		"https://169.254.169.254/latest/meta-data": "169.254.169.254 is a cloud metadata address",
		"https://10.0.0.1/hook":                    "10.0.0.1 is a private address",
		"https://[fe80::1]/hook":                   "link-local",
		"http://example.com/hook":                  "http:// targets are not allowed",
	}
	idList := map[string]string{}
	for u := range cases {
		idList[e.endpoint(e.Tenants[0], u, events.LeadCreated).ID] = u
	}
	e.emitLead()
	e.settle()
	for epID, u := range idList {
		atts, _, err := e.S.Attempts(context.Background(), e.Tenants[0], epID, "", 10)
		if err != nil || len(atts) != 1 {
			t.Fatalf("%s: attempts %+v %v", u, atts, err)
		}
		a := atts[0]
		if a.Outcome != events.OutcomeRefused || a.Error == nil || !strings.Contains(*a.Error, cases[u]) || a.Status != nil {
			t.Errorf("%s: attempt %+v (error %q)", u, a, deref(a.Error))
		}
	}
	if r.count() != 0 {
		t.Fatalf("the receiver on loopback was reached %d times", r.count())
	}
	_ = http.StatusOK
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
