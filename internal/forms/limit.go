package forms

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// limiter counts submissions per minute window, per address and form and
// per form, in this process: the fallback of sharedLimiter (Redis) and the
// limiter of a service built without Redis. A repeat of a
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

// sharedLimitScript counts ARGV[1] (a submission's delivery id) in the
// minute's set of the address (KEYS[2]) and of the form (KEYS[1]): 1 when
// it is already counted or both budgets (ARGV[2], ARGV[3]) have room, 0
// when one is spent. One round trip, atomic, so N servers share one
// budget. The keys share the form's hash tag (one Cluster slot).
var sharedLimitScript = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 1 end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) or redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1`)

// sharedLimiter keeps the per-minute counts in Redis, so the limits hold
// across every server of an installation. When Redis cannot answer, each
// server falls back to its own counts (a form keeps taking submissions
// while Redis is away; the limit is then per server, as logged).
type sharedLimiter struct {
	rdb   redis.Scripter
	log   *slog.Logger
	local limiter
	down  atomic.Bool
}

// allow is limiter.allow across servers.
func (l *sharedLimiter) allow(ctx context.Context, formID, ip, key string, perIP, perForm int, now time.Time) (bool, time.Duration) {
	if l.rdb == nil {
		return l.local.allow(formID, ip, key, perIP, perForm, now)
	}
	w := now.Unix() / 60
	retry := time.Duration(60-now.Unix()%60) * time.Second
	base := "leadpipe:formlimit:{" + formID + "}:" + strconv.FormatInt(w, 10)
	// The sets outlive their minute a little: a clock a few seconds off
	// on another server still finds them.
	n, err := sharedLimitScript.Run(ctx, l.rdb, []string{base + ":f", base + ":a:" + ip}, key, perIP, perForm, 120).Int()
	if err != nil {
		if !l.down.Swap(true) {
			l.log.WarnContext(ctx, "form rate limits: Redis did not answer, counting in this server until it does", "err", err)
		}
		return l.local.allow(formID, ip, key, perIP, perForm, now)
	}
	if l.down.Swap(false) {
		l.log.InfoContext(ctx, "form rate limits: Redis answers again, counting across servers")
	}
	if n == 1 {
		return true, 0
	}
	return false, retry
}
