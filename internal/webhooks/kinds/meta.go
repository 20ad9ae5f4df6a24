package kinds

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const headerHubSignature256 = "X-Hub-Signature-256"

// metaKind: Facebook/Instagram Lead Ads page webhooks. One POST may carry
// several leadgen changes; each is its own record keyed by leadgen_id.
type metaKind struct{}

func (metaKind) Name() string { return Meta }

func (metaKind) Verify(h http.Header, body []byte, secrets []string, _ time.Time) error {
	sig, err := headerMAC(h, headerHubSignature256, "sha256=", hexSig)
	if err != nil {
		return err
	}
	return matchBodyHMAC(body, secrets, sig)
}

// Parse returns one record per leadgen change. Changes of other fields are
// skipped; a body without any leadgen change has no delivery id. A leadgen
// change without a leadgen_id rejects the whole request, so no id is used up.
func (metaKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	doc := decodeObject(body)
	if _, ok := doc["entry"]; !ok {
		return nil, fmt.Errorf("%w: entry is missing", ErrUnparseable)
	}
	entries := doc.array("entry")
	if entries == nil {
		return nil, fmt.Errorf("%w: entry is not an array", ErrUnparseable)
	}
	var recs []Record
	for i, e := range entries {
		entry := decodeObject(e)
		if entry == nil {
			return nil, fmt.Errorf("%w: entry[%d] is not an object", ErrUnparseable, i)
		}
		for j, c := range entry.array("changes") {
			change := decodeObject(c)
			if change == nil {
				return nil, fmt.Errorf("%w: entry[%d].changes[%d] is not an object", ErrUnparseable, i, j)
			}
			if f := change.scalar("field"); f != "" && f != "leadgen" {
				continue
			}
			value := change.object("value")
			if value == nil {
				return nil, fmt.Errorf("%w: entry[%d].changes[%d].value is not an object", ErrUnparseable, i, j)
			}
			id := cleanID(value.scalar("leadgen_id"))
			if id == "" {
				return nil, fmt.Errorf("%w: entry[%d].changes[%d].value.leadgen_id is missing", ErrNoDeliveryID, i, j)
			}
			raw, err := storablePayload(change["value"])
			if err != nil {
				return nil, err
			}
			recs = append(recs, Record{DeliveryID: id, Raw: raw})
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no leadgen change in entry[].changes[]", ErrNoDeliveryID)
	}
	return recs, nil
}

// Map accepts a webhook change value (natural key leadgen_id, created_time
// in unix seconds) and a Graph API lead object (natural key id, field_data,
// created_time like 2024-01-02T03:04:05+0000): enrichment and reconcile feed
// Graph objects through here too.
func (metaKind) Map(raw json.RawMessage) (Lead, error) {
	doc, ref, payload, err := openRecord(raw, "leadgen_id (or id)", func(doc object) string { return firstNonEmpty(doc.scalar("leadgen_id"), doc.scalar("id")) })
	if err != nil {
		return Lead{}, err
	}
	fd := map[string]string{}
	for _, item := range doc.array("field_data") {
		f := decodeObject(item)
		name := strings.ToLower(f.scalar("name"))
		if name == "" || fd[name] != "" {
			continue
		}
		for _, v := range f.array("values") {
			if s := scalarText(v); s != "" {
				fd[name] = s
				break
			}
		}
	}
	return Lead{
		SourceRef: NormalizeID(ref),
		Email:     firstNonEmpty(fd["email"], fd["work_email"]),
		Name:      firstNonEmpty(fd["full_name"], fd["name"], joinName(fd["first_name"], fd["last_name"])),
		Phone:     firstNonEmpty(fd["phone_number"], fd["phone"], fd["work_phone_number"]),
		Company:   firstNonEmpty(fd["company_name"], fd["company"]),
		CreatedAt: firstTime(doc, "created_time"),
		EventTime: firstTime(doc, "created_time"),
		Payload:   payload,
		Touch:     metaTouch(doc),
	}, nil
}

// MetaVerifyHandshake answers Meta's GET subscription check: hub.mode must be
// "subscribe" and hub.verify_token equal verifyToken; ok carries hub.challenge
// to echo back as the response body.
func MetaVerifyHandshake(q url.Values, verifyToken string) (challenge string, ok bool) {
	challenge = q.Get("hub.challenge")
	if verifyToken == "" || q.Get("hub.mode") != "subscribe" || challenge == "" || len(challenge) > 256 {
		return "", false
	}
	if !equalSecret(q.Get("hub.verify_token"), verifyToken) {
		return "", false
	}
	return challenge, true
}
