package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
)

// newFormKey is the per-render idempotency key a create form carries, so a
// double-clicked submit creates one record.
func newFormKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validFormKey(k string) bool {
	if len(k) != 32 {
		return false
	}
	_, err := hex.DecodeString(k)
	return err == nil
}

// inProgressWait is how long a repeated submit waits for the first one to
// finish before giving up with a "still saving" page.
const inProgressWait = 5 * time.Second

// uiOnceTx runs create at most once per form key, in a transaction with the
// key's completion (the Idempotency-Key store of the API, keys prefixed
// "ui:"). It returns where to go next: a repeated submit of the same
// rendered form (a double click) gets the first submit's location.
func (s *Server) uiOnceTx(ctx context.Context, tenantID, key, form string, create func(tx *sqlx.Tx) (string, error)) (string, error) {
	return s.uiOnceWith(ctx, tenantID, key, form, func(complete func(db.Ext, string) error) (string, error) {
		var loc string
		err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			var err error
			if loc, err = create(tx); err != nil {
				return err
			}
			return complete(tx, loc)
		})
		return loc, err
	})
}

// uiOnce is uiOnceTx for services that run their own transaction: the key
// completes right after the record commits.
func (s *Server) uiOnce(ctx context.Context, tenantID, key, form string, create func() (string, error)) (string, error) {
	return s.uiOnceWith(ctx, tenantID, key, form, func(complete func(db.Ext, string) error) (string, error) {
		loc, err := create()
		if err != nil {
			return "", err
		}
		return loc, complete(s.DB, loc)
	})
}

func (s *Server) uiOnceWith(ctx context.Context, tenantID, key, form string, run func(complete func(db.Ext, string) error) (string, error)) (string, error) {
	if s.Idem == nil || s.Idem.Store == nil {
		return run(func(db.Ext, string) error { return nil })
	}
	if !validFormKey(key) {
		return "", apperr.New(apperr.BadRequest, "the form is out of date: reload the page and try again")
	}
	store := s.Idem.Store
	k := "ui:" + form + ":" + key
	fp := idempotency.Fingerprint(http.MethodPost, "ui:"+form, []byte(key))
	deadline := time.Now().Add(inProgressWait)
	for {
		res, err := store.Begin(ctx, tenantID, k, fp)
		if err != nil {
			return "", err
		}
		switch res.Decision {
		case idempotency.Replay:
			return res.Stored.Header.Get("Location"), nil
		case idempotency.Mismatch:
			return "", apperr.New(apperr.BadRequest, "the form is out of date: reload the page and try again")
		case idempotency.InProgress:
			if time.Now().After(deadline) {
				return "", apperr.New(apperr.Conflict, "this form is still being saved: reload the page in a moment")
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		claim := res.Claim
		loc, err := run(func(x db.Ext, loc string) error {
			return store.Complete(ctx, x, claim, idempotency.Response{Status: http.StatusSeeOther, Header: http.Header{"Location": {loc}}})
		})
		if err != nil {
			// Nothing was kept: the same form may be sent again.
			if rerr := store.Release(context.WithoutCancel(ctx), claim); rerr != nil && !errors.Is(rerr, context.Canceled) {
				s.Log.WarnContext(ctx, "release form key", "err", rerr)
			}
			return "", err
		}
		return loc, nil
	}
}
