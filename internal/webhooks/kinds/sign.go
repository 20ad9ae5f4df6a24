package kinds

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Sign returns the headers a real sender of the kind would send with body,
// signed with secret at now, and the body to send: google-ads carries its key
// inside the body, so its body is rewritten; the others return body as is.
// deliveryID goes into the webhook-id header (standard) or the configured
// delivery id header (generic); the other kinds read it from the body.
func Sign(kindName string, config json.RawMessage, secret string, deliveryID string, body []byte, now time.Time) (http.Header, []byte, error) {
	return SignTo(kindName, config, secret, deliveryID, "", body, now)
}

// SignTo is Sign for a POST to uri, the public URI HubSpot signs ("" signs
// for SampleURI); the other kinds do not sign the URI.
func SignTo(kindName string, config json.RawMessage, secret string, deliveryID, uri string, body []byte, now time.Time) (http.Header, []byte, error) {
	if secret == "" {
		return nil, nil, errors.New("kinds: empty secret")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	switch kindName {
	case Standard:
		if deliveryID == "" {
			return nil, nil, errors.New("kinds: standard needs a delivery id for the webhook-id header")
		}
		key, ok := standardKey(secret)
		if !ok {
			return nil, nil, errors.New(`kinds: standard secret is not "whsec_" + base64`)
		}
		ts := strconv.FormatInt(now.Unix(), 10)
		sig := hmacSHA256(key, []byte(deliveryID), dot, []byte(ts), dot, body)
		h.Set(headerWebhookID, deliveryID)
		h.Set(headerWebhookTimestamp, ts)
		h.Set(headerWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(sig))
	case Timestamped:
		ts := strconv.FormatInt(now.Unix(), 10)
		sig := hmacSHA256([]byte(secret), []byte(ts), dot, body)
		h.Set(timestampedSignatureHeaders[0], "t="+ts+",v1="+hex.EncodeToString(sig))
	case Typeform:
		h.Set(headerTypeformSignature, "sha256="+base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), body)))
	case Meta:
		h.Set(headerHubSignature256, "sha256="+hex.EncodeToString(hmacSHA256([]byte(secret), body)))
	case GoogleAds:
		key, _ := json.Marshal(secret)
		signed, err := rewriteMembers(body, "", googleKeyMember, key)
		if err != nil {
			return nil, nil, fmt.Errorf("kinds: google-ads body: %w", err)
		}
		return h, signed, nil
	case Generic:
		k, err := New(Generic, config)
		if err != nil {
			return nil, nil, err
		}
		g := k.(*genericKind)
		sig := hmacSHA256([]byte(secret), body)
		enc := hex.EncodeToString(sig)
		if g.base64 {
			enc = base64.StdEncoding.EncodeToString(sig)
		}
		h.Set(g.header, g.prefix+enc)
		if g.idHeader != "" {
			if deliveryID == "" {
				return nil, nil, fmt.Errorf("kinds: generic config needs a delivery id for the %s header", g.idHeader)
			}
			h.Set(g.idHeader, deliveryID)
		}
	case LinkedIn:
		h.Set(headerLinkedInSignature, hex.EncodeToString(hmacSHA256([]byte(secret), linkedinSignPrefix, body)))
	case HubSpot:
		if uri == "" {
			uri = SampleURI
		}
		sig, ts := signHubSpot(secret, http.MethodPost, uri, body, now)
		h.Set(headerHubSpotSignatureV3, sig)
		h.Set(headerHubSpotTimestamp, ts)
	case Webflow:
		sig, ts := signWebflow(secret, body, now)
		h.Set(headerWebflowSignature, sig)
		h.Set(headerWebflowTimestamp, ts)
	case Tally:
		h.Set(headerTallySignature, signTally(secret, body))
	case TikTok:
		h.Set(headerTikTokSignature, signTikTok(secret, body, now))
	case Token:
		h.Set("Authorization", "Bearer "+secret)
	default:
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownKind, kindName)
	}
	return h, body, nil
}

