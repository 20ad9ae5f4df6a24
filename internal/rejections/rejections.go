// Package rejections keeps a source's rejected webhook requests for
// inspection: why each was refused, from where, with which headers (never
// a secret or a signature in full), how big, and the body's SHA-256.
//
// A flood of bad requests must not make storing them expensive, so the
// ingest path only offers a request to a Recorder: per source and flush
// interval it keeps a uniform sample of at most PerSource requests
// (reservoir sampling, so building an entry happens for a few hundred of
// ten thousand requests a second), and one flush a second writes them with
// one INSERT and one trim per source. The table keeps the newest PerSource
// per source for Retention. Measured in docs/BENCHMARKS.md ("Rejected-request
// flood").
package rejections

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/batch"
	"leadpipe/internal/clip"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Limits of what is kept.
const (
	PerSource = 100                // rows kept per source
	Retention = 7 * 24 * time.Hour // and for how long
	// MaxHeaders and MaxHeaderValue bound one entry (about 6 KiB at most).
	MaxHeaders     = 32
	MaxHeaderValue = 160
	// signatureShown is how much of a signature value is kept: enough to
	// tell "v1,…" from "sha256=…" or an empty one, never enough to reuse.
	signatureShown = 12
)

// Rejection is one rejected request as the API shows it.
type Rejection struct {
	At          time.Time         `json:"at" db:"at"`
	Reason      string            `json:"reason" db:"reason"`
	SkewSeconds *int64            `json:"skew_seconds,omitempty" db:"skew_seconds"`
	IP          string            `json:"ip" db:"ip"`
	Headers     map[string]string `json:"headers" db:"-"`
	Size        int64             `json:"size" db:"size"`
	BodySHA256  string            `json:"body_sha256" db:"body_sha256"`
}

// Request is what the ingest path knows of a refused request; Entry turns
// it into a Rejection only when the Recorder keeps it.
type Request struct {
	At          time.Time
	Reason      string
	SkewSeconds *int64
	// The request as the HTTP layer saw it: its headers (masked before
	// they are kept), the peer's address and the declared length.
	Header        http.Header
	RemoteAddr    string
	ContentLength int64
	Body          []byte   // what was read (for too_large, the first MaxBody bytes)
	Secrets       []string // the source's live secrets: never stored, masked wherever they appear
}

// Entry builds the stored form of a request: its peer address, its
// headers with secrets and signatures masked, its size and body hash.
func (q Request) Entry() Rejection {
	e := Rejection{At: q.At.UTC(), Reason: q.Reason, SkewSeconds: q.SkewSeconds, Size: int64(len(q.Body))}
	sum := sha256.Sum256(q.Body)
	e.BodySHA256 = hex.EncodeToString(sum[:])
	if q.ContentLength > e.Size {
		e.Size = q.ContentLength
	}
	if q.RemoteAddr != "" {
		e.IP = peerIP(q.RemoteAddr)
	}
	if q.Header != nil {
		e.Headers = SafeHeaders(q.Header, q.Secrets)
	}
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	return e
}

func peerIP(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	if len(addr) > 64 {
		return addr[:64]
	}
	return addr
}

// SafeHeaders copies h for display: credentials are replaced, signature
// values cut to their first characters, any value holding one of secrets
// masked, and the whole bounded in count and length.
func SafeHeaders(h http.Header, secrets []string) map[string]string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, min(len(names), MaxHeaders))
	for _, k := range names {
		if len(out) == MaxHeaders {
			break
		}
		v := strings.Join(h[k], ", ")
		lk := strings.ToLower(k)
		switch {
		case lk == "authorization" || lk == "cookie" || lk == "proxy-authorization" ||
			strings.Contains(lk, "secret") || strings.Contains(lk, "token") || strings.Contains(lk, "api-key") || containsSecret(v, secrets):
			v = "[redacted]"
		case strings.Contains(lk, "signature") || strings.Contains(lk, "hmac") || strings.HasPrefix(lk, "x-hub-signature"):
			v = clip.Bytes(v, signatureShown, "…") + fmt.Sprintf(" (%d characters, cut)", len(v))
		default:
			v = clip.Bytes(v, MaxHeaderValue, "…")
		}
		out[clip.Bytes(k, 64, "…")] = v
	}
	return out
}

