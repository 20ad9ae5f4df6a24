package kinds

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HubSpot webhooks, signature v3 only (docs/SENDERS.md, "HubSpot").
// HubSpot's page: https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation
// (and https://developers.hubspot.com/changelog/introducing-version-3-of-webhook-signatures):
//   - X-HubSpot-Signature-v3 = base64 HMAC-SHA256 keyed by the app's client
//     secret over method + requestUri + raw body + X-HubSpot-Request-Timestamp;
//   - the timestamp is in milliseconds; a request older than 5 minutes is
//     refused (we refuse 5 minutes ahead too);
//   - requestUri is the full URI HubSpot called (https://host/path?query),
//     with the escapes %3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B
//     decoded; behind a proxy it is LEADPIPE_BASE_URL + path + query.
//
// One POST carries an array of events; each is its own delivery (eventId).
const (
	headerHubSpotSignatureV3 = "X-HubSpot-Signature-v3"
	headerHubSpotTimestamp   = "X-HubSpot-Request-Timestamp"
)

type hubspotKind struct{}

func (hubspotKind) Name() string { return HubSpot }

// Verify without the request cannot know the URI HubSpot signed: it refuses.
func (hubspotKind) Verify(h http.Header, body []byte, secrets []string, now time.Time) error {
	return hubspotKind{}.VerifyRequest(Request{Header: h, Method: http.MethodPost}, body, secrets, now)
}

func (hubspotKind) VerifyRequest(r Request, body []byte, secrets []string, now time.Time) error {
	sig, ts, err := millisMAC(r.Header, headerHubSpotSignatureV3, headerHubSpotTimestamp, base64Sig, now)
	if err != nil {
		return err
	}
	if r.URI == "" {
		return fmt.Errorf("%w: the request URI is unknown", ErrSignature)
	}
	method, uri := []byte(strings.ToUpper(r.Method)), []byte(HubSpotURI(r.URI))
	return matchHMAC(secrets, rawKey, [][]byte{sig}, method, uri, body, []byte(ts))
}

// hubspotDecoded are the escapes HubSpot decodes in the URI it signs.
var hubspotDecoded = strings.NewReplacer(
	"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$", "%27", "'",
	"%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
	"%3a", ":", "%2f", "/", "%3f", "?", "%2a", "*", "%2c", ",", "%3b", ";",
)

// HubSpotURI is the URI as HubSpot signs it.
func HubSpotURI(uri string) string { return hubspotDecoded.Replace(uri) }

// signHubSpot is the v3 signature of a request (Sign, the test delivery).
func signHubSpot(secret, method, uri string, body []byte, now time.Time) (sig, ts string) {
	ts = strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmacSHA256([]byte(secret), []byte(method), []byte(HubSpotURI(uri)), body, []byte(ts))
	return base64.StdEncoding.EncodeToString(mac), ts
}

// checkMillis parses a unix-milliseconds timestamp within tolerance of now.
func checkMillis(s string, now time.Time) error {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp is not unix milliseconds", ErrSignature)
	}
	_, err = parseSignedTime(strconv.FormatInt(ms/1000, 10), now)
	return err
}

// Parse returns one record per event of the array (an object is one event).
// An event without an eventId rejects the whole request, so no id is used up.
func (hubspotKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		return hubspotRecords([]json.RawMessage{body})
	}
	if !json.Valid(body) || len(t) == 0 || t[0] != '[' {
		return nil, fmt.Errorf("%w: body is not a JSON array of events", ErrUnparseable)
	}
	if err := storable(body); err != nil {
		return nil, err
	}
	var events []json.RawMessage
	if err := json.Unmarshal(body, &events); err != nil {
		return nil, fmt.Errorf("%w: body is not a JSON array of events", ErrUnparseable)
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: the array holds no events", ErrUnparseable)
	}
	return hubspotRecords(events)
}

func hubspotRecords(events []json.RawMessage) ([]Record, error) {
	recs := make([]Record, 0, len(events))
	for i, e := range events {
		if err := checkBody(e); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		id := cleanID(decodeObject(e).scalar("eventId"))
		if id == "" {
			return nil, fmt.Errorf("%w: event %d has no eventId", ErrNoDeliveryID, i)
		}
		raw, err := storablePayload(e)
		if err != nil {
			return nil, err
		}
		recs = append(recs, Record{DeliveryID: id, Raw: raw})
	}
	return recs, nil
}

// Map: natural key objectId. A contact.propertyChange event sets only its
// property (the upsert leaves empty fields as they are; firstname and
// lastname are the name's parts, each kept when the other changes);
// contact.creation
// makes the lead from objectId alone. A contact object with "properties"
// (a workflow's webhook) maps email, firstname + lastname, phone, company.
// Events carry no record order of their own across properties, so receipt
// order decides (EventTime nil).
func (hubspotKind) Map(raw json.RawMessage) (Lead, error) {
	doc, ref, payload, err := openRecord(raw, "objectId", func(doc object) string {
		return firstNonEmpty(doc.scalar("objectId"), doc.scalar("vid"), doc.scalar("id"))
	})
	if err != nil {
		return Lead{}, err
	}
	l := Lead{SourceRef: NormalizeID(ref), Payload: payload}
	prop := func(name string) string {
		p := doc.object("properties")
		if v := p.object(name); v != nil {
			return v.scalar("value")
		}
		return p.scalar(name)
	}
	if strings.HasSuffix(doc.scalar("subscriptionType"), ".propertyChange") {
		v := doc.scalar("propertyValue")
		switch strings.ToLower(doc.scalar("propertyName")) {
		case "email":
			l.Email = v
		case "firstname":
			// One part of the name: the lead changes that part and
			// keeps the other (docs/SENDERS.md, "HubSpot").
			l.FirstName = v
		case "lastname":
			l.LastName = v
		case "phone", "mobilephone":
			l.Phone = v
		case "company":
			l.Company = v
		}
		return l, nil
	}
	l.Email = prop("email")
	l.FirstName, l.LastName = prop("firstname"), prop("lastname")
	l.Name = joinName(l.FirstName, l.LastName)
	l.Phone = firstNonEmpty(prop("phone"), prop("mobilephone"))
	l.Company = prop("company")
	if strings.HasSuffix(doc.scalar("subscriptionType"), ".creation") {
		l.CreatedAt = firstTime(doc, "occurredAt")
	}
	return l, nil
}
