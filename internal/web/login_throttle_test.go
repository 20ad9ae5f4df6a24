package web_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"leadpipe/internal/tenants"
	"leadpipe/internal/web"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Every request here comes from 127.0.0.1, as behind a proxy without
// LEADPIPE_TRUST_PROXY or an office NAT. A script makes 100 guesses at one
// account, each with fresh random client and device cookies: it is
// throttled after the account's limit and then refused even with the right
// password, while the owner's browser, trusted after an earlier login,
// still gets in, and a colleague with a fresh browser signs in to their
// own account. A trusted device that itself fails is slowed on its own.
func TestLoginThrottleScriptCannotStepAround(t *testing.T) {
	e := uiEnv(t, "ui_throttle")
	ten := e.Tenant("acme")
	sam, err := e.App.Tenants.CreateUser(context.Background(), ten.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam", Password: "sam-password-1", Role: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	owner := newBrowser(t, e)
	owner.get("/login")
	owner.login(ten.Admin.Email, ten.AdminPassword) // this browser is now trusted for the account
	owner.post("/logout", url.Values{})

	script := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	attempt := func(email, pw string) int {
		req, _ := http.NewRequest("POST", e.URL+"/login", strings.NewReader(url.Values{"email": {email}, "password": {pw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "lp_client", Value: randomHex(16)})
		req.AddCookie(&http.Cookie{Name: web.DeviceCookie, Value: "YWRtaW5AYWNtZS50ZXN0." + randomHex(16) + "." + randomHex(32)})
		res, err := script.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	firstLimited := 0
	for i := 1; i <= 100; i++ {
		switch st := attempt(ten.Admin.Email, "wrong-password-"+strconv.Itoa(i)); st {
		case http.StatusUnprocessableEntity:
			if firstLimited != 0 {
				t.Fatalf("guess %d was tried again after the throttle started at %d", i, firstLimited)
			}
		case http.StatusTooManyRequests:
			if firstLimited == 0 {
				firstLimited = i
			}
		default:
			t.Fatalf("guess %d: %d", i, st)
		}
	}
	if firstLimited != 11 {
		t.Fatalf("throttled from guess %d, want 11 (10 free failures per account)", firstLimited)
	}
	if st := attempt(ten.Admin.Email, ten.AdminPassword); st != http.StatusTooManyRequests {
		t.Fatalf("the script with the right password: %d, want 429", st)
	}
	owner.get("/login")
	owner.login(ten.Admin.Email, ten.AdminPassword)
	colleague := newBrowser(t, e)
	colleague.get("/login")
	colleague.login(sam.Email, "sam-password-1")

	// The trusted device failing: 10 free failures, then its own backoff.
	owner.post("/logout", url.Values{})
	for i := 0; i < 10; i++ {
		if p := owner.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {"typo-typo-typo"}}); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("trusted device, wrong password %d: %d", i+1, p.status)
		}
	}
	p := owner.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {ten.AdminPassword}})
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" || !strings.Contains(p.body, "Try again in") {
		t.Fatalf("trusted device after 10 failures: %d", p.status)
	}
}

// A spray from one address over many accounts: past the address's limit
// each account gets only 3 failures from it, yet a colleague behind the
// same address still signs in from a fresh browser.
func TestLoginThrottleSprayFromOneAddress(t *testing.T) {
	e := uiEnv(t, "ui_throttle_spray")
	ten := e.Tenant("acme")
	if _, err := e.App.Tenants.CreateUser(context.Background(), ten.ID, tenants.CreateUserInput{Email: "sam@acme.test", Name: "Sam", Password: "sam-password-1", Role: "staff"}); err != nil {
		t.Fatal(err)
	}
	script := newBrowser(t, e)
	for i := 0; i < 60; i++ {
		if p := script.post("/login", url.Values{"email": {"u" + strconv.Itoa(i) + "@acme.test"}, "password": {"wrong-password"}}); p.status != http.StatusUnprocessableEntity {
			t.Fatalf("spray %d: %d", i, p.status)
		}
	}
	statuses := []int{}
	for i := 0; i < 5; i++ {
		statuses = append(statuses, script.post("/login", url.Values{"email": {ten.Admin.Email}, "password": {"wrong-password"}}).status)
	}
	if statuses[2] != http.StatusUnprocessableEntity || statuses[3] != http.StatusTooManyRequests || statuses[4] != http.StatusTooManyRequests {
		t.Fatalf("guesses at one account from a spraying address: %v, want 3 × 422 then 429", statuses)
	}
	colleague := newBrowser(t, e)
	colleague.get("/login")
	colleague.login("sam@acme.test", "sam-password-1")
}
