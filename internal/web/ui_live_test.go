package web_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"leadpipe/internal/apptest"
)

// openEvents opens GET /events with b's session (and Last-Event-ID when
// given) and returns its frames, lines joined by "\n" (comments too).
func openEvents(t *testing.T, b *browser, lastID ...string) (*http.Response, <-chan string) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.url+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if len(lastID) > 0 {
		req.Header.Set("Last-Event-ID", lastID[0])
	}
	c := *b.c
	c.Timeout = 0
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	out := make(chan string, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		var cur []string
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "" && len(cur) > 0:
				out <- strings.Join(cur, "\n")
				cur = nil
			case line != "":
				cur = append(cur, line)
			}
		}
	}()
	return res, out
}

// TestUIEventsTenantScoped: two signed-in users of two tenants hold open
// streams; a lead created and a lead reassigned through the API of one
// tenant reach that tenant's user only. Without a session there is no
// stream.
func TestUIEventsTenantScoped(t *testing.T) {
	e := uiEnv(t, "ui_live")
	acme, globex := e.Tenant("acme"), e.Tenant("globex")
	ba, bg := newBrowser(t, e), newBrowser(t, e)
	ba.login(acme.Admin.Email, acme.AdminPassword)
	bg.login(globex.Admin.Email, globex.AdminPassword)

	if p := newBrowser(t, e).get("/events"); p.status != http.StatusSeeOther {
		t.Fatalf("GET /events without a session: %d, want 303 to the login", p.status)
	}
	ra, ea := openEvents(t, ba)
	_, eg := openEvents(t, bg)
	if ct := ra.Header.Get("Content-Type"); ct != "text/event-stream" || ra.Header.Get("X-Accel-Buffering") != "no" || ra.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", ra.Header)
	}
	waitStreams(t, e, 2)

	var created struct {
		ID string `json:"id"`
	}
	res := e.Do("POST", "/api/v1/leads", acme.Token, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"}, "Idempotency-Key", "live-create-1")
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	res.JSON(t, &created)
	if s := nextEvent(t, ea); !strings.Contains(s, `"type":"lead.created"`) || !strings.Contains(s, created.ID) || !strings.Contains(s, "Ada Lovelace") {
		t.Fatalf("acme got %q", s)
	}
	res = e.Do("PATCH", "/api/v1/leads/"+created.ID, acme.Token, map[string]any{"owner_id": acme.Admin.ID}, "If-Match", "*")
	if res.Status != http.StatusOK {
		t.Fatalf("reassign: %d %s", res.Status, res.Body)
	}
	if s := nextEvent(t, ea); !strings.Contains(s, `"type":"lead.reassigned"`) || !strings.Contains(s, `"owner_id":"`+acme.Admin.ID+`"`) {
		t.Fatalf("acme got %q", s)
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		select {
		case s := <-eg:
			if strings.Contains(s, "event:") {
				t.Fatalf("globex received acme's event %q", s)
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// nextEvent returns the next frame with an event (skipping comments).
func nextEvent(t *testing.T, ch <-chan string) string {
	t.Helper()
	deadline := time.After(3 * time.Second)
	for {
		select {
		case s, ok := <-ch:
			if !ok {
				t.Fatal("stream ended")
			}
			if strings.Contains(s, "event: ") {
				return s
			}
		case <-deadline:
			t.Fatal("no event within 3 s")
			return ""
		}
	}
}

// TestUIEventsHeartbeatAndResume: an idle stream sends comment lines at
// the heartbeat; a reconnect with Last-Event-ID gets what it missed, once,
// and an id the server no longer holds gets a reset.
func TestUIEventsHeartbeatAndResume(t *testing.T) {
	e := uiEnv(t, "ui_live_resume")
	acme := e.Tenant("acme")
	e.App.LiveHub.SetHeartbeat(50 * time.Millisecond)
	b := newBrowser(t, e)
	b.login(acme.Admin.Email, acme.AdminPassword)
	res, ev := openEvents(t, b)
	beats := 0
	for deadline := time.After(3 * time.Second); beats < 3; {
		select {
		case s := <-ev:
			if s == ": heartbeat" {
				beats++
			}
		case <-deadline:
			t.Fatalf("%d heartbeats in 3 s at 50 ms", beats)
		}
	}
	create := func(name string) string {
		t.Helper()
		var l struct {
			ID string `json:"id"`
		}
		r := e.Do("POST", "/api/v1/leads", acme.Token, map[string]any{"name": name}, "Idempotency-Key", "live-"+name)
		if r.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &l)
		return l.ID
	}
	create("First")
	first := nextEvent(t, ev)
	id := strings.TrimPrefix(strings.Split(first, "\n")[0], "id: ")
	if len(id) != 26 {
		t.Fatalf("first event %q has no id line", first)
	}
	_ = res.Body.Close()
	waitStreams(t, e, 0)

	missed := []string{create("Second"), create("Third")}
	_, again := openEvents(t, b, id)
	for _, l := range missed {
		if s := nextEvent(t, again); !strings.Contains(s, l) {
			t.Fatalf("resumed stream: %q, want lead %s", s, l)
		}
	}
	select {
	case s := <-again:
		if strings.Contains(s, "event: ") {
			t.Fatalf("resumed stream sent more: %q", s)
		}
	case <-time.After(200 * time.Millisecond):
	}
	_, lost := openEvents(t, b, "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
	if s := nextEvent(t, lost); !strings.HasPrefix(s, "event: reset") {
		t.Fatalf("unknown Last-Event-ID: %q, want a reset", s)
	}
}

func waitStreams(t *testing.T, e *apptest.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.App.LiveHub.Subscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want %d", e.App.LiveHub.Subscribers(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
