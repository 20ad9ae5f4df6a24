package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DeviceCookie marks a browser the server itself trusts for one account:
// set after a successful login, signed (HMAC-SHA256 under a key derived
// from LEADPIPE_SECRET_KEY) over the account and a random nonce, so a
// client cannot make one up (OWASP's device-cookie pattern).
const DeviceCookie = "lp_device"

// LoginThrottle slows password guessing without locking the account's
// owner out. A client's own cookies prove nothing (a script sends a fresh
// one with every guess), so failures are counted, in memory (each replica
// its own), by what the client cannot choose:
//
//   - per account, every failure from a client without a trusted device
//     cookie for that account: after AccountFree of them, an exponential
//     backoff (from 30 s, doubling, at most 15 min) for every such client;
//   - per trusted device (the nonce of its signed cookie): the same backoff
//     after DeviceFree failures, for that device only. A trusted device is
//     exempt from the account's backoff, so the owner still gets in while
//     a script hammers the account;
//   - per address, failures of untrusted clients: past IPMax in Window the
//     address is spraying, and its untrusted clients get only IPAccountFree
//     failures per account instead of AccountFree. Accounts with fewer
//     failures stay open to it, so a colleague behind the same NAT signs in
//     to their own account from a fresh browser.
//
// IPHard, when set, also backs off every untrusted client of an address
// past IPHard failures in Window, whatever the account (the reset page:
// one address asking links for many people).
type LoginThrottle struct {
	AccountFree   int
	DeviceFree    int
	IPMax         int
	IPAccountFree int
	IPHard        int
	Window        time.Duration // how long failures are remembered
	Now           func() time.Time

	mu      sync.Mutex
	account map[string]*failures
	device  map[string]*failures
	ip      map[string]*failures
}

type failures struct {
	n     int
	first time.Time
	last  time.Time
}

// NewLoginThrottle has the defaults described on LoginThrottle.
func NewLoginThrottle() *LoginThrottle {
	return &LoginThrottle{AccountFree: 10, DeviceFree: 10, IPMax: 50, IPAccountFree: 3,
		Window: 15 * time.Minute, Now: time.Now,
		account: map[string]*failures{}, device: map[string]*failures{}, ip: map[string]*failures{}}
}

// NewResetThrottle limits "Forgot password?" like logins, counting every
// request (known address or not, so the limit tells nothing either):
// per address 3 in 15 minutes, then 30 s doubling; per client address 30
// in 15 minutes whatever the addresses asked for, and past 10 only one
// more per address.
func NewResetThrottle() *LoginThrottle {
	l := NewLoginThrottle()
	l.AccountFree, l.IPMax, l.IPAccountFree, l.IPHard = 3, 10, 1, 30
	return l
}

// live returns m[key] unless it expired (window since its first failure).
func live(m map[string]*failures, key string, window time.Duration, now time.Time) *failures {
	f := m[key]
	if f != nil && now.Sub(f.first) >= window {
		delete(m, key)
		return nil
	}
	return f
}

// backoff is the wait after free failures: 30 s doubling, at most 15 min.
func backoff(f *failures, free int, now time.Time) time.Duration {
	if f == nil || f.n < free {
		return 0
	}
	d := 30 * time.Second << min(f.n-free, 5)
	if d > 15*time.Minute {
		d = 15 * time.Minute
	}
	if wait := f.last.Add(d).Sub(now); wait > 0 {
		return wait
	}
	return 0
}

// Allow reports whether a client at ip may try account now, and if not,
// how long to wait. device is the nonce of a valid trusted-device cookie
// for this account, "" for every other client.
func (l *LoginThrottle) Allow(ip, account, device string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	if device != "" {
		wait := backoff(live(l.device, device, l.Window, now), l.DeviceFree, now)
		return wait == 0, wait
	}
	a := live(l.account, account, l.Window, now)
	if wait := backoff(a, l.AccountFree, now); wait > 0 {
		return false, wait
	}
	addr := live(l.ip, ip, l.Window, now)
	if l.IPHard > 0 {
		if wait := backoff(addr, l.IPHard, now); wait > 0 {
			return false, wait
		}
	}
	if addr != nil && addr.n >= l.IPMax {
		if wait := backoff(a, l.IPAccountFree, now); wait > 0 {
			return false, wait
		}
	}
	return true, 0
}

// Fail records a failed login (device as for Allow).
func (l *LoginThrottle) Fail(ip, account, device string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	if len(l.account)+len(l.device)+len(l.ip) > 150_000 { // bound memory under a spray of keys
		for _, m := range []map[string]*failures{l.account, l.device, l.ip} {
			for k := range m {
				live(m, k, l.Window, now)
			}
		}
	}
	add := func(m map[string]*failures, key string) {
		f := live(m, key, l.Window, now)
		if f == nil {
			f = &failures{first: now}
			m[key] = f
		}
		f.n++
		f.last = now
	}
	if device != "" {
		add(l.device, device)
		return
	}
	add(l.account, account)
	add(l.ip, ip)
}

// Succeed forgets a trusted device's failures. An untrusted success leaves
// the account's count alone: the guesses before it still happened.
func (l *LoginThrottle) Succeed(device string) {
	if device == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.device, device)
}

// loginSigner signs what the login hands a browser to bring back: the
// trusted-device cookie and the tenant chooser's ticket.
type loginSigner struct{ key []byte }

func (d loginSigner) mac(parts ...string) string {
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// issue returns a new device cookie value for account.
func (d loginSigner) issue(account string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	return base64.RawURLEncoding.EncodeToString([]byte(account)) + "." + nonce + "." + d.mac("device", account, nonce)
}

// device returns the nonce of r's device cookie when the server signed it
// for account, "" otherwise.
func (d loginSigner) device(r *http.Request, account string) string {
	c, err := r.Cookie(DeviceCookie)
	if err != nil || len(c.Value) > 1024 {
		return ""
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return ""
	}
	acc, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || string(acc) != account || !hmac.Equal([]byte(parts[2]), []byte(d.mac("device", account, parts[1]))) {
		return ""
	}
	return parts[1]
}

// ticketTTL is how long the tenant chooser may take.
const ticketTTL = 5 * time.Minute

// ticket proves, for ticketTTL, that account's password opened the given
// memberships ("tenantID:userID"), so choosing a tenant needs no second
// password.
func (d loginSigner) ticket(account string, members []string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(ticketTTL).Unix(), 10)
	m := strings.Join(members, ",")
	return base64.RawURLEncoding.EncodeToString([]byte(account)) + "." + exp + "." + m + "." + d.mac("ticket", account, exp, m)
}

// openTicket returns the account and memberships of a valid ticket.
func (d loginSigner) openTicket(t string, now time.Time) (string, []string, bool) {
	parts := strings.Split(t, ".")
	if len(t) > 4096 || len(parts) != 4 {
		return "", nil, false
	}
	acc, err := base64.RawURLEncoding.DecodeString(parts[0])
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || err2 != nil || now.Unix() > exp || !hmac.Equal([]byte(parts[3]), []byte(d.mac("ticket", string(acc), parts[1], parts[2]))) {
		return "", nil, false
	}
	return string(acc), strings.Split(parts[2], ","), true
}

// trustDevice marks the browser trusted for account after a successful
// login.
func (s *Server) trustDevice(w http.ResponseWriter, r *http.Request, account string) {
	http.SetCookie(w, &http.Cookie{Name: DeviceCookie, Value: s.ui.devices.issue(account), Path: "/login",
		MaxAge: 400 * 24 * 3600, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureRequest(r)})
}
