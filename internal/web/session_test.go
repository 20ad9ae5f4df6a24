package web

import (
	"testing"
	"time"
)

func TestLoginLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLoginLimiter(3, 5*time.Minute)
	l.Now = func() time.Time { return now }
	for i := range 3 {
		if ok, _ := l.Allow("k"); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		l.Fail("k")
		now = now.Add(time.Minute)
	}
	ok, wait := l.Allow("k")
	if ok || wait != 2*time.Minute {
		t.Fatalf("4th attempt: %v, wait %s", ok, wait)
	}
	if ok, _ := l.Allow("other"); !ok {
		t.Fatal("another key is limited")
	}
	now = now.Add(2 * time.Minute) // the first failure leaves the window
	if ok, _ := l.Allow("k"); !ok {
		t.Fatal("still limited after the window moved")
	}
	l.Reset("k")
	if len(l.hits) != 0 {
		t.Fatalf("hits left: %v", l.hits)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "/leads",
		"/leads/board":      "/leads/board",
		"/leads?status=new": "/leads?status=new",
		"//evil.example":    "/leads",
		"/\\evil.example":   "/leads",
		"https://evil.test": "/leads",
		"/login":            "/leads",
		"/x\r\nSet-Cookie:": "/leads",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
