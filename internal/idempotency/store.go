package idempotency

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Row states.
const (
	stateInProgress = "in_progress"
	stateCompleted  = "completed"
)

// DefaultLockTimeout is how long a claim stays locked before a retry may
// take it over (a request that crashed after claiming never completes).
// Creating a lead takes milliseconds; a request that takes longer than
// this loses its claim and rolls back rather than running twice.
const DefaultLockTimeout = 10 * time.Second

// storedHeaders are the response headers kept with an outcome.
var storedHeaders = []string{"Location", "ETag", "Content-Type"}

// ErrClaimLost means another request took the claim over after its lock
// deadline: the business write must roll back.
var ErrClaimLost = errors.New("idempotency: claim taken over by a retry")

// Store keeps keys and their outcomes in MySQL (table idempotency_keys).
// Settings are atomics so tests can change them while the server runs.
type Store struct {
	DB  *sqlx.DB
	log *slog.Logger // claims that could not be released (nil: silent)
	// eachTenant visits every tenant (tenants.Service.ForEach, the one
	// for-each-tenant iterator); Purge walks the keys tenant by tenant. It
	// is injected because the tenants area creates users and tokens under
	// keys of this store, so it imports this package.
	eachTenant func(ctx context.Context, fn func(tenantID string) error) error
	ttl        atomic.Int64
	lock       atomic.Int64
	clock      atomic.Pointer[func() time.Time]
}

// NewStore returns a store whose keys live for ttl (24 h when zero).
// eachTenant visits every tenant for the purge (nil: Purge fails); log
// hears of claims that could not be released (nil: silent); now is the
// clock (nil: the wall clock).
func NewStore(d *sqlx.DB, ttl time.Duration, eachTenant func(ctx context.Context, fn func(tenantID string) error) error,
	log *slog.Logger, now func() time.Time) *Store {
	s := &Store{DB: d, eachTenant: eachTenant, log: log}
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	s.SetTTL(ttl)
	s.SetLockTimeout(DefaultLockTimeout)
	s.SetClock(now)
	return s
}

// SetTTL changes how long outcomes are kept.
func (s *Store) SetTTL(d time.Duration) { s.ttl.Store(int64(d)) }

// SetLockTimeout changes how long a claim is locked.
func (s *Store) SetLockTimeout(d time.Duration) { s.lock.Store(int64(d)) }

// SetClock replaces the clock (tests; nil restores time.Now).
func (s *Store) SetClock(now func() time.Time) {
	if now == nil {
		s.clock.Store(nil)
		return
	}
	s.clock.Store(&now)
}

func (s *Store) now() time.Time {
	var now func() time.Time
	if f := s.clock.Load(); f != nil {
		now = *f
	}
	return clock.Read(now)
}

// Response is a stored (or to be stored) outcome.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Claim is the right to run a request, proven by its lock token.
type Claim struct {
	TenantID, Key, Token string
}

// Decision is what Begin decided for a request.
type Decision int

const (
	Claimed    Decision = iota + 1 // run it
	Replay                         // answer with Stored
	InProgress                     // 409, retry later
	Mismatch                       // 422: the key was used for another request
)

// Result is Begin's answer.
type Result struct {
	Decision Decision
	Claim    Claim    // Claimed
	Stored   Response // Replay
}

type record struct {
	Fingerprint []byte    `db:"fingerprint"`
	State       string    `db:"state"`
	LockToken   string    `db:"lock_token"`
	LockedUntil time.Time `db:"locked_until"`
	Status      *int      `db:"status"`
	Headers     *string   `db:"headers"`
	Body        []byte    `db:"body"`
	ExpiresAt   time.Time `db:"expires_at"`
}

// Begin decides what to do with a request carrying key with fingerprint
// fp. A completed key is one primary-key read (replays are cheap). A new
// key is claimed with INSERT IGNORE in autocommit: the claim is visible to
// concurrent requests at once and is never rolled back (rolled-back claims
// make most waiters deadlock victims, 1213). An expired key, or a claim left past
// its lock deadline by a crashed request, is taken over by an UPDATE that
// names the old lock token, so only one retry wins it.
func (s *Store) Begin(ctx context.Context, tenantID, key string, fp [32]byte) (Result, error) {
	var lastErr error
	for attempt := 0; attempt < 8; attempt++ {
		res, done, err := s.beginOnce(ctx, tenantID, key, fp)
		if err == nil && done {
			return res, nil
		}
		if err != nil && !db.Retryable(err) {
			return Result{}, err
		}
		lastErr = err
		// Lost a race (row changed between read and write): look again.
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Millisecond):
		}
	}
	if lastErr == nil {
		lastErr = errors.New("idempotency: could not settle the key under contention")
	}
	return Result{}, lastErr
}