// containsSecret reports whether v holds a secret or, for whsec_ secrets,
// its key part.
func containsSecret(v string, secrets []string) bool {
	for _, s := range secrets {
		if len(s) >= 8 && strings.Contains(v, s) {
			return true
		}
		if k, ok := strings.CutPrefix(s, "whsec_"); ok && len(k) >= 8 && strings.Contains(v, k) {
			return true
		}
	}
	return false
}

type sourceKey struct{ tenant, source string }

// reservoir is one source's sample of the current interval.
type reservoir struct {
	seen    int64
	entries []Rejection
	filled  []bool
}

// Recorder samples rejected requests in memory and writes them in the
// background. Offer is safe for concurrent use and never touches the
// database.
type Recorder struct {
	DB       *sqlx.DB
	Log      *slog.Logger
	Interval time.Duration // between flushes (default 1 s)
	// MaxSources bounds the sources sampled in one interval; requests for
	// further sources in that interval are counted in Dropped only.
	MaxSources int

	Offered, Kept, Dropped atomic.Int64

	mu    sync.Mutex
	cur   map[sourceKey]*reservoir
	gen   uint64
	flush sync.Mutex

	loop batch.Flusher
}

// NewRecorder returns a Recorder writing to d; Start flushes in the
// background, Close stops with a last flush.
func NewRecorder(d *sqlx.DB, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{DB: d, Log: log, Interval: time.Second, MaxSources: 1000,
		cur: map[sourceKey]*reservoir{}}
}

// Offer records a refused request: the first PerSource of an interval are
// kept, then each further one replaces a random kept one with probability
// PerSource/seen, so the interval's sample stays uniform. The entry is only
// built (headers copied, body hashed) when it is kept.
func (r *Recorder) Offer(tenantID, sourceID string, q Request) {
	r.Offered.Add(1)
	if !ids.Valid(tenantID) || !ids.Valid(sourceID) {
		return
	}
	k := sourceKey{tenantID, sourceID}
	r.mu.Lock()
	res := r.cur[k]
	if res == nil {
		if len(r.cur) >= r.MaxSources {
			r.mu.Unlock()
			r.Dropped.Add(1)
			return
		}
		res = &reservoir{entries: make([]Rejection, PerSource), filled: make([]bool, PerSource)}
		r.cur[k] = res
	}
	res.seen++
	slot := int64(-1)
	if res.seen <= PerSource {
		slot = res.seen - 1
	} else if j := rand.Int64N(res.seen); j < PerSource {
		slot = j
	}
	gen := r.gen
	r.mu.Unlock()
	if slot < 0 {
		return
	}
	e := q.Entry() // outside the lock: the only per-request work beyond counting
	r.mu.Lock()
	if r.gen == gen { // not flushed meanwhile
		res.entries[slot], res.filled[slot] = e, true
		r.Kept.Add(1)
	}
	r.mu.Unlock()
}

