package kinds

import (
	"strconv"
	"time"
)

// Sample payloads of the senders added in docs/SENDERS.md, shaped as each
// vendor's page shows them (the pages are cited beside each kind).

type linkedInOwner struct {
	SponsoredAccount string `json:"sponsoredAccount"`
}

type linkedInEntity struct {
	SponsoredCampaign string `json:"sponsoredCampaign"`
}

type linkedInNotification struct {
	Type                string         `json:"type"`
	LeadGenFormResponse string         `json:"leadGenFormResponse"`
	LeadGenForm         string         `json:"leadGenForm"`
	Owner               linkedInOwner  `json:"owner"`
	AssociatedEntity    linkedInEntity `json:"associatedEntity"`
	LeadAction          string         `json:"leadAction"`
	LeadType            string         `json:"leadType"`
	OccurredAt          int64          `json:"occurredAt"`
}

func sampleLinkedIn(responseID string, created time.Time) linkedInNotification {
	return linkedInNotification{Type: "LEAD_ACTION", LeadGenFormResponse: linkedinResponseURN + responseID,
		LeadGenForm:      "urn:li:versionedLeadGenForm:(urn:li:leadGenForm:4711,1)",
		Owner:            linkedInOwner{SponsoredAccount: "urn:li:sponsoredAccount:522529623"},
		AssociatedEntity: linkedInEntity{SponsoredCampaign: "urn:li:sponsoredCampaign:139371234"},
		LeadAction:       "CREATED", LeadType: "SPONSORED", OccurredAt: created.UnixMilli()}
}

type hubspotEvent struct {
	EventID          string `json:"eventId"`
	SubscriptionID   int64  `json:"subscriptionId"`
	PortalID         int64  `json:"portalId"`
	AppID            int64  `json:"appId"`
	OccurredAt       int64  `json:"occurredAt"`
	SubscriptionType string `json:"subscriptionType"`
	AttemptNumber    int    `json:"attemptNumber"`
	ObjectID         string `json:"objectId"`
	ChangeSource     string `json:"changeSource"`
	PropertyName     string `json:"propertyName,omitempty"`
	PropertyValue    string `json:"propertyValue,omitempty"`
}

// sampleHubSpot is one contact.propertyChange event of the email, as
// HubSpot batches them (a JSON array).
func sampleHubSpot(eventID, objectID string, f Lead, created time.Time) []hubspotEvent {
	return []hubspotEvent{HubSpotEvent(eventID, objectID, "contact.propertyChange", "email", f.Email, created)}
}

// HubSpotEvent is one webhook event (the test delivery, tests).
func HubSpotEvent(eventID, objectID, subscriptionType, property, value string, at time.Time) hubspotEvent {
	return hubspotEvent{EventID: eventID, SubscriptionID: 218912, PortalID: 62515, AppID: 54321,
		OccurredAt: at.UnixMilli(), SubscriptionType: subscriptionType, ObjectID: objectID,
		ChangeSource: "CRM", PropertyName: property, PropertyValue: value}
}

type webflowSchema struct {
	FieldName string `json:"fieldName"`
	FieldType string `json:"fieldType"`
}

type webflowPayload struct {
	Name        string            `json:"name"`
	SiteID      string            `json:"siteId"`
	Data        map[string]string `json:"data"`
	Schema      []webflowSchema   `json:"schema"`
	SubmittedAt string            `json:"submittedAt"`
	ID          string            `json:"id"`
	FormID      string            `json:"formId"`
}

type webflowSubmission struct {
	TriggerType string         `json:"triggerType"`
	Payload     webflowPayload `json:"payload"`
}

func sampleWebflow(id string, f Lead, created time.Time) webflowSubmission {
	return webflowSubmission{TriggerType: "form_submission", Payload: webflowPayload{
		Name: "Contact Us", SiteID: "65427cf400e02b306eaa049c",
		Data: map[string]string{"Name": f.Name, "Email": f.Email, "Phone Number": f.Phone, "Company": f.Company},
		Schema: []webflowSchema{{"Name", "FormTextInput"}, {"Email", "FormTextInput"},
			{"Phone Number", "FormTextInput"}, {"Company", "FormTextInput"}},
		SubmittedAt: created.Format("2006-01-02T15:04:05.000Z"), ID: id, FormID: "65429eadebe8a9f3a30f62d0",
	}}
}

type tallyField struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

type tallyData struct {
	ResponseID   string       `json:"responseId"`
	SubmissionID string       `json:"submissionId"`
	RespondentID string       `json:"respondentId"`
	FormID       string       `json:"formId"`
	FormName     string       `json:"formName"`
	CreatedAt    string       `json:"createdAt"`
	Fields       []tallyField `json:"fields"`
}

type tallyEvent struct {
	EventID   string    `json:"eventId"`
	EventType string    `json:"eventType"`
	CreatedAt string    `json:"createdAt"`
	Data      tallyData `json:"data"`
}

func sampleTally(eventID, responseID string, f Lead, created time.Time) tallyEvent {
	at := created.Format("2006-01-02T15:04:05.000Z")
	return tallyEvent{EventID: eventID, EventType: "FORM_RESPONSE", CreatedAt: at, Data: tallyData{
		ResponseID: responseID, SubmissionID: responseID, RespondentID: "dwQKYm", FormID: "VwbNEw",
		FormName: "Contact us", CreatedAt: at, Fields: []tallyField{
			{"question_3EKz4n", "Full name", "INPUT_TEXT", f.Name},
			{"question_nPaZ0N", "Work email", "INPUT_EMAIL", f.Email},
			{"question_w4Q8qN", "Phone", "INPUT_PHONE_NUMBER", f.Phone},
			{"question_3jZaa0", "Company", "INPUT_TEXT", f.Company},
		}}}
}

type tiktokAnswer struct {
	FieldName string `json:"field_name"`
	Question  string `json:"question"`
	Value     string `json:"value"`
}

type tiktokLead struct {
	LeadID     string         `json:"lead_id"`
	PageID     string         `json:"page_id"`
	CampaignID string         `json:"campaign_id"`
	AdgroupID  string         `json:"adgroup_id"`
	AdID       string         `json:"ad_id"`
	CreateTime string         `json:"create_time"`
	Answers    []tiktokAnswer `json:"answers"`
}

type tiktokEvent struct {
	EventID      string     `json:"event_id"`
	Event        string     `json:"event"`
	CreateTime   string     `json:"create_time"`
	AdvertiserID string     `json:"advertiser_id"`
	Lead         tiktokLead `json:"lead"`
}

func sampleTikTok(eventID, leadID string, f Lead, created time.Time) tiktokEvent {
	ts := strconv.FormatInt(created.Unix(), 10)
	return tiktokEvent{EventID: eventID, Event: "lead.create", CreateTime: ts, AdvertiserID: "7012345678901234567",
		Lead: tiktokLead{LeadID: leadID, PageID: "7098765432109876543", CampaignID: "1760000000000001",
			AdgroupID: "1760000000000002", AdID: "1760000000000003", CreateTime: ts, Answers: []tiktokAnswer{
				{"name", "Name", f.Name}, {"email", "Email", f.Email},
				{"phone_number", "Phone number", f.Phone}, {"company_name", "Company name", f.Company},
			}}}
}
