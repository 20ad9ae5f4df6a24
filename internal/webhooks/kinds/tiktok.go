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

// TikTok lead webhooks (docs/SENDERS.md, "TikTok Lead Generation").
// TikTok's page: https://developers.tiktok.com/doc/webhooks-verification —
// TikTok-Signature: t=<unix seconds>,s=<hex HMAC-SHA256> keyed by the app's
// client secret over t + "." + raw body; the receiver decides how old a
// timestamp may be (we allow 5 minutes either way). The body shape is the
// one docs/SENDERS.md fixes: {"event_id","event","lead":{"lead_id",
// "answers":[{"field_name","question","value"}],…}}.
const headerTikTokSignature = "TikTok-Signature"

type tiktokKind struct{}

func (tiktokKind) Name() string { return TikTok }

func (tiktokKind) Verify(h http.Header, body []byte, secrets []string, now time.Time) error {
	header, err := headerText(h, headerTikTokSignature)
	if err != nil {
		return err
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "s":
			if b, err := hex.DecodeString(v); err == nil && len(b) == sha256.Size {
				sigs = append(sigs, b)
			}
		}
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: %s header needs t= and a hex s=", ErrSignature, headerTikTokSignature)
	}
	if _, err := parseSignedTime(ts, now); err != nil {
		return err
	}
	return matchHMAC(secrets, rawKey, sigs, []byte(ts), dot, body)
}

func signTikTok(secret string, body []byte, now time.Time) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	return "t=" + ts + ",s=" + hex.EncodeToString(hmacSHA256([]byte(secret), []byte(ts), dot, body))
}

// Parse: the delivery id is event_id, else the SHA-256 of the body.
func (tiktokKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	return hashedRecord(body, func(doc object) string { return doc.scalar("event_id") })
}

// Map: natural key lead.lead_id; answers by field_name (name, email,
// phone_number, company_name), else by question as a web form's fields.
func (tiktokKind) Map(raw json.RawMessage) (Lead, error) {
	doc, ref, payload, err := openRecord(raw, "lead.lead_id", func(doc object) string { return doc.object("lead").scalar("lead_id") })
	if err != nil {
		return Lead{}, err
	}
	lead := doc.object("lead")
	named := object{}
	for _, a := range lead.array("answers") {
		ans := decodeObject(a)
		name := firstNonEmpty(ans.scalar("field_name"), ans.scalar("question"))
		if _, taken := named[name]; name != "" && !taken {
			named[name] = ans["value"]
		}
	}
	l := flatLead(named)
	l.SourceRef, l.Payload = NormalizeID(ref), payload
	l.CreatedAt = firstNonNilTime(firstTime(lead, "create_time"), firstTime(doc, "create_time"))
	l.EventTime = l.CreatedAt
	l.Touch = tiktokTouch(lead)
	return l, nil
}

func firstNonNilTime(ts ...*time.Time) *time.Time {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}