// Flush writes the current sample: per source one INSERT of its entries,
// then one DELETE of what is beyond the newest PerSource or older than
// Retention. A failed write loses that interval's sample (a rejected
// request is evidence, not data that must survive).
func (r *Recorder) Flush(ctx context.Context) error {
	r.flush.Lock()
	defer r.flush.Unlock()
	r.mu.Lock()
	batch := r.cur
	r.cur = map[sourceKey]*reservoir{}
	r.gen++
	r.mu.Unlock()
	var first error
	for k, res := range batch {
		var rows []Rejection
		for i, ok := range res.filled {
			if ok {
				rows = append(rows, res.entries[i])
			}
		}
		if len(rows) == 0 {
			continue
		}
		if err := write(ctx, r.DB, k.tenant, k.source, rows, time.Now()); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Start runs the flush loop until Close.
func (r *Recorder) Start() {
	r.loop.Start(r.Interval, r.Flush, func(err error) {
		r.Log.Warn("rejections: flush failed; this second's sample is lost", "err", err)
	})
}

// Close stops the flush loop and flushes once more.
func (r *Recorder) Close(ctx context.Context) error {
	r.loop.Stop()
	return r.Flush(ctx)
}

// Service lists what was kept.
type Service struct {
	DB  *sqlx.DB
	Now func() time.Time
}

// List returns a source's newest rejected requests (at most PerSource, of
// the last Retention), newest first. The caller checks that the source is
// the tenant's.
func (s *Service) List(ctx context.Context, tenantID, sourceID string, limit int) ([]Rejection, error) {
	if limit <= 0 || limit > PerSource {
		limit = PerSource
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	return list(ctx, s.DB, tenantID, sourceID, now.Add(-Retention), limit)
}

// ParseLimit reads ?limit= (1..PerSource, default PerSource).
func ParseLimit(v string) (int, error) {
	if v == "" {
		return PerSource, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > PerSource {
		return 0, apperr.InvalidFields(map[string]string{"limit": fmt.Sprintf("must be a whole number from 1 to %d", PerSource)})
	}
	return n, nil
}

type row struct {
	Rejection
	HeadersJSON string `db:"headers"`
}

func list(ctx context.Context, x db.Ext, tenantID, sourceID string, since time.Time, limit int) ([]Rejection, error) {
	var rows []row
	err := sqlx.SelectContext(ctx, x, &rows, `SELECT at, reason, skew_seconds, ip, headers, size, body_sha256
FROM rejections WHERE tenant_id = ? AND source_id = ? AND at >= ?
ORDER BY at DESC, id DESC LIMIT ?`, tenantID, sourceID, since.UTC(), limit)
	if err != nil {
		return nil, err
	}
	out := make([]Rejection, 0, len(rows))
	for _, rw := range rows {
		rj := rw.Rejection
		rj.At = rj.At.UTC()
		if err := json.Unmarshal([]byte(rw.HeadersJSON), &rj.Headers); err != nil || rj.Headers == nil {
			rj.Headers = map[string]string{}
		}
		out = append(out, rj)
	}
	return out, nil
}

// write inserts one source's sample and trims the source to its newest
// PerSource rows of the last Retention.
func write(ctx context.Context, d *sqlx.DB, tenantID, sourceID string, rows []Rejection, now time.Time) error {
	var sb strings.Builder
	sb.WriteString(`INSERT INTO rejections (tenant_id, source_id, id, at, reason, skew_seconds, ip, headers, size, body_sha256) VALUES `)
	args := make([]any, 0, len(rows)*10)
	for i, e := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		h, _ := json.Marshal(e.Headers)
		args = append(args, tenantID, sourceID, ids.New(), e.At.UTC(), e.Reason, e.SkewSeconds, e.IP, string(h), e.Size, e.BodySHA256)
	}
	if _, err := d.ExecContext(ctx, sb.String(), args...); err != nil {
		return fmt.Errorf("rejections: insert: %w", err)
	}
	// The derived table lets MariaDB read the table it deletes from.
	if _, err := d.ExecContext(ctx, `DELETE FROM rejections WHERE tenant_id = ? AND source_id = ? AND (at < ? OR (at, id) < (
  SELECT at, id FROM (SELECT at, id FROM rejections WHERE tenant_id = ? AND source_id = ?
    ORDER BY at DESC, id DESC LIMIT 1 OFFSET ?) AS oldest_kept))`,
		tenantID, sourceID, now.Add(-Retention).UTC(), tenantID, sourceID, PerSource-1); err != nil {
		return fmt.Errorf("rejections: trim: %w", err)
	}
	return nil
}
