package kinds

import (
	"encoding/hex"
	"encoding/json"
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
	header, err := headerText(h, headerLinkedInSignature)
	if err != nil {
		return err
	}
	header, _ = cutPrefixFold(header, "hmacsha256=") // some examples show it in the header too
	sig, err := hexSig.mac(headerLinkedInSignature, header)
	if err != nil {
		return err
	}
	return matchHMAC(secrets, rawKey, [][]byte{sig}, linkedinSignPrefix, body)
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

// LinkedIn's lead notification (Lead Sync API, "Lead Notifications":
// https://learn.microsoft.com/en-us/linkedin/marketing/lead-sync/leadsync)
// is {"type":"LEAD_ACTION","leadGenFormResponse":"urn:li:leadGenFormResponse:<id>",
// "leadGenForm":"urn:li:versionedLeadGenForm:(urn:li:leadGenForm:<form>,<version>)",
// "owner":{…},"associatedEntity":{…},"leadType","leadAction":"CREATED"|"DELETED",
// "occurredAt"}. It carries no notification id of its own, so a lead is
// deduplicated by its response id: the <id> of the URN, which is also the
// "id" of that response in the lead form responses API
// (GET /rest/leadFormResponses/{id}); the notification and the fetched
// response are then one lead.
const linkedinResponseURN = "urn:li:leadGenFormResponse:"

// LinkedInResponseID is the lead form response id of a leadGenFormResponse
// URN, or of a bare id (returned as is).
func LinkedInResponseID(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > len(linkedinResponseURN) && strings.EqualFold(v[:len(linkedinResponseURN)], linkedinResponseURN) {
		return v[len(linkedinResponseURN):]
	}
	return v
}

// Parse: the delivery id is the notification's own id where a sender adds
// one, else the lead form response id (with the action when it is not
// CREATED: a response created and later deleted are two deliveries), else
// the response's own id (a response posted as the API returns it), else
// the SHA-256 of the body.
func (linkedinKind) Parse(_ http.Header, body []byte) ([]Record, error) {
	return hashedRecord(body, linkedinDeliveryID)
}

func linkedinDeliveryID(doc object) string {
	if id := cleanID(doc.scalar("notificationId")); id != "" {
		return id
	}
	if resp := LinkedInResponseID(doc.scalar("leadGenFormResponse")); resp != "" {
		if a := doc.scalar("leadAction"); a != "" && a != "CREATED" {
			resp += "/" + a
		}
		if id := cleanID(resp); id != "" {
			return id
		}
	}
	return doc.scalar("id")
}

// Map accepts a Lead Sync notification (no person: "details pending" until
// the API is asked) and a lead form response as the lead form responses API
// returns it (fetched, or listed by reconcile). Both have the response id
// as natural key. A response's answers carry only a questionId; which
// question asked for the e-mail or the name is in the form's questions
// (predefinedField), which the API returns with the response when asked
// for the form (pull.LinkedInFields).
func (linkedinKind) Map(raw json.RawMessage) (Lead, error) {
	doc, ref, payload, err := openRecord(raw, "leadGenFormResponse (or id)", func(doc object) string {
		return LinkedInResponseID(firstNonEmpty(doc.scalar("leadGenFormResponse"), doc.scalar("id")))
	})
	if err != nil {
		return Lead{}, err
	}
	fd := linkedinAnswers(doc)
	l := Lead{
		SourceRef: NormalizeID(ref),
		Email:     firstNonEmpty(fd["EMAIL"], fd["WORK_EMAIL"]),
		Name:      firstNonEmpty(fd["FULL_NAME"], joinName(fd["FIRST_NAME"], fd["LAST_NAME"])),
		Phone:     firstNonEmpty(fd["PHONE_NUMBER"], fd["WORK_PHONE_NUMBER"], fd["WORK_PHONE"], fd["MOBILE_PHONE_NUMBER"]),
		Company:   firstNonEmpty(fd["COMPANY_NAME"], fd["COMPANY"]),
		Payload:   payload,
		Touch:     linkedinTouch(doc),
	}
	if t := firstTime(doc, "submittedAt", "occurredAt", "occuredAt"); t != nil {
		l.CreatedAt = t
	}
	if doc.boolean("testLead") {
		l.Tags = []string{"test"}
	}
	return l, nil
}

// linkedinAnswers maps each text answer to its question's predefinedField
// (EMAIL, FIRST_NAME, …), found on the answer itself or, as LinkedIn
// returns it, on the form question with the answer's questionId.
func linkedinAnswers(doc object) map[string]string {
	predefined := map[string]string{}
	for _, q := range doc.object("form").object("content").array("questions") {
		qo := decodeObject(q)
		if id, f := qo.scalar("questionId"), qo.scalar("predefinedField"); id != "" && f != "" {
			predefined[id] = f
		}
	}
	fd := map[string]string{}
	for _, a := range doc.object("formResponse").array("answers") {
		ans := decodeObject(a)
		name := strings.ToUpper(firstNonEmpty(ans.scalar("predefinedField"), predefined[ans.scalar("questionId")], ans.scalar("name")))
		v := ans.object("answerDetails").object("textQuestionAnswer").scalar("answer")
		if name != "" && v != "" && fd[name] == "" {
			fd[name] = v
		}
	}
	return fd
}

// LinkedInAttribution is the touch a LinkedIn record names (docs/API.md,
// "Attribution"): campaign_id (and campaign_name when the API was asked
// for leadMetadataInfo), ad_id (the sponsored creative), form_id (the lead
// gen form, without its version) and at. Ids are the numbers of LinkedIn's
// URNs, as Campaign Manager shows them. Nil when the record names none,
// and for a lead notification (see linkedinTouch).
func LinkedInAttribution(raw json.RawMessage) Touch {
	doc := decodeObject(raw)
	if doc == nil {
		return nil
	}
	if t := linkedinTouch(doc); t != nil {
		return t.Last
	}
	return nil
}

func linkedinTouch(doc object) *Touches {
	if doc.scalar("leadGenFormResponse") != "" {
		// A notification names the form, not the campaign; the response
		// fetched for it is the same submission with the whole touch.
		// Recording the notification's partial touch would fix it as the
		// lead's first touch, which a later record never changes.
		return nil
	}
	meta := doc.object("leadMetadata").object("sponsoredLeadMetadata")
	entity := doc.object("associatedEntity")
	t := Touch{
		"campaign_id": urnID(firstNonEmpty(meta.scalar("campaign"), entity.scalar("sponsoredCampaign"), entity.scalar("campaign"))),
		"campaign_name": doc.object("leadMetadataInfo").object("sponsoredLeadMetadataInfo").
			object("campaign").scalar("name"),
		"ad_id":   urnID(firstNonEmpty(entity.scalar("associatedCreative"), entity.scalar("sponsoredCreative"))),
		"form_id": linkedinFormID(firstNonEmpty(doc.scalar("versionedLeadGenFormUrn"), doc.scalar("leadGenForm"))),
	}
	found := false
	for k, v := range t {
		if v == "" {
			delete(t, k)
		} else {
			found = true
		}
	}
	if !found {
		return nil
	}
	if at := firstTime(doc, "submittedAt", "occurredAt", "occuredAt"); at != nil {
		t["at"] = at.Format(time.RFC3339Nano)
	}
	return &Touches{Last: t}
}

// urnID is the last part of a URN ("urn:li:sponsoredCampaign:198356826" →
// "198356826"); a value that is no URN is returned as is.
func urnID(v string) string {
	if strings.HasPrefix(v, "urn:") {
		if i := strings.LastIndexByte(v, ':'); i >= 0 {
			return v[i+1:]
		}
	}
	return v
}

// linkedinFormID is the form id of a versioned form URN
// ("urn:li:versionedLeadGenForm:(urn:li:leadGenForm:7234246,1)" → "7234246"),
// or of a plain leadGenForm URN.
func linkedinFormID(v string) string {
	const form = "urn:li:leadGenForm:"
	if i := strings.Index(v, form); i >= 0 {
		rest := v[i+len(form):]
		if j := strings.IndexAny(rest, ",)"); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	return urnID(v)
}