func (s *Store) beginOnce(ctx context.Context, tenantID, key string, fp [32]byte) (Result, bool, error) {
	var rec record
	err := s.DB.GetContext(ctx, &rec, `SELECT fingerprint, state, lock_token, locked_until, status, headers, body, expires_at
		FROM idempotency_keys WHERE tenant_id = ? AND idem_key = ?`, tenantID, key)
	now := s.now()
	if errors.Is(err, sql.ErrNoRows) {
		c := Claim{TenantID: tenantID, Key: key, Token: ids.New()}
		res, err := s.DB.ExecContext(ctx, `INSERT IGNORE INTO idempotency_keys
			(tenant_id, idem_key, fingerprint, state, lock_token, locked_until, created_at, expires_at)
			VALUES (?, ?, ?, 'in_progress', ?, ?, ?, ?)`,
			tenantID, key, fp[:], c.Token, now.Add(s.lockTimeout()), now, now.Add(s.keyTTL()))
		if err != nil {
			return Result{}, false, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return Result{}, false, err // someone else claimed it first: look again
		}
		return Result{Decision: Claimed, Claim: c}, true, nil
	}
	if err != nil {
		return Result{}, false, err
	}
	if !rec.ExpiresAt.After(now) {
		return s.takeOver(ctx, tenantID, key, fp, rec, now) // expired: the key is new again
	}
	if !bytes.Equal(rec.Fingerprint, fp[:]) {
		return Result{Decision: Mismatch}, true, nil
	}
	if rec.State == stateCompleted {
		st := Response{Header: http.Header{}, Body: rec.Body}
		if rec.Status != nil {
			st.Status = *rec.Status
		}
		if rec.Headers != nil {
			var h map[string]string
			if err := json.Unmarshal([]byte(*rec.Headers), &h); err != nil {
				return Result{}, false, err
			}
			for k, v := range h {
				st.Header.Set(k, v)
			}
		}
		return Result{Decision: Replay, Stored: st}, true, nil
	}
	if rec.LockedUntil.After(now) {
		return Result{Decision: InProgress}, true, nil
	}
	return s.takeOver(ctx, tenantID, key, fp, rec, now) // the claimant crashed
}

// takeOver claims a key whose row is expired or whose claim is stale. The
// WHERE names the row exactly as read, so of several retries one wins.
func (s *Store) takeOver(ctx context.Context, tenantID, key string, fp [32]byte, rec record, now time.Time) (Result, bool, error) {
	c := Claim{TenantID: tenantID, Key: key, Token: ids.New()}
	res, err := s.DB.ExecContext(ctx, `UPDATE idempotency_keys SET fingerprint = ?, state = 'in_progress', lock_token = ?,
			locked_until = ?, status = NULL, headers = NULL, body = NULL, created_at = ?, expires_at = ?
		WHERE tenant_id = ? AND idem_key = ? AND lock_token = ? AND state = ?`,
		fp[:], c.Token, now.Add(s.lockTimeout()), now, now.Add(s.keyTTL()), tenantID, key, rec.LockToken, rec.State)
	if err != nil {
		return Result{}, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Result{}, false, err
	}
	return Result{Decision: Claimed, Claim: c}, true, nil
}

func (s *Store) keyTTL() time.Duration      { return time.Duration(s.ttl.Load()) }
func (s *Store) lockTimeout() time.Duration { return time.Duration(s.lock.Load()) }

// Complete stores the outcome of a claimed request. Run it in the business
// transaction: the key completes exactly when the write commits. It fails
// with ErrClaimLost when a retry has taken the claim over.
func (s *Store) Complete(ctx context.Context, x db.Ext, c Claim, r Response) error {
	h := map[string]string{}
	for _, k := range storedHeaders {
		if v := r.Header.Get(k); v != "" {
			h[k] = v
		}
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	res, err := x.ExecContext(ctx, `UPDATE idempotency_keys SET state = 'completed', status = ?, headers = ?, body = ?
		WHERE tenant_id = ? AND idem_key = ? AND lock_token = ? AND state = 'in_progress'`,
		r.Status, string(hj), body, c.TenantID, c.Key, c.Token)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrClaimLost
	}
	return nil
}

// Release gives a claim up (the request failed with a 5xx: the client may
// retry with the same key).
func (s *Store) Release(ctx context.Context, c Claim) error {
	_, err := s.DB.ExecContext(ctx, `DELETE FROM idempotency_keys
		WHERE tenant_id = ? AND idem_key = ? AND lock_token = ? AND state = 'in_progress'`, c.TenantID, c.Key, c.Token)
	return err
}

// purgeBatch bounds each DELETE so purging never holds many locks.
const purgeBatch = 1000

// Purge deletes expired keys, tenant by tenant in batches, and returns how
// many it deleted. A claim whose lock is still held is left alone.
func (s *Store) Purge(ctx context.Context) (int, error) {
	now := s.now()
	total := 0
	if s.eachTenant == nil {
		return 0, errors.New("idempotency: the store was built without a way to visit every tenant")
	}
	err := s.eachTenant(ctx, func(tenantID string) error {
		for {
			res, err := s.DB.ExecContext(ctx, `DELETE FROM idempotency_keys
				WHERE tenant_id = ? AND expires_at <= ? AND (state = 'completed' OR locked_until <= ?) LIMIT ?`,
				tenantID, now, now, purgeBatch)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += int(n)
			if n < purgeBatch {
				return nil
			}
		}
	})
	return total, err
}
