package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
)

// newFormKey is the per-render idempotency key a create form carries, so a
// double-clicked submit creates one record.
func newFormKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keepFormKey is the key a re-rendered form was posted with, so that its
// next submit is still the same one; a fresh form gets a new key.
func keepFormKey(key string) string {
	if key == "" {
		return newFormKey()
	}
	return key
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

// uiOnce runs create at most once per form key (the Idempotency-Key store
// of the API, keys prefixed "ui:"). It returns where to go next: a
// repeated submit of the same rendered form (a double click) gets the
// first submit's location. create hands k to the owning service, which
// completes it in the transaction of the record it creates
// (idempotency.Once: users, tokens, sources, leads, notes, bulk edits), so
// a crash between the two cannot let the form create a second record. A
// create that ignores k has its key completed right after it returns.
func (s *Server) uiOnce(ctx context.Context, tenantID, key, form string, create func(k *idempotency.Key) (string, error)) (string, error) {
	if !validFormKey(key) {
		return "", apperr.New(apperr.BadRequest, "the form is out of date: reload the page and try again")
	}
	req := idempotency.Request{TenantID: tenantID, Key: "ui:" + form + ":" + key,
		Fingerprint: idempotency.Fingerprint(http.MethodPost, "ui:"+form, []byte(key)), Wait: inProgressWait}
	out, err := s.Idem.Store.Do(ctx, req, func(k *idempotency.Key) (idempotency.Response, error) {
		loc, err := create(k)
		if err != nil {
			return idempotency.Response{}, err // nothing was kept: the same form may be sent again
		}
		return idempotency.SeeOther(loc), nil
	})
	if errors.Is(err, idempotency.ErrClaimLost) {
		// A repeated submit took the claim over after its lock deadline and
		// this one's record rolled back: the other submit's is the one.
		return "", apperr.New(apperr.Conflict, "this form is still being saved: reload the page in a moment")
	}
	if err != nil {
		return "", err
	}
	switch out.Decision {
	case idempotency.Mismatch:
		return "", apperr.New(apperr.BadRequest, "the form is out of date: reload the page and try again")
	case idempotency.InProgress:
		return "", apperr.New(apperr.Conflict, "this form is still being saved: reload the page in a moment")
	}
	return out.Response.Header.Get("Location"), nil
}
