package kinds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// LinkedIn Lead Sync (docs/SENDERS.md, "LinkedIn Lead Gen Forms").
// LinkedIn's page: https://learn.microsoft.com/en-us/linkedin/shared/api-guide/webhook-validation
//   - GET ?challengeCode=<uuid>: answer 200 {"challengeCode","challengeResponse"}
//     with challengeResponse = hex HMAC-SHA256(challengeCode) keyed by the
//     app's client secret. LinkedIn re-validates every 2 hours and blocks
//     the URL after 3 failures, so the answer never waits on the database.
//   - POST: X-LI-Signature = hex HMAC-SHA256 keyed by the client secret over
//     "hmacsha256=" + the raw body. No timestamp is signed.
const headerLinkedInSignature = "X-LI-Signature"

// linkedinKind: one notification per POST (a lead form response created or
// deleted); the lead's fields come from LinkedIn's lead form responses API.
type linkedinKind struct{}

func (linkedinKind) Name() string { return LinkedIn }

var linkedinSignPrefix = []byte("hmacsha256=")

func (linkedinKind) Verify(h http.Header, body []byte, secrets []string, _ time.Time) error {
	header := strings.TrimSpace(h.Get(headerLinkedInSignature))
	if header == "" {
		return missingHeader(headerLinkedInSignature)
	}
	header, _ = cutPrefixFold(header, "hmacsha256=") // some examples show it in the header too
	sig, err := hex.DecodeString(header)
	if err != nil || len(sig) != sha256.Size {
		return fmt.Errorf("%w: %s header is not a hex SHA-256 HMAC", ErrSignature, headerLinkedInSignature)
	}
	for _, secret := range secrets {
		if secret != "" && hmac.Equal(hmacSHA256([]byte(secret), linkedinSignPrefix, body), sig) {
			return nil
		}
	}
	return noMatch()
}

// LinkedInChallenge answers LinkedIn's validation GET: the JSON body to send
// with 200, computed with the source's current secret (the first one).
func LinkedInChallenge(code string, secrets []string) ([]byte, bool) {
	if code == "" || len(code) > 256 || len(secrets) == 0 || secrets[0] == "" {
		return nil, false
	}
	b, err := json.Marshal(struct {
		ChallengeCode     string `json:"challengeCode"`
		ChallengeResponse string `json:"challengeResponse"`
	}{code, hex.EncodeToString(hmacSHA256([]byte(secrets[0]), []byte(code)))})
	return b, err == nil
}

// Parse: the delivery id is the notification's own id where it has one,
// else the lead form response URN (with its action when it is not CREATED:
// a response created and later deleted are two deliveries), else the
// SHA-256 of the body.
func (linkedinKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	doc := decodeObject(body)
	id := cleanID(firstNonEmpty(doc.scalar("notificationId"), doc.scalar("id")))
	if id == "" {
		if resp := doc.scalar("leadGenFormResponse"); resp != "" {
			id = resp
			if a := doc.scalar("leadAction"); a != "" && a != "CREATED" {
				id += "/" + a
			}
			id = cleanID(id)
		}
	}
	if id == "" {
		id = bodyHash(body)
	}
	return []Record{{DeliveryID: id, Raw: clone(body)}}, nil
}

// Map accepts a Lead Sync notification (natural key leadGenFormResponse; no
// lead fields: "details pending" until the API is asked) and a lead form
// response from the API (natural key id; answers by predefined field).
func (linkedinKind) Map(raw json.RawMessage) (Lead, error) {
	doc := decodeObject(raw)
	if doc == nil {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	ref := firstNonEmpty(doc.scalar("leadGenFormResponse"), doc.scalar("id"))
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: leadGenFormResponse (or id) is missing", ErrNoNaturalKey)
	}
	payload, err := storablePayload(raw)
	if err != nil {
		return Lead{}, err
	}
	fd := map[string]string{}
	for _, a := range doc.object("formResponse").array("answers") {
		ans := decodeObject(a)
		name := strings.ToUpper(firstNonEmpty(ans.scalar("predefinedField"), ans.scalar("name")))
		v := ans.object("answerDetails").object("textQuestionAnswer").scalar("answer")
		if name != "" && v != "" && fd[name] == "" {
			fd[name] = v
		}
	}
	l := Lead{
		SourceRef: NormalizeID(ref),
		Email:     firstNonEmpty(fd["EMAIL"], fd["WORK_EMAIL"]),
		Name:      firstNonEmpty(fd["FULL_NAME"], joinName(fd["FIRST_NAME"], fd["LAST_NAME"])),
		Phone:     firstNonEmpty(fd["PHONE_NUMBER"], fd["WORK_PHONE"]),
		Company:   firstNonEmpty(fd["COMPANY_NAME"], fd["COMPANY"]),
		Payload:   payload,
	}
	if t := firstTime(doc, "submittedAt", "occuredAt", "occurredAt"); t != nil {
		l.CreatedAt = t
	}
	return l, nil
}
