package forms

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A submission token is "v1.<form id>.<issued, unix ms, base 36>.<nonce>.<sig>",
// sig = base64url(HMAC-SHA256(key, everything before it)) with key derived
// from the form's source secret (sources.KindForm). It is the submission's
// delivery id: one rendered form, one lead, however often it is posted.
// It carries its render time, so the minimum fill time needs no state.

// Token errors (rejection reason bad_token).
var (
	ErrTokenForged  = errors.New("the submission token is not valid")
	ErrTokenExpired = errors.New("the submission token is older than 24 hours")
	ErrTokenForm    = errors.New("the submission token belongs to another form")
)

// tokenKeys caches the derived key of each secret seen (a handful per
// form; secrets live as long as the process remembers them anyway).
var tokenKeys sync.Map

func tokenKey(secret string) []byte {
	if k, ok := tokenKeys.Load(secret); ok {
		return k.([]byte)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("leadpipe form token v1"))
	k := m.Sum(nil)
	tokenKeys.Store(secret, k)
	return k
}

func tokenSig(secret, body string) string {
	m := hmac.New(sha256.New, tokenKey(secret))
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// NewToken signs a token for formID rendered at now with the source's
// current secret.
func NewToken(secret, formID string, now time.Time) string {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	body := "v1." + formID + "." + strconv.FormatInt(now.UnixMilli(), 36) + "." + hex.EncodeToString(nonce[:])
	return body + "." + tokenSig(secret, body)
}

// CheckToken verifies a token against the source's live secrets (current
// and in grace) and returns when the form was rendered.
func CheckToken(tok string, secrets []string, formID string, now time.Time) (time.Time, error) {
	if len(tok) > 200 {
		return time.Time{}, ErrTokenForged
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 5 || parts[0] != "v1" {
		return time.Time{}, ErrTokenForged
	}
	body := strings.Join(parts[:4], ".")
	ok := false
	for _, s := range secrets {
		if s != "" && hmac.Equal([]byte(tokenSig(s, body)), []byte(parts[4])) {
			ok = true
		}
	}
	if !ok {
		return time.Time{}, ErrTokenForged
	}
	if parts[1] != formID {
		return time.Time{}, ErrTokenForm
	}
	ms, err := strconv.ParseInt(parts[2], 36, 64)
	if err != nil {
		return time.Time{}, ErrTokenForged
	}
	issued := time.UnixMilli(ms).UTC()
	if now.Sub(issued) > TokenMaxAge {
		return time.Time{}, ErrTokenExpired
	}
	if issued.Sub(now) > time.Minute { // signed by us in the future: a clock far off
		return time.Time{}, ErrTokenForged
	}
	return issued, nil
}
