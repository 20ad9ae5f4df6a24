package idempotency

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
)

// Key is a claimed Idempotency-Key: the right to run one write and store
// its outcome. Do hands it to the write; the service that runs the write
// completes it inside the write's transaction (InTx), so the key is
// completed exactly when the write commits.
type Key struct {
	store *Store
	claim Claim
	done  bool     // completed inside a committed transaction
	resp  Response // what was stored, once done
}

// Once ties a service's write to a claimed key. The zero Once is a write
// without a key (workers, tests, calls that need no idempotency).
type Once[T any] struct {
	Key *Key
	// Respond renders the write's result as the response stored under the
	// key (and sent); it runs inside the transaction, after the write.
	Respond func(T) (Response, error)
}

// InTx runs write in a transaction on d and, when once carries a key,
// completes the key with once.Respond(result) in the same transaction. It
// fails with ErrClaimLost (everything rolled back) when a retry took the
// claim over after its lock deadline. On a deadlock the whole function is
// re-run (db.InTx), so write must not have side effects outside tx.
func InTx[T any](ctx context.Context, d *sqlx.DB, once Once[T], write func(tx *sqlx.Tx) (T, error)) (T, error) {
	var out T
	var stored Response
	err := db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		v, err := write(tx)
		if err != nil {
			return err
		}
		if once.Key != nil {
			if once.Respond == nil {
				return errors.New("idempotency: a keyed write needs Respond")
			}
			resp, err := once.Respond(v)
			if err != nil {
				return err
			}
			if err := once.Key.store.Complete(ctx, tx, once.Key.claim, resp); err != nil {
				return err
			}
			stored = resp
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	if once.Key != nil {
		once.Key.done, once.Key.resp = true, stored
	}
	return out, nil
}

// Request is one request under an Idempotency-Key.
type Request struct {
	TenantID    string
	Key         string
	Fingerprint [32]byte // see Fingerprint
	// Wait is how long a request whose key is still in progress waits for
	// the first one's outcome before it gets InProgress (0: at once).
	Wait time.Duration
}

// Outcome is what Do did with a request.
type Outcome struct {
	Decision Decision // Claimed (run ran), Replay, InProgress or Mismatch
	Response Response // Claimed and Replay: the response to send
}

// Do runs a write at most once per key. It claims the key (Begin: a new
// key runs, a completed one replays its stored response, a running one is
// InProgress, another request under the same key is Mismatch), runs run
// with the claimed key and settles the key:
//
//   - run completed the key in its transaction (InTx): nothing to do;
//   - run answered a response below 500 without completing the key (a
//     service with its own transactions, or a 4xx after a rollback): the
//     response is stored now;
//   - run answered 5xx or failed: the key is released, so the client may
//     retry; a panic leaves the claim in progress until its lock deadline,
//     exactly as a crashed process would.
func (s *Store) Do(ctx context.Context, req Request, run func(k *Key) (Response, error)) (Outcome, error) {
	deadline := time.Now().Add(req.Wait)
	for {
		res, err := s.Begin(ctx, req.TenantID, req.Key, req.Fingerprint)
		if err != nil {
			return Outcome{}, err
		}
		switch res.Decision {
		case Replay:
			return Outcome{Decision: Replay, Response: res.Stored}, nil
		case Mismatch:
			return Outcome{Decision: Mismatch}, nil
		case InProgress:
			if !time.Now().Before(deadline) {
				return Outcome{Decision: InProgress}, nil
			}
			select {
			case <-ctx.Done():
				return Outcome{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		k := &Key{store: s, claim: res.Claim}
		resp, err := run(k)
		switch {
		case k.done:
			return Outcome{Decision: Claimed, Response: k.resp}, nil
		case err != nil:
			s.release(ctx, k.claim)
			return Outcome{}, err
		case resp.Status >= 500 || resp.Status == 0:
			s.release(ctx, k.claim)
			return Outcome{Decision: Claimed, Response: resp}, nil
		}
		// The request's context may be cancelled (client gone): the write
		// committed, so its outcome is still stored.
		if err := s.Complete(context.WithoutCancel(ctx), s.DB, k.claim, resp); err != nil {
			if !errors.Is(err, ErrClaimLost) {
				s.release(ctx, k.claim)
			}
			return Outcome{}, err
		}
		return Outcome{Decision: Claimed, Response: resp}, nil
	}
}

// release gives a claim up even when ctx is cancelled; a failure only
// delays retries until the lock deadline.
func (s *Store) release(ctx context.Context, c Claim) {
	if err := s.Release(context.WithoutCancel(ctx), c); err != nil && s.log != nil {
		s.log.WarnContext(ctx, "idempotency: release claim", "err", err)
	}
}

// SeeOther is the stored outcome of a form post: a redirect to loc.
func SeeOther(loc string) Response {
	return Response{Status: http.StatusSeeOther, Header: http.Header{"Location": {loc}}}
}
