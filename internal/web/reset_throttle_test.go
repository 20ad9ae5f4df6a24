package web_test

import (
	"strconv"
	"testing"
	"time"

	"leadpipe/internal/web"
)

// The reset limit counts requests: an address gets 3 in its window, and
// one client asking for many addresses is stopped after 30 whatever the
// addresses (past 10, each new address gets only one).
func TestResetThrottle(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	l := web.NewResetThrottle()
	l.Now = func() time.Time { return now }
	ask := func(ip, addr string) bool {
		ok, _ := l.Allow(ip, addr, "")
		if ok {
			l.Fail(ip, addr, "")
		}
		return ok
	}
	for i := range 3 {
		if !ask("10.0.0.1", "pat@example.test") {
			t.Fatalf("request %d for one address refused", i+1)
		}
	}
	if ask("10.0.0.1", "pat@example.test") || ask("10.0.0.2", "pat@example.test") {
		t.Fatal("a fourth request for one address in the window, from any client, allowed")
	}
	now = now.Add(31 * time.Second)
	if !ask("10.0.0.3", "pat@example.test") {
		t.Fatal("the address is still refused after the first wait")
	}
	for i := range 30 {
		if !ask("10.9.9.9", "spray-"+strconv.Itoa(i)+"@example.test") {
			t.Fatalf("spray request %d refused before the hard limit", i+1)
		}
	}
	if ask("10.9.9.9", "spray-new@example.test") {
		t.Fatal("a 31st request from one client allowed")
	}
	if !ask("10.0.0.4", "someone@example.test") {
		t.Fatal("another client is held by the sprayer's limit")
	}
	now = now.Add(16 * time.Minute)
	if !ask("10.9.9.9", "spray-new@example.test") {
		t.Fatal("the client is still refused after the window")
	}
}
