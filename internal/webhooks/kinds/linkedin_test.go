package kinds

import (
	"encoding/json"
	"maps"
	"testing"
	"time"
)

// TestLinkedInLeadFormResponse: a response as LinkedIn's lead form
// responses API returns it (answers by questionId, the form's questions
// naming each predefinedField) maps to the person, and its id is the same
// natural key as the notification's leadGenFormResponse URN.
func TestLinkedInLeadFormResponse(t *testing.T) {
	k := mustKind(t, LinkedIn, nil)
	lead, err := k.Map(readFixture(t, "linkedin_lead_form_response.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkLead(t, lead, Lead{SourceRef: "249592fc-d272-44ba-a7db-c2bdce579507-6", Email: "kevin@example.com",
		Name: "Kevin Johnson", Phone: "+1 555 0100", Company: "Acme Corp",
		CreatedAt: timePtr(time.UnixMilli(1689894599288).UTC())})
	want := Touch{"campaign_id": "198356826", "campaign_name": "Spring webinar", "ad_id": "241257736",
		"form_id": "7234246", "at": "2023-07-20T23:09:59.288Z"}
	if lead.Touch == nil || lead.Touch.First != nil || !maps.Equal(lead.Touch.Last, want) {
		t.Errorf("touch = %+v, want last %v", lead.Touch, want)
	}
	if got := LinkedInAttribution(readFixture(t, "linkedin_lead_form_response.json")); !maps.Equal(got, want) {
		t.Errorf("LinkedInAttribution = %v", got)
	}

	note := []byte(`{"type":"LEAD_ACTION","leadGenFormResponse":"urn:li:leadGenFormResponse:249592fc-d272-44ba-a7db-c2bdce579507-6",` +
		`"leadGenForm":"urn:li:versionedLeadGenForm:(urn:li:leadGenForm:7234246,3)","owner":{"sponsoredAccount":"urn:li:sponsoredAccount:1234567"},` +
		`"leadType":"SPONSORED","leadAction":"CREATED","occurredAt":1689894600000}`)
	recs, err := k.Parse(nil, note)
	if err != nil || len(recs) != 1 || recs[0].DeliveryID != "249592fc-d272-44ba-a7db-c2bdce579507-6" {
		t.Fatalf("Parse: %+v %v", recs, err)
	}
	nl, err := k.Map(recs[0].Raw)
	if err != nil || nl.SourceRef != lead.SourceRef || nl.Email != "" {
		t.Fatalf("notification: %+v %v", nl, err)
	}
	if nl.Touch != nil {
		t.Errorf("notification touch = %+v, want none (the fetched response carries it)", nl.Touch)
	}
	// A deletion of the same response is its own delivery of the same lead.
	var del map[string]any
	_ = json.Unmarshal(note, &del)
	del["leadAction"] = "DELETED"
	b, _ := json.Marshal(del)
	recs, err = k.Parse(nil, b)
	if err != nil || recs[0].DeliveryID != "249592fc-d272-44ba-a7db-c2bdce579507-6/DELETED" {
		t.Fatalf("deleted: %+v %v", recs, err)
	}
}

func TestLinkedInIDs(t *testing.T) {
	for in, want := range map[string]string{
		"urn:li:leadGenFormResponse:abc-1": "abc-1", "abc-1": "abc-1", " urn:li:leadGenFormResponse:x ": "x", "": "",
	} {
		if got := LinkedInResponseID(in); got != want {
			t.Errorf("LinkedInResponseID(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"urn:li:versionedLeadGenForm:(urn:li:leadGenForm:7234246,1)": "7234246",
		"urn:li:leadGenForm:42": "42", "42": "42",
	} {
		if got := linkedinFormID(in); got != want {
			t.Errorf("linkedinFormID(%q) = %q, want %q", in, got, want)
		}
	}
}
