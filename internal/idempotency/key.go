// Package idempotency implements the Idempotency-Key header on write
// endpoints (docs/API.md, "Leads, idempotency and concurrency"; after the IETF draft "The Idempotency-Key HTTP
// Header Field"): the first request with a key runs and its outcome is
// stored; a retry with the same key and request gets the stored outcome
// back with Idempotent-Replayed: true; a retry while the first is still
// running gets 409 with Retry-After; the same key with another request is
// 422. Keys are scoped per tenant and expire after a TTL.
package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"leadpipe/internal/apperr"
)

// Header is the request header carrying the key.
const Header = "Idempotency-Key"

// MaxKeyLen is the longest accepted key.
const MaxKeyLen = 255

// ParseKey validates the Idempotency-Key header values: exactly one value,
// 1–255 printable ASCII characters, either a bare token or an RFC 8941
// sf-string ("…", with \" and \\ escapes) whose quotes are stripped.
func ParseKey(values []string) (string, error) {
	if len(values) == 0 {
		return "", apperr.New(apperr.BadRequest, "this endpoint requires an Idempotency-Key header (1-255 printable ASCII characters, e.g. a UUID)")
	}
	if len(values) > 1 {
		return "", apperr.New(apperr.BadRequest, "send exactly one Idempotency-Key header")
	}
	v := strings.Trim(values[0], " \t")
	bad := apperr.New(apperr.BadRequest, "malformed Idempotency-Key: use 1-255 printable ASCII characters, bare or as a quoted string")
	if strings.HasPrefix(v, `"`) {
		var ok bool
		if v, ok = unquote(v); !ok {
			return "", bad
		}
	}
	if len(v) == 0 || len(v) > MaxKeyLen {
		return "", bad
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", bad
		}
	}
	return v, nil
}

// unquote parses an RFC 8941 sf-string.
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[len(s)-1] != '"' {
		return "", false
	}
	in := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\\':
			i++
			if i == len(in) || (in[i] != '"' && in[i] != '\\') {
				return "", false
			}
			b.WriteByte(in[i])
		case c == '"':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// Canonical returns the canonical form of a JSON body: object keys sorted,
// no insignificant whitespace, numbers as written. An empty body is empty;
// anything that is not exactly one JSON value is an error.
func Canonical(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return nil, errors.New("idempotency: data after the JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// Fingerprint identifies a request: SHA-256 of method, path and the
// canonical body.
func Fingerprint(method, path string, canonical []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{'\n'})
	h.Write([]byte(path))
	h.Write([]byte{'\n'})
	h.Write(canonical)
	var fp [32]byte
	copy(fp[:], h.Sum(nil))
	return fp
}
