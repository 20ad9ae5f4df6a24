package web_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openEvents opens GET /events with b's session and returns its data lines
// ("event: …" and "data: …" joined per event; heartbeats skipped).
func openEvents(t *testing.T, b *browser) (*http.Response, <-chan string) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.url+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
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
			case strings.HasPrefix(line, "event: "), strings.HasPrefix(line, "data: "):
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
	deadline := time.Now().Add(5 * time.Second)
	for e.App.LiveHub.Subscribers() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want 2", e.App.LiveHub.Subscribers())
		}
		time.Sleep(10 * time.Millisecond)
	}

	var created struct {
		ID string `json:"id"`
	}
	res := e.Do("POST", "/api/v1/leads", acme.Token, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"}, "Idempotency-Key", "live-create-1")
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	res.JSON(t, &created)
	next := func(ch <-chan string) string {
		t.Helper()
		select {
		case s := <-ch:
			return s
		case <-time.After(3 * time.Second):
			t.Fatal("no event within 3 s")
			return ""
		}
	}
	if s := next(ea); !strings.Contains(s, `"type":"lead.created"`) || !strings.Contains(s, created.ID) || !strings.Contains(s, "Ada Lovelace") {
		t.Fatalf("acme got %q", s)
	}
	res = e.Do("PATCH", "/api/v1/leads/"+created.ID, acme.Token, map[string]any{"owner_id": acme.Admin.ID}, "If-Match", "*")
	if res.Status != http.StatusOK {
		t.Fatalf("reassign: %d %s", res.Status, res.Body)
	}
	if s := next(ea); !strings.Contains(s, `"type":"lead.reassigned"`) || !strings.Contains(s, `"owner_id":"`+acme.Admin.ID+`"`) {
		t.Fatalf("acme got %q", s)
	}
	select {
	case s := <-eg:
		t.Fatalf("globex received acme's event %q", s)
	case <-time.After(500 * time.Millisecond):
	}
}
