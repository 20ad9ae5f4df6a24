package kinds

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"
)

// Tally form webhooks (docs/SENDERS.md, "Tally").
// Tally's page: https://tally.so/help/webhooks — with a signing secret set on
// the webhook, Tally-Signature = base64 HMAC-SHA256 of the raw body keyed by
// that secret. No timestamp is signed: a replay is a duplicate by eventId.
const headerTallySignature = "Tally-Signature"

type tallyKind struct{}

func (tallyKind) Name() string { return Tally }

func (tallyKind) Verify(h http.Header, body []byte, secrets []string, _ time.Time) error {
	sig, err := headerMAC(h, headerTallySignature, "", base64Sig)
	if err != nil {
		return err
	}
	return matchBodyHMAC(body, secrets, sig)
}

func signTally(secret string, body []byte) string {
	return base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), body))
}

// Parse: the delivery id is eventId.
func (tallyKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	return namedRecord(body, "eventId", func(doc object) string { return doc.scalar("eventId") })
}

// Map: natural key data.responseId; data.fields[] by type (INPUT_EMAIL,
// INPUT_PHONE_NUMBER), else by label as a web form's fields.
func (tallyKind) Map(raw json.RawMessage) (Lead, error) {
	doc, ref, payload, err := openRecord(raw, "data.responseId", func(doc object) string { return doc.object("data").scalar("responseId") })
	if err != nil {
		return Lead{}, err
	}
	data := doc.object("data")
	var email, phone string
	byLabel := object{}
	for _, item := range data.array("fields") {
		f := decodeObject(item)
		switch f.scalar("type") {
		case "INPUT_EMAIL":
			email = firstNonEmpty(email, f.scalar("value"))
		case "INPUT_PHONE_NUMBER":
			phone = firstNonEmpty(phone, f.scalar("value"))
		}
		if label := f.scalar("label"); label != "" {
			if _, taken := byLabel[label]; !taken {
				byLabel[label] = f["value"]
			}
		}
	}
	l := flatLead(byLabel)
	l.Email, l.Phone = firstNonEmpty(email, l.Email), firstNonEmpty(phone, l.Phone)
	l.SourceRef, l.Payload = NormalizeID(ref), payload
	l.CreatedAt = firstTime(data, "createdAt")
	l.EventTime = l.CreatedAt
	return l, nil
}
