package forms

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"leadpipe/internal/batch"
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

// Tuning of sharedLimiter.
const (
	// flushInterval: how often a server sends what it counted from memory
	// to Redis and reads the shared counts back.
	flushInterval = 100 * time.Millisecond
	// exactZone: in the last exactZone slots of a budget (by the counts
	// known here) every submission is decided by sharedLimitScript.
	exactZone = 8
	// setTTL: the sets outlive their minute a little, so a clock a few
	// seconds off on another server still finds them.
	setTTL = 120 * time.Second
)

// sharedLimiter keeps the per-minute counts in Redis, so the limits hold
// across every server of an installation, without a round trip per
// submission: far from a budget's end a submission is decided here from
// the shared count read at the last flush plus what this server counted
// since, and a flush every flushInterval sends those in one pipeline and
// reads the counts back. In the last exactZone slots of a budget each
// submission is decided by sharedLimitScript, this server's unsent
// submissions added before it. How far servers deciding from memory at
// once can overshoot a budget: docs/FORMS.md, "Spam".
//
// When Redis cannot answer, each server falls back to its own counts (a
// form keeps taking submissions while Redis is away; the limit is then
// per server, as logged); the flush loop notices when it answers again.
type sharedLimiter struct {
	rdb   redis.UniversalClient
	log   *slog.Logger
	local limiter
	down  atomic.Bool

	mu      sync.Mutex
	window  int64               // the newest minute seen
	sets    map[string]*counted // the newest minute's sets, by Redis key
	forms   []*counted          // the newest minute's form sets (read back on every flush)
	dirty   []*counted          // the sets with pending submissions (older minutes' too)
	closed  bool                // after close: every submission through the script
	started atomic.Bool
	loop    batch.Flusher
	flushMu sync.Mutex // one flush at a time: the loop's or close's
}

// counted is a server's view of one set in Redis.
type counted struct {
	key      string
	window   int64
	form     bool            // the form's set, not an address's
	dirty    bool            // in sharedLimiter.dirty
	formID   string          // for the fallback's counts
	ip       string          // an address's set
	known    int             // the set's size at the last flush
	inflight []string        // sent by the flush in progress
	pending  []string        // counted here since, not sent yet
	members  map[string]bool // an address's set: the submissions counted here
}

// size is the set's size as far as this server knows.
func (c *counted) size() int { return c.known + len(c.inflight) + len(c.pending) }

// unsent are the submissions counted here that may not be in Redis yet.
func (c *counted) unsent() []string {
	return append(slices.Clone(c.inflight), c.pending...)
}

func limitKeys(formID, ip string, w int64) (byForm, byIP string) {
	base := "leadpipe:formlimit:{" + formID + "}:" + strconv.FormatInt(w, 10)
	return base + ":f", base + ":a:" + ip
}

// set returns the set of key in minute w, made on first use; a newer
// minute drops the sets of the last one (their pending submissions stay
// in dirty until sent). Called with mu held.
func (l *sharedLimiter) set(key string, w int64, formID, ip string) *counted {
	if w > l.window || l.sets == nil {
		l.window, l.sets, l.forms = w, map[string]*counted{}, nil
	}
	c := l.sets[key]
	if c == nil {
		c = &counted{key: key, window: w, form: ip == "", formID: formID, ip: ip}
		if c.form {
			l.forms = append(l.forms, c)
		} else {
			c.members = map[string]bool{}
		}
		l.sets[key] = c
	}
	return c
}

// add counts key in c from memory. Called with mu held.
func (l *sharedLimiter) add(c *counted, key string) {
	c.pending = append(c.pending, key)
	if !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// allow is limiter.allow across servers.
func (l *sharedLimiter) allow(ctx context.Context, formID, ip, key string, perIP, perForm int, now time.Time) (bool, time.Duration) {
	if l.rdb == nil || l.down.Load() {
		return l.local.allow(formID, ip, key, perIP, perForm, now)
	}
	w := now.Unix() / 60
	retry := time.Duration(60-now.Unix()%60) * time.Second
	fk, ak := limitKeys(formID, ip, w)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.decide(ctx, formID, ip, key, fk, ak, nil, nil, perIP, perForm, now, retry)
	}
	fs, as := l.set(fk, w, formID, ""), l.set(ak, w, formID, ip)
	if as.members[key] {
		l.mu.Unlock()
		return true, 0
	}
	if as.size() < perIP-exactZone && fs.size() < perForm-exactZone {
		as.members[key] = true
		l.add(as, key)
		l.add(fs, key)
		l.mu.Unlock()
		if !l.started.Load() {
			l.started.Store(true)
			l.loop.Start(flushInterval, l.flush, nil)
		}
		return true, 0
	}
	unsentF, unsentA := fs.unsent(), as.unsent()
	l.mu.Unlock()
	ok, retry := l.decide(ctx, formID, ip, key, fk, ak, unsentF, unsentA, perIP, perForm, now, retry)
	if ok {
		l.mu.Lock()
		if !as.members[key] {
			as.members[key] = true
			as.known++
			fs.known++
		}
		l.mu.Unlock()
	}
	return ok, retry
}