// SampleConfig returns a config fitting SampleBody for the kind (nil for
// kinds without a config).
func SampleConfig(kindName string) json.RawMessage {
	if kindName == Token {
		return json.RawMessage(`{"delivery_id_path":"$.event_id","natural_key_path":"$.lead_id","fields":{"created_at":"$.created_at"}}`)
	}
	if kindName != Generic {
		return nil
	}
	b, err := json.Marshal(GenericConfig{
		SignatureHeader: "X-Signature", Encoding: "hex", Prefix: "sha256=",
		DeliveryIDPath: "$.event.id", NaturalKeyPath: "$.lead.id",
		Fields: map[string]string{
			"email": "$.lead.email", "name": "$.lead.name", "phone": "$.lead.phone",
			"company": "$.lead.company", "created_at": "$.lead.created_at",
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// SampleBody returns a payload shaped as the kind's sender documents it, with
// the given delivery id, natural key and lead fields (CreatedAt defaults to
// now; the tag "test" marks a google-ads test lead). For meta and google-ads
// the delivery id is the natural key: deliveryID is used, else sourceRef; a
// meta webhook carries no lead fields (see SampleMetaLead). For standard the
// delivery id travels in a header (see Sign). Unknown kinds give nil.
func SampleBody(kindName string, deliveryID, sourceRef string, f Lead, now time.Time) []byte {
	now = now.UTC()
	created := now
	if f.CreatedAt != nil {
		created = f.CreatedAt.UTC()
	}
	leadID := firstNonEmpty(deliveryID, sourceRef)
	var v any
	switch kindName {
	case Standard:
		v = sampleStandard{
			Type:      "contact.created",
			Timestamp: now.Format(time.RFC3339Nano),
			Data: sampleContact{
				ID: sourceRef, Object: "contact", Email: f.Email, Name: f.Name, Phone: f.Phone, Company: f.Company,
				CreatedAt: created.Format(time.RFC3339),
			},
		}
	case Timestamped:
		v = sampleStripeEvent{
			ID: deliveryID, Object: "event", APIVersion: "2024-06-20", Created: now.Unix(),
			Data: sampleStripeData{Object: sampleStripeCustomer{
				ID: sourceRef, Object: "customer", Created: created.Unix(),
				Email: f.Email, Name: f.Name, Phone: f.Phone, Company: f.Company, Metadata: map[string]string{},
			}},
			PendingWebhooks: 1,
			Request:         sampleStripeRequest{},
			Type:            "customer.created",
		}
	case Typeform:
		v = sampleTypeform(deliveryID, sourceRef, f, created)
	case Meta:
		v = sampleMetaWebhook{Object: "page", Entry: []sampleMetaEntry{{
			ID: "101010101010101", Time: now.Unix(),
			Changes: []sampleMetaChange{{Field: "leadgen", Value: sampleMetaValue{
				AdID: "23850000000000001", FormID: "560000000000001", LeadgenID: leadID,
				CreatedTime: created.Unix(), PageID: "101010101010101", AdgroupID: "23850000000000002",
			}}},
		}}}
	case GoogleAds:
		v = sampleGoogleAds(leadID, f, created)
	case Generic:
		v = sampleGeneric{
			Event: sampleGenericEvent{ID: deliveryID, Type: "lead.created", CreatedAt: now.Format(time.RFC3339)},
			Lead: sampleContact{
				ID: sourceRef, Email: f.Email, Name: f.Name, Phone: f.Phone, Company: f.Company,
				CreatedAt: created.Format(time.RFC3339),
			},
		}
	case LinkedIn:
		v = sampleLinkedIn(leadID, created)
	case HubSpot:
		v = sampleHubSpot(deliveryID, sourceRef, f, created)
	case Webflow:
		v = sampleWebflow(leadID, f, created)
	case Tally:
		v = sampleTally(deliveryID, sourceRef, f, created)
	case TikTok:
		v = sampleTikTok(deliveryID, sourceRef, f, created)
	case Token:
		v = map[string]string{"event_id": deliveryID, "lead_id": sourceRef, "email": f.Email, "name": f.Name,
			"phone": f.Phone, "company": f.Company, "created_at": created.Format(time.RFC3339)}
	default:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed struct types: cannot fail
	}
	return b
}

// SampleMetaLead returns a Graph API lead object (GET /{leadgen_id}) with the
// given id and fields, as enrichment and reconcile receive it.
func SampleMetaLead(leadgenID string, f Lead, now time.Time) []byte {
	created := now.UTC()
	if f.CreatedAt != nil {
		created = f.CreatedAt.UTC()
	}
	fd := []sampleFieldData{}
	add := func(name, v string) {
		if v != "" {
			fd = append(fd, sampleFieldData{Name: name, Values: []string{v}})
		}
	}
	add("email", f.Email)
	add("full_name", f.Name)
	add("phone_number", f.Phone)
	add("company_name", f.Company)
	b, err := json.Marshal(sampleMetaLead{
		CreatedTime: created.Format("2006-01-02T15:04:05-0700"), ID: leadgenID,
		AdID: "23850000000000001", FormID: "560000000000001", FieldData: fd,
	})
	if err != nil {
		panic(err)
	}
	return b
}

type sampleContact struct {
	ID        string `json:"id"`
	Object    string `json:"object,omitempty"`
	Email     string `json:"email,omitempty"`
	Name      string `json:"name,omitempty"`
	Phone     string `json:"phone,omitempty"`
	Company   string `json:"company,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
}

type sampleStandard struct {
	Type      string        `json:"type"`
	Timestamp string        `json:"timestamp"`
	Data      sampleContact `json:"data"`
}

type sampleStripeEvent struct {
	ID              string              `json:"id,omitempty"`
	Object          string              `json:"object"`
	APIVersion      string              `json:"api_version"`
	Created         int64               `json:"created"`
	Data            sampleStripeData    `json:"data"`
	Livemode        bool                `json:"livemode"`
	PendingWebhooks int                 `json:"pending_webhooks"`
	Request         sampleStripeRequest `json:"request"`
	Type            string              `json:"type"`
}

type sampleStripeData struct {
	Object sampleStripeCustomer `json:"object"`
}

type sampleStripeCustomer struct {
	ID       string            `json:"id"`
	Object   string            `json:"object"`
	Created  int64             `json:"created"`
	Email    string            `json:"email,omitempty"`
	Name     string            `json:"name,omitempty"`
	Phone    string            `json:"phone,omitempty"`
	Company  string            `json:"company,omitempty"`
	Livemode bool              `json:"livemode"`
	Metadata map[string]string `json:"metadata"`
}

type sampleStripeRequest struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

type typeformField struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Ref   string `json:"ref"`
	Title string `json:"title,omitempty"`
}

type typeformAnswer struct {
	Type        string        `json:"type"`
	Text        string        `json:"text,omitempty"`
	Email       string        `json:"email,omitempty"`
	PhoneNumber string        `json:"phone_number,omitempty"`
	Field       typeformField `json:"field"`
}

type typeformResponse struct {
	FormID      string            `json:"form_id"`
	Token       string            `json:"token"`
	LandedAt    string            `json:"landed_at"`
	SubmittedAt string            `json:"submitted_at"`
	Hidden      map[string]string `json:"hidden"`
	Definition  struct {
		ID     string          `json:"id"`
		Title  string          `json:"title"`
		Fields []typeformField `json:"fields"`
	} `json:"definition"`
	Answers []typeformAnswer `json:"answers"`
}

type typeformEvent struct {
	EventID      string           `json:"event_id"`
	EventType    string           `json:"event_type"`
	FormResponse typeformResponse `json:"form_response"`
}

func sampleTypeform(deliveryID, token string, f Lead, submitted time.Time) typeformEvent {
	emailField := typeformField{ID: "SMEUb7VJz92Q", Type: "email", Ref: "email", Title: "What is your email address?"}
	phoneField := typeformField{ID: "JwWggjAKtOkA", Type: "phone_number", Ref: "phone", Title: "And your phone number?"}
	fr := typeformResponse{
		FormID: "lT4Z3j", Token: token,
		LandedAt:    submitted.Add(-90 * time.Second).Format(time.RFC3339),
		SubmittedAt: submitted.Format(time.RFC3339),
		Hidden:      map[string]string{"name": f.Name, "company": f.Company},
		Answers:     []typeformAnswer{},
	}
	fr.Definition.ID, fr.Definition.Title = "lT4Z3j", "Talk to sales"
	fr.Definition.Fields = []typeformField{emailField, phoneField}
	emailField.Title, phoneField.Title = "", ""
	if f.Email != "" {
		fr.Answers = append(fr.Answers, typeformAnswer{Type: "email", Email: f.Email, Field: emailField})
	}
	if f.Phone != "" {
		fr.Answers = append(fr.Answers, typeformAnswer{Type: "phone_number", PhoneNumber: f.Phone, Field: phoneField})
	}
	return typeformEvent{EventID: deliveryID, EventType: "form_response", FormResponse: fr}
}

type sampleMetaWebhook struct {
	Object string            `json:"object"`
	Entry  []sampleMetaEntry `json:"entry"`
}

type sampleMetaEntry struct {
	ID      string             `json:"id"`
	Time    int64              `json:"time"`
	Changes []sampleMetaChange `json:"changes"`
}

type sampleMetaChange struct {
	Field string          `json:"field"`
	Value sampleMetaValue `json:"value"`
}

type sampleMetaValue struct {
	AdID        string `json:"ad_id"`
	FormID      string `json:"form_id"`
	LeadgenID   string `json:"leadgen_id"`
	CreatedTime int64  `json:"created_time"`
	PageID      string `json:"page_id"`
	AdgroupID   string `json:"adgroup_id"`
}

type sampleFieldData struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

type sampleMetaLead struct {
	CreatedTime string            `json:"created_time"`
	ID          string            `json:"id"`
	AdID        string            `json:"ad_id"`
	FormID      string            `json:"form_id"`
	FieldData   []sampleFieldData `json:"field_data"`
}

type googleColumn struct {
	ColumnName  string `json:"column_name,omitempty"`
	StringValue string `json:"string_value"`
	ColumnID    string `json:"column_id"`
}

type sampleGoogleLead struct {
	LeadID         string         `json:"lead_id"`
	UserColumnData []googleColumn `json:"user_column_data"`
	APIVersion     string         `json:"api_version"`
	FormID         int64          `json:"form_id"`
	CampaignID     int64          `json:"campaign_id"`
	IsTest         bool           `json:"is_test"`
	GclID          string         `json:"gcl_id"`
	AdgroupID      int64          `json:"adgroup_id"`
	CreativeID     int64          `json:"creative_id"`
	LeadSubmitTime string         `json:"lead_submit_time"`
}

func sampleGoogleAds(leadID string, f Lead, submitted time.Time) sampleGoogleLead {
	cols := []googleColumn{}
	add := func(name, id, v string) {
		if v != "" {
			cols = append(cols, googleColumn{ColumnName: name, StringValue: v, ColumnID: id})
		}
	}
	add("Full Name", "FULL_NAME", f.Name)
	add("User Email", "EMAIL", f.Email)
	add("User Phone", "PHONE_NUMBER", f.Phone)
	add("Company Name", "COMPANY_NAME", f.Company)
	sum := sha256.Sum256([]byte(leadID))
	return sampleGoogleLead{
		LeadID: leadID, UserColumnData: cols, APIVersion: "1.0",
		FormID: 40000000000, CampaignID: 50000000000, IsTest: slices.Contains(f.Tags, "test"),
		GclID: "EAIaIQobChMI" + hex.EncodeToString(sum[:12]), AdgroupID: 20000000000, CreativeID: 30000000000,
		LeadSubmitTime: submitted.Format(time.RFC3339),
	}
}

type sampleGenericEvent struct {
	ID        string `json:"id,omitempty"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
}

type sampleGeneric struct {
	Event sampleGenericEvent `json:"event"`
	Lead  sampleContact      `json:"lead"`
}
