package kinds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The pieces the signing kinds verify with: each kind's file says what its
// vendor signs; these read the headers and compare the HMACs the same way.

// sigEncoding is how a header spells an HMAC-SHA256.
type sigEncoding struct {
	name   string
	decode func(string) ([]byte, error)
}

var (
	hexSig    = sigEncoding{"hex", hex.DecodeString}
	base64Sig = sigEncoding{"base64", decodeBase64}
)

// mac decodes text, the value of header name, as an HMAC-SHA256.
func (e sigEncoding) mac(name, text string) ([]byte, error) {
	sig, err := e.decode(text)
	if err != nil || len(sig) != sha256.Size {
		return nil, fmt.Errorf("%w: %s header is not a %s SHA-256 HMAC", ErrSignature, name, e.name)
	}
	return sig, nil
}

// headerText is the trimmed value of header name; a blank one is a missing
// signature.
func headerText(h http.Header, name string) (string, error) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return "", missingHeader(name)
	}
	return v, nil
}

// headerMAC is the HMAC-SHA256 header name carries after prefix ("": none;
// else compared without case and required).
func headerMAC(h http.Header, name, prefix string, enc sigEncoding) ([]byte, error) {
	text, err := headerText(h, name)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		var ok bool
		if text, ok = cutPrefixFold(text, prefix); !ok {
			return nil, fmt.Errorf("%w: %s header lacks %s", ErrSignature, name, prefix)
		}
	}
	return enc.mac(name, text)
}

// millisMAC reads a signature header and a unix-milliseconds timestamp
// header (HubSpot, Webflow): the timestamp, checked within tolerance of
// now, and the decoded HMAC.
func millisMAC(h http.Header, sigName, tsName string, enc sigEncoding, now time.Time) (sig []byte, ts string, err error) {
	sigText, err := headerText(h, sigName)
	if err != nil {
		return nil, "", err
	}
	if ts, err = headerText(h, tsName); err != nil {
		return nil, "", err
	}
	if err := checkMillis(ts, now); err != nil {
		return nil, "", err
	}
	if sig, err = enc.mac(sigName, sigText); err != nil {
		return nil, "", err
	}
	return sig, ts, nil
}

// matchHMAC returns nil when one of sigs is the HMAC-SHA256 of parts keyed
// by the key of one of secrets, else noMatch. key derives a secret's key
// (nil: the secret is skipped); every secret is tried, current and in-grace.
func matchHMAC(secrets []string, key func(secret string) []byte, sigs [][]byte, parts ...[]byte) error {
	for _, secret := range secrets {
		k := key(secret)
		if k == nil {
			continue
		}
		want := hmacSHA256(k, parts...)
		for _, sig := range sigs {
			if hmac.Equal(want, sig) {
				return nil
			}
		}
	}
	return noMatch()
}

// rawKey keys the HMAC with the secret's own bytes; an empty secret is
// skipped.
func rawKey(secret string) []byte {
	if secret == "" {
		return nil
	}
	return []byte(secret)
}

// matchBodyHMAC checks sig against HMAC-SHA256(secret, body) for every secret.
func matchBodyHMAC(body []byte, secrets []string, sig []byte) error {
	return matchHMAC(secrets, rawKey, [][]byte{sig}, body)
}
