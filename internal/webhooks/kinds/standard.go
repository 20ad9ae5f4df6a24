package kinds

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (https://www.standardwebhooks.com) header names.
const (
	headerWebhookID        = "webhook-id"
	headerWebhookTimestamp = "webhook-timestamp"
	headerWebhookSignature = "webhook-signature"
)

// standardKind: signature over id.timestamp.body, keyed by the base64 part
// of a "whsec_" secret; delivery id is the webhook-id header.
type standardKind struct{}

func (standardKind) Name() string { return Standard }

// standardKey decodes a "whsec_<base64>" secret (the prefix is optional).
func standardKey(secret string) ([]byte, bool) {
	key, err := decodeBase64(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, false
	}
	return key, true
}

func (standardKind) Verify(h http.Header, body []byte, secrets []string, now time.Time) error {
	id, ts, sigHeader := h.Get(headerWebhookID), h.Get(headerWebhookTimestamp), h.Get(headerWebhookSignature)
	switch {
	case id == "":
		return missingHeader(headerWebhookID)
	case ts == "":
		return missingHeader(headerWebhookTimestamp)
	case sigHeader == "":
		return missingHeader(headerWebhookSignature)
	}
	t, err := parseSignedTime(ts, now)
	if err != nil {
		return err
	}
	var sigs [][]byte
	for _, entry := range strings.Fields(sigHeader) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" { // other versions (v1a: asymmetric) are not ours to check
			continue
		}
		if raw, err := decodeBase64(sig); err == nil && len(raw) == sha256.Size {
			sigs = append(sigs, raw)
		}
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1 signature in %s header", ErrSignature, headerWebhookSignature)
	}
	// The reference libraries sign the parsed timestamp, not the header text.
	signedTS := []byte(strconv.FormatInt(t, 10))
	return matchHMAC(secrets, func(secret string) []byte {
		key, _ := standardKey(secret)
		return key
	}, sigs, []byte(id), dot, signedTS, dot, body)
}

// standardID: the delivery id is the webhook-id header.
var standardID = idSource{idHeader: headerWebhookID}

func (standardKind) Parse(h http.Header, body []byte) ([]Record, error) {
	return standardID.records(h, body)
}

// Map: natural key data.id (else the record object's id); fields from
// data.object, else data, else payload.
func (standardKind) Map(raw json.RawMessage) (Lead, error) {
	doc := decodeObject(raw)
	if doc == nil {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	data := doc.object("data")
	rec, recRaw := eventRecord(doc, data)
	ref := data.scalar("id")
	if ref == "" && rec != nil {
		ref = rec.scalar("id")
	}
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: data.id is missing", ErrNoNaturalKey)
	}
	l, err := contactLead(ref, rec, recRaw)
	l.EventTime = firstTime(doc, "timestamp") // the event's RFC 3339 timestamp
	return l, err
}

// eventRecord picks the record object of an event: data.object, else data,
// else payload (Calendly).
// data is doc's member "data", decoded by the caller.
func eventRecord(doc, data object) (object, json.RawMessage) {
	if data != nil {
		if o := data.object("object"); o != nil {
			return o, data["object"]
		}
		return data, doc["data"]
	}
	if p := doc.object("payload"); p != nil {
		return p, doc["payload"]
	}
	return nil, nil
}

// contactLead maps a record object holding email, name (or first_name and
// last_name), phone, company and a creation time.
func contactLead(ref string, rec object, recRaw json.RawMessage) (Lead, error) {
	if rec == nil {
		return Lead{}, fmt.Errorf("%w: no data.object, data or payload object", ErrUnparseable)
	}
	payload, err := storablePayload(recRaw)
	if err != nil {
		return Lead{}, err
	}
	return Lead{
		SourceRef: NormalizeID(ref),
		Email:     rec.scalar("email"),
		Name:      personName(rec),
		Phone:     firstNonEmpty(rec.scalar("phone"), rec.scalar("text_reminder_number")), // the latter: Calendly
		Company:   rec.scalar("company"),
		CreatedAt: firstTime(rec, "created_at", "created", "timestamp"),
		Payload:   payload,
	}, nil
}

func clone(b []byte) json.RawMessage {
	return append(json.RawMessage(nil), b...)
}