// decide runs sharedLimitScript, in one pipeline after the submissions
// this server counted for the two sets and has not sent yet.
func (l *sharedLimiter) decide(ctx context.Context, formID, ip, key, fk, ak string, unsentF, unsentA []string,
	perIP, perForm int, now time.Time, retry time.Duration) (bool, time.Duration) {
	keys, args := []string{fk, ak}, []any{key, perIP, perForm, int(setTTL / time.Second)}
	var n int
	var err error
	if len(unsentF)+len(unsentA) == 0 {
		n, err = sharedLimitScript.Run(ctx, l.rdb, keys, args...).Int()
	} else {
		pipe := l.rdb.Pipeline()
		addTo(ctx, pipe, fk, unsentF)
		addTo(ctx, pipe, ak, unsentA)
		cmd := sharedLimitScript.Eval(ctx, pipe, keys, args...)
		if _, err = pipe.Exec(ctx); err == nil {
			n, err = cmd.Int()
		}
	}
	if err != nil {
		l.failed(ctx, err)
		return l.local.allow(formID, ip, key, perIP, perForm, now)
	}
	l.answered(ctx)
	if n == 1 {
		return true, 0
	}
	return false, retry
}

// addTo queues SADD and EXPIRE of members to key (nothing when none).
func addTo(ctx context.Context, pipe redis.Pipeliner, key string, members []string) {
	if len(members) == 0 {
		return
	}
	m := make([]any, len(members))
	for i, s := range members {
		m[i] = s
	}
	pipe.SAdd(ctx, key, m...)
	pipe.Expire(ctx, key, setTTL)
}

// flush sends the submissions counted here since the last flush and reads
// back the sizes of their sets and of this minute's form sets, in one
// pipeline. When Redis cannot answer, this minute's submissions are kept
// for the next flush and the limiter counts in this server until a flush
// gets through again.
func (l *sharedLimiter) flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	items := l.dirty
	l.dirty = nil
	for _, c := range items {
		c.dirty = false
		c.inflight, c.pending = c.pending, nil
	}
	if !l.closed {
		for _, c := range l.forms {
			if !c.dirty && len(c.inflight) == 0 {
				items = append(items, c)
			}
		}
	}
	l.mu.Unlock()
	if len(items) == 0 {
		if !l.down.Load() {
			return nil
		}
		if err := l.rdb.Ping(ctx).Err(); err != nil {
			return err
		}
		l.answered(ctx)
		return nil
	}
	pipe := l.rdb.Pipeline()
	sizes := make([]*redis.IntCmd, len(items))
	for i, c := range items {
		addTo(ctx, pipe, c.key, c.inflight)
		sizes[i] = pipe.SCard(ctx, c.key)
	}
	_, err := pipe.Exec(ctx)
	l.mu.Lock()
	for i, c := range items {
		switch {
		case err == nil:
			c.known = int(sizes[i].Val())
		case c.window == l.window && len(c.inflight) > 0:
			// Sent again by the next flush (an older minute's are dropped).
			c.pending = append(c.inflight, c.pending...)
			if !c.dirty {
				c.dirty = true
				l.dirty = append(l.dirty, c)
			}
		}
		c.inflight = nil
	}
	l.mu.Unlock()
	if err != nil {
		l.failed(ctx, err)
		return err
	}
	l.answered(ctx)
	return nil
}

// failed notes that Redis did not answer: from now on this server counts
// alone, beginning with what it counted this minute.
func (l *sharedLimiter) failed(ctx context.Context, err error) {
	if l.down.Swap(true) {
		return
	}
	l.log.WarnContext(ctx, "form rate limits: Redis did not answer, counting in this server until it does", "err", err)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Unix(l.window*60, 0)
	for _, c := range l.sets {
		if c.form || c.window != l.window {
			continue
		}
		for key := range c.members {
			l.local.allow(c.formID, c.ip, key, math.MaxInt, math.MaxInt, now)
		}
	}
}

// answered notes that Redis answered (again).
func (l *sharedLimiter) answered(ctx context.Context) {
	if l.down.Swap(false) {
		l.log.InfoContext(ctx, "form rate limits: Redis answers again, counting across servers")
	}
}

// close stops the flush loop and sends what was counted since the last
// flush; later submissions are decided by the script one by one.
func (l *sharedLimiter) close(ctx context.Context) error {
	if l.rdb == nil {
		return nil
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.loop.Stop()
	if l.down.Load() {
		return nil
	}
	return l.flush(ctx)
}
