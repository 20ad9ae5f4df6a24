package kinds

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Webflow form_submission webhooks (docs/SENDERS.md, "Webflow").
// Webflow's pages: https://developers.webflow.com/data/docs/working-with-webhooks
// and https://developers.webflow.com/data/v1.0.0/docs/verifying-webhook-signatures:
// x-webflow-timestamp is unix milliseconds; x-webflow-signature is hex
// HMAC-SHA256 keyed by the OAuth app's client secret (or the webhook's
// secret) over timestamp + ":" + raw body; a request older than 5 minutes
// is refused. Webflow signs only webhooks made by an OAuth app: a site's
// dashboard webhook is unsigned and goes to a token source's secret URL.
const (
	headerWebflowSignature = "X-Webflow-Signature"
	headerWebflowTimestamp = "X-Webflow-Timestamp"
)

type webflowKind struct{}

func (webflowKind) Name() string { return Webflow }

var colon = []byte{':'}

func (webflowKind) Verify(h http.Header, body []byte, secrets []string, now time.Time) error {
	sig, ts, err := millisMAC(h, headerWebflowSignature, headerWebflowTimestamp, hexSig, now)
	if err != nil {
		return err
	}
	return matchHMAC(secrets, rawKey, [][]byte{sig}, []byte(ts), colon, body)
}

func signWebflow(secret string, body []byte, now time.Time) (sig, ts string) {
	ts = strconv.FormatInt(now.UnixMilli(), 10)
	return hex.EncodeToString(hmacSHA256([]byte(secret), []byte(ts), colon, body)), ts
}

// Parse: the delivery id is the submission's payload.id.
func (webflowKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	return namedRecord(body, "payload.id", func(doc object) string { return doc.object("payload").scalar("id") })
}

// Map: natural key payload.id; payload.data fields by name, ignoring case
// and spaces (email, name or first + last name, phone, company).
func (webflowKind) Map(raw json.RawMessage) (Lead, error) {
	doc, ref, payload, err := openRecord(raw, "payload.id", func(doc object) string { return doc.object("payload").scalar("id") })
	if err != nil {
		return Lead{}, err
	}
	p := doc.object("payload")
	l := flatLead(p.object("data"))
	l.SourceRef, l.Payload = NormalizeID(ref), payload
	l.CreatedAt = firstTime(p, "submittedAt")
	l.EventTime = l.CreatedAt
	return l, nil
}

// flatLead maps a flat object of form fields by name: keys compared without
// case, spaces, dashes and underscores.
func flatLead(o object) Lead {
	f := map[string]string{}
	for k, v := range o {
		key := strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.ToLower(k))
		if s := scalarText(v); s != "" && f[key] == "" {
			f[key] = s
		}
	}
	return Lead{
		Email:   firstNonEmpty(f["email"], f["emailaddress"], f["youremail"], f["workemail"]),
		Name:    firstNonEmpty(f["name"], f["fullname"], f["yourname"], joinName(firstNonEmpty(f["firstname"], f["first"]), firstNonEmpty(f["lastname"], f["last"]))),
		Phone:   firstNonEmpty(f["phone"], f["phonenumber"], f["telephone"], f["tel"], f["mobile"], f["yourphone"]),
		Company: firstNonEmpty(f["company"], f["companyname"], f["organization"], f["organisation"], f["yourcompany"]),
	}
}
