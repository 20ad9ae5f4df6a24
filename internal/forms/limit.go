package forms

import (
	"sync"
	"time"
)

// limiter counts submissions per minute window, per address and form and
// per form, in this process (each server holds its own: with N servers
// behind a balancer a form takes up to N times its limit). A repeat of a
// submission already counted (the same token: a double click, a retry) is
// not counted again, so retries are answered `duplicate`, not 429.
type limiter struct {
	mu     sync.Mutex
	window int64 // current minute (unix minutes)
	counts map[string]map[string]bool
}

// allow counts key (the submission's delivery id) under the form's and
// the address's budgets; when either is spent it returns how long until
// the next window.
func (l *limiter) allow(formID, ip, key string, perIP, perForm int, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := now.Unix() / 60
	if w != l.window || l.counts == nil {
		l.window, l.counts = w, map[string]map[string]bool{}
	}
	retry := time.Duration(60-now.Unix()%60) * time.Second
	byForm, byIP := "f|"+formID, "a|"+formID+"|"+ip
	fs, is := l.counts[byForm], l.counts[byIP]
	if is[key] {
		return true, 0
	}
	if len(is) >= perIP || len(fs) >= perForm {
		return false, retry
	}
	if fs == nil {
		fs = map[string]bool{}
		l.counts[byForm] = fs
	}
	if is == nil {
		is = map[string]bool{}
		l.counts[byIP] = is
	}
	fs[key], is[key] = true, true
	return true, 0
}
