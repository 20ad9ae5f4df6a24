package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"leadpipe/internal/tenants"
)

// Behind a proxy without LEADPIPE_TRUST_PROXY every browser has the same
// address (here: every request comes from 127.0.0.1). 150 wrong passwords
// from one client — a script without cookies, spraying the admin and other
// accounts — pause that client only: the real user's browser logs in. 10
// wrong passwords for one account from one browser slow that browser on
// that account, not its other accounts and not other browsers.
func TestLoginThrottlePerClientAndAccount(t *testing.T) {
	e := uiEnv(t, "ui_throttle")
	ten := e.Tenant("acme")
	sam, err := e.App.Tenants.CreateUser(context.Background(), ten.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam", Password: "sam-password-1", Role: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	script := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	attempt := func(email, pw string) int {
		res, err := script.PostForm(e.URL+"/login", url.Values{"email": {email}, "password": {pw}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	limited := 0
	for i := 0; i < 150; i++ {
		email := ten.Admin.Email
		if i%3 == 1 {
			email = sam.Email
		} else if i%3 == 2 {
			email = "nobody@acme.test"
		}
		switch st := attempt(email, "wrong-password"); st {
		case http.StatusUnprocessableEntity:
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("wrong password %d: %d", i, st)
		}
	}
	if limited == 0 {
		t.Fatal("150 wrong passwords from one client were never slowed down")
	}
	// The script is paused, even with the right password...
	if st := attempt(ten.Admin.Email, ten.AdminPassword); st != http.StatusTooManyRequests {
		t.Fatalf("paused client with the right password: %d", st)
	}
	// ...the real users' browsers are not.
	real := newBrowser(t, e)
	real.get("/login")
	real.login(ten.Admin.Email, ten.AdminPassword)
	samB := newBrowser(t, e)
	samB.get("/login")
	samB.login(sam.Email, "sam-password-1")

	// 10 wrong passwords for one account from one browser.
	b := newBrowser(t, e)
	b.get("/login")
	for i := 0; i < 10; i++ {
		if p := b.post("/login", url.Values{"email": {sam.Email}, "password": {"nope-nope-nope"}}); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("attempt %d: %d", i+1, p.status)
		}
	}
	p := b.post("/login", url.Values{"email": {sam.Email}, "password": {"sam-password-1"}})
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" || !strings.Contains(p.body, "Try again in") {
		t.Fatalf("11th attempt on the account: %d", p.status)
	}
	// The same browser (same address) still signs in to another account,
	// and another browser still signs in to this one.
	b.login(ten.Admin.Email, ten.AdminPassword)
	other := newBrowser(t, e)
	other.get("/login")
	other.login(sam.Email, "sam-password-1")
}
