package kinds

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const googleKeyMember = "google_key"

// googleAdsKind: Google Ads lead form webhooks. There is no signature: the
// body carries the advertiser's google_key, so only that key proves origin and
// it never reaches storage (Parse and Map strip it).
type googleAdsKind struct{}

func (googleAdsKind) Name() string { return GoogleAds }

func (googleAdsKind) Verify(_ http.Header, body []byte, secrets []string, _ time.Time) error {
	doc := decodeObject(body)
	var key string
	if doc == nil || json.Unmarshal(doc[googleKeyMember], &key) != nil || key == "" {
		return &sigError{msg: fmt.Sprintf("%v: missing google_key", ErrSignature), reason: ErrMissingSignature}
	}
	for _, secret := range secrets {
		if secret != "" && equalSecret(key, secret) {
			return nil
		}
	}
	return fmt.Errorf("%w: google_key does not match", ErrSignature)
}

// Parse returns the body without google_key as the record.
func (googleAdsKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	id := cleanID(decodeObject(body).scalar("lead_id"))
	if id == "" {
		return nil, fmt.Errorf("%w: lead_id is missing", ErrNoDeliveryID)
	}
	raw, err := StripSecrets(GoogleAds, body)
	if err != nil {
		return nil, err
	}
	return []Record{{DeliveryID: id, Raw: raw}}, nil
}

// Map: natural key lead_id; fields from user_column_data by column_id;
// is_test leads are tagged "test".
func (googleAdsKind) Map(raw json.RawMessage) (Lead, error) {
	doc := decodeObject(raw)
	if doc == nil || !json.Valid(raw) {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	ref := doc.scalar("lead_id")
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: lead_id is missing", ErrNoNaturalKey)
	}
	stripped, err := rewriteMembers(raw, googleKeyMember, "", nil)
	if err != nil {
		return Lead{}, err
	}
	payload, err := storablePayload(stripped)
	if err != nil {
		return Lead{}, err
	}
	col := map[string]string{}
	for _, c := range doc.array("user_column_data") {
		o := decodeObject(c)
		id := strings.ToUpper(o.scalar("column_id"))
		if v := o.scalar("string_value"); id != "" && v != "" && col[id] == "" {
			col[id] = v
		}
	}
	l := Lead{
		SourceRef: NormalizeID(ref),
		Email:     firstNonEmpty(col["EMAIL"], col["WORK_EMAIL"]),
		Name:      firstNonEmpty(col["FULL_NAME"], joinName(col["FIRST_NAME"], col["LAST_NAME"])),
		Phone:     firstNonEmpty(col["PHONE_NUMBER"], col["WORK_PHONE"]),
		Company:   col["COMPANY_NAME"],
		CreatedAt: firstTime(doc, "lead_submit_time"), // newer api_versions only
		Payload:   payload,
		Touch:     googleAdsTouch(doc),
	}
	if doc.boolean("is_test") {
		l.Tags = []string{"test"}
	}
	return l, nil
}

// StripSecrets returns body without secrets a sender puts inside it (the
// google_key of google-ads), compacted and in member order, for storing it,
// e.g. as a dead letter. Other kinds' bodies are returned unchanged.
func StripSecrets(kindName string, body []byte) ([]byte, error) {
	if kindName != GoogleAds {
		return body, nil
	}
	return rewriteMembers(body, googleKeyMember, "", nil)
}
