package kinds

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const headerTypeformSignature = "Typeform-Signature"

// typeformKind: "sha256=<base64 HMAC-SHA256(body)>", no timestamp (replays
// are absorbed by event_id dedupe).
type typeformKind struct{}

func (typeformKind) Name() string { return Typeform }

func (typeformKind) Verify(h http.Header, body []byte, secrets []string, _ time.Time) error {
	sig, err := headerMAC(h, headerTypeformSignature, "sha256=", base64Sig)
	if err != nil {
		return err
	}
	return matchBodyHMAC(body, secrets, sig)
}

func (typeformKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	return namedRecord(body, "event_id", func(doc object) string { return doc.scalar("event_id") })
}

// Map: natural key form_response.token; email and phone from the first
// answers of those types (else hidden fields), name and company from hidden
// fields; the payload is form_response.
func (typeformKind) Map(raw json.RawMessage) (Lead, error) {
	doc := decodeObject(raw)
	if doc == nil {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	fr := doc.object("form_response")
	ref := fr.scalar("token")
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: form_response.token is missing", ErrNoNaturalKey)
	}
	payload, err := storablePayload(doc["form_response"])
	if err != nil {
		return Lead{}, err
	}
	var email, phone string
	for _, a := range fr.array("answers") {
		ans := decodeObject(a)
		switch ans.scalar("type") {
		case "email":
			email = firstNonEmpty(email, ans.scalar("email"))
		case "phone_number":
			phone = firstNonEmpty(phone, ans.scalar("phone_number"))
		}
	}
	hidden := fr.object("hidden")
	return Lead{
		SourceRef: NormalizeID(ref),
		Email:     firstNonEmpty(email, hidden.scalar("email")),
		Name:      personName(hidden),
		Phone:     firstNonEmpty(phone, hidden.scalar("phone")),
		Company:   hidden.scalar("company"),
		CreatedAt: firstTime(fr, "submitted_at"),
		EventTime: firstTime(fr, "submitted_at"),
		Payload:   payload,
	}, nil
}
