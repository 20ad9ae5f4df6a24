package web

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// ClientCookie names a browser for the login throttle: a random id set on
// the login page, so clients behind one address (a proxy without
// LEADPIPE_TRUST_PROXY, an office NAT) are told apart.
const ClientCookie = "lp_client"

// LoginThrottle slows password guessing without locking everyone out. It
// counts failed logins three ways, in memory (each replica its own):
//
//   - per client and account: after PairFree failures an exponential
//     backoff (from 30 s, doubling, at most 15 min) before that client may
//     try that account again;
//   - per client (any account, password spraying): ClientMax failures in
//     ClientWindow pause that client;
//   - per account (any client): after AccountFree failures the same
//     backoff applies to every client that has itself failed recently; a
//     client without failures still gets through, so the right password
//     from the account owner's own browser works during an attack.
//
// A client is the address plus the lp_client cookie; requests without the
// cookie share one client per address.
type LoginThrottle struct {
	PairFree     int
	ClientMax    int
	ClientWindow time.Duration
	AccountFree  int
	Window       time.Duration // how long failures are remembered (pair, account)
	Now          func() time.Time

	mu      sync.Mutex
	pair    map[string]*failures
	client  map[string]*failures
	account map[string]*failures
}

type failures struct {
	n     int
	first time.Time
	last  time.Time
}

// NewLoginThrottle has the defaults described on LoginThrottle.
func NewLoginThrottle() *LoginThrottle {
	return &LoginThrottle{PairFree: 10, ClientMax: 100, ClientWindow: 5 * time.Minute, AccountFree: 20,
		Window: 15 * time.Minute, Now: time.Now,
		pair: map[string]*failures{}, client: map[string]*failures{}, account: map[string]*failures{}}
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

// Allow reports whether client may try account now, and if not, how long
// to wait.
func (l *LoginThrottle) Allow(client, account string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	c := live(l.client, client, l.ClientWindow, now)
	if c != nil && c.n >= l.ClientMax {
		return false, c.first.Add(l.ClientWindow).Sub(now)
	}
	p := live(l.pair, client+"\x00"+account, l.Window, now)
	if wait := backoff(p, l.PairFree, now); wait > 0 {
		return false, wait
	}
	if c != nil && c.n > 0 { // a failing client meets the account's backoff
		if wait := backoff(live(l.account, account, l.Window, now), l.AccountFree, now); wait > 0 {
			return false, wait
		}
	}
	return true, 0
}

// Fail records a failed login of client on account.
func (l *LoginThrottle) Fail(client, account string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	if len(l.pair)+len(l.client)+len(l.account) > 150_000 { // bound memory under a spray of keys
		for _, m := range []map[string]*failures{l.pair, l.client, l.account} {
			for k := range m {
				live(m, k, l.Window, now)
			}
		}
	}
	add := func(m map[string]*failures, key string, window time.Duration) {
		f := live(m, key, window, now)
		if f == nil {
			f = &failures{first: now}
			m[key] = f
		}
		f.n++
		f.last = now
	}
	add(l.pair, client+"\x00"+account, l.Window)
	add(l.client, client, l.ClientWindow)
	add(l.account, account, l.Window)
}

// Succeed forgets the client's failures on the account (not the account's
// failures from other clients, nor the client's on other accounts).
func (l *LoginThrottle) Succeed(client, account string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pair, client+"\x00"+account)
}

// loginClient is the throttle's client key of r, setting the client
// cookie when the browser has none yet.
func (s *Server) loginClient(w http.ResponseWriter, r *http.Request) string {
	ip := s.clientIP(r)
	if c, err := r.Cookie(ClientCookie); err == nil && validClientID(c.Value) {
		return ip + "|" + c.Value
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	http.SetCookie(w, &http.Cookie{Name: ClientCookie, Value: hex.EncodeToString(b), Path: "/login",
		MaxAge: 400 * 24 * 3600, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureRequest(r)})
	return ip + "|-"
}

func validClientID(v string) bool {
	if len(v) != 32 {
		return false
	}
	_, err := hex.DecodeString(v)
	return err == nil
}
