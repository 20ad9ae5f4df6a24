package web

import "testing"

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
