package kinds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// timestampedSignatureHeaders in the order they are looked up.
var timestampedSignatureHeaders = []string{"Webhook-Signature", "Stripe-Signature", "Calendly-Webhook-Signature"}

// timestampedKind: Stripe-style "t=<unix>,v1=<hex>" over t.body, keyed by the
// secret string's raw bytes (a "whsec_" prefix is part of the key).
type timestampedKind struct{}

func (timestampedKind) Name() string { return Timestamped }

func (timestampedKind) Verify(h http.Header, body []byte, secrets []string, now time.Time) error {
	var header string
	for _, name := range timestampedSignatureHeaders {
		if header = h.Get(name); header != "" {
			break
		}
	}
	if header == "" {
		return missingHeader(timestampedSignatureHeaders[0])
	}
	var ts string
	var sigs [][]byte
	for _, pair := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(pair), "=")
		switch k {
		case "t":
			if ts != "" { // ambiguous: which one was signed?
				return fmt.Errorf("%w: more than one t= in signature header", ErrSignature)
			}
			ts = v
		case "v1":
			if raw, err := hex.DecodeString(v); err == nil && len(raw) == sha256.Size {
				sigs = append(sigs, raw)
			}
		}
	}
	if ts == "" {
		return fmt.Errorf("%w: no t= in signature header", ErrSignature)
	}
	t, err := parseSignedTime(ts, now)
	if err != nil {
		return err
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1= signature in signature header", ErrSignature)
	}
	return matchHMAC(secrets, rawKey, sigs, []byte(strconv.FormatInt(t, 10)), dot, body)
}

// Parse: delivery id is the top-level id, else the SHA-256 of the body (a
// Calendly retry is then a duplicate; its later invitee.canceled is new).
func (timestampedKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	return hashedRecord(body, func(doc object) string { return doc.scalar("id") })
}

// Map: natural key data.object.id, else data.id, else payload.uri (Calendly
// invitee); fields from data.object, else data, else payload.
func (timestampedKind) Map(raw json.RawMessage) (Lead, error) {
	doc := decodeObject(raw)
	if doc == nil {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	data := doc.object("data")
	ref := firstNonEmpty(data.object("object").scalar("id"), data.scalar("id"), doc.object("payload").scalar("uri"))
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: none of data.object.id, data.id, payload.uri", ErrNoNaturalKey)
	}
	rec, recRaw := eventRecord(doc, data)
	l, err := contactLead(ref, rec, recRaw)
	l.EventTime = firstTime(doc, "created") // the event's Unix seconds
	return l, err
}
