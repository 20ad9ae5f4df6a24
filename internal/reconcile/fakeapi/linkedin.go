package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// LinkedInOwner is the ad account that owns the LinkedIn fake's forms.
const LinkedInOwner = "urn:li:sponsoredAccount:522529623"

// LinkedInOtherForm is a second form of the same owner whose leads a
// source configured for the first form must not see.
const LinkedInOtherForm = "999"

// LinkedIn's ids of the attribution the fake's leads carry.
const (
	LinkedInCampaign = "198356826"
	LinkedInCreative = "241257736"
)

// NewLinkedIn serves LinkedIn's Lead Sync endpoints as documented
// (https://learn.microsoft.com/en-us/linkedin/marketing/lead-sync/leadsync):
// GET /rest/leadForms/{id}, GET /rest/leadFormResponses/{id} and GET
// /rest/leadFormResponses?q=owner&owner=(sponsoredAccount:<urn>)
// &leadType=(leadType:SPONSORED)&submittedAtTimeRange=(start:,end:)&count=&start=
// (newest first, offset paging). Every request must carry a Bearer token,
// LinkedIn-Version (YYYYMM) and X-Restli-Protocol-Version: 2.0.0, as
// LinkedIn requires. f.URL includes /rest.
func NewLinkedIn(t testing.TB, formID string, leads []Lead) *Fake {
	f := newFake(t, (*Fake).serveLinkedIn)
	f.formID = formID
	f.leads = sortLeads(leads)
	f.URL = f.srv.URL + "/rest"
	return f
}

// AddOtherFormLeads makes leads of LinkedInOtherForm available.
func (f *Fake) AddOtherFormLeads(leads ...Lead) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.other = sortLeads(append(f.other, leads...))
}

func linkedinError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"status": status, "code": code, "message": msg})
}

var linkedinVersion = regexp.MustCompile(`^20[0-9]{4}$`)

func (f *Fake) serveLinkedIn(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	formID, token := f.formID, f.token
	all := append(slices.Clone(f.leads), f.other...)
	forms := map[string]string{}
	for _, l := range f.leads {
		forms[l.ID] = formID
	}
	for _, l := range f.other {
		forms[l.ID] = LinkedInOtherForm
	}
	f.mu.Unlock()

	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || auth == "" || (token != "" && auth != token) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"status": 401, "serviceErrorCode": 65600,
			"code": "INVALID_ACCESS_TOKEN", "message": "Invalid access token"})
		return
	}
	if !linkedinVersion.MatchString(r.Header.Get("LinkedIn-Version")) {
		linkedinError(w, http.StatusBadRequest, "VERSION_MISSING",
			"A version must be present. Please specify a version by adding the LinkedIn-Version header.")
		return
	}
	if r.Header.Get("X-Restli-Protocol-Version") != "2.0.0" {
		linkedinError(w, http.StatusBadRequest, "ILLEGAL_ARGUMENT", "X-Restli-Protocol-Version 2.0.0 is required")
		return
	}
	if r.Method != http.MethodGet {
		linkedinError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method not allowed")
		return
	}
	withForm := strings.Contains(r.URL.Query().Get("fields"), "form:(")
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/rest"), "/"), "/")
	switch {
	case len(parts) == 2 && parts[0] == "leadForms":
		if parts[1] != formID && parts[1] != LinkedInOtherForm {
			linkedinError(w, http.StatusNotFound, "NOT_FOUND", "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, linkedinForm(parts[1]))
	case len(parts) == 2 && parts[0] == "leadFormResponses":
		i := slices.IndexFunc(all, func(l Lead) bool { return l.ID == parts[1] })
		if i < 0 {
			linkedinError(w, http.StatusNotFound, "NOT_FOUND", "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, linkedinResponse(all[i], forms[all[i].ID], withForm))
	case len(parts) == 1 && parts[0] == "leadFormResponses":
		f.serveLinkedInFinder(w, r, sortLeads(all), forms, withForm)
	default:
		linkedinError(w, http.StatusNotFound, "NOT_FOUND", "Not Found")
	}
}

var restliRange = regexp.MustCompile(`^\(start:([0-9]+),end:([0-9]+)\)$`)

func (f *Fake) serveLinkedInFinder(w http.ResponseWriter, r *http.Request, all []Lead, forms map[string]string, withForm bool) {
	q := r.URL.Query()
	// Rest.li 2.0: the (key:value) syntax travels unencoded, the URN inside encoded.
	if !strings.Contains(r.URL.RawQuery, "owner=(sponsoredAccount:urn%3Ali%3AsponsoredAccount%3A") {
		linkedinError(w, http.StatusBadRequest, "ILLEGAL_ARGUMENT", "owner must be (sponsoredAccount:<encoded urn>)")
		return
	}
	if q.Get("q") != "owner" || q.Get("owner") != "(sponsoredAccount:"+LinkedInOwner+")" || q.Get("leadType") != "(leadType:SPONSORED)" {
		linkedinError(w, http.StatusBadRequest, "ILLEGAL_ARGUMENT", "unsupported finder parameters")
		return
	}
	count, ok := pageSize(q.Get("count"), 10, 100)
	start, err := strconv.Atoi(q.Get("start"))
	if !ok || (q.Get("start") != "" && (err != nil || start < 0)) {
		linkedinError(w, http.StatusBadRequest, "ILLEGAL_ARGUMENT", "invalid count or start")
		return
	}
	matching := all
	if tr := q.Get("submittedAtTimeRange"); tr != "" {
		m := restliRange.FindStringSubmatch(tr)
		if m == nil {
			linkedinError(w, http.StatusBadRequest, "ILLEGAL_ARGUMENT", "invalid submittedAtTimeRange")
			return
		}
		from, _ := strconv.ParseInt(m[1], 10, 64)
		to, _ := strconv.ParseInt(m[2], 10, 64)
		matching = slices.DeleteFunc(slices.Clone(all), func(l Lead) bool {
			ms := l.Created.UnixMilli()
			return ms < from || ms > to
		})
	}
	page := matching[min(start, len(matching)):min(start+count, len(matching))]
	elements := make([]json.RawMessage, len(page))
	for i, l := range page {
		elements[i] = linkedinResponse(l, forms[l.ID], withForm)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"paging":   map[string]any{"start": start, "count": count, "links": []any{}, "total": len(matching)},
		"elements": elements,
	})
}

// The questions of the fake's forms: question ids are the position
// followed by the form id, as in LinkedIn's examples.
var linkedinQuestions = []struct{ name, field string }{
	{"First name", "FIRST_NAME"}, {"Last name", "LAST_NAME"}, {"Email address", "EMAIL"},
	{"Phone number", "PHONE_NUMBER"}, {"Company name", "COMPANY_NAME"},
}

func linkedinQuestionID(i int, formID string) int64 {
	n, _ := strconv.ParseInt(strconv.Itoa(i+1)+"0"+formID, 10, 64)
	return n
}

func linkedinForm(formID string) map[string]any {
	questions := make([]map[string]any, len(linkedinQuestions))
	for i, q := range linkedinQuestions {
		questions[i] = map[string]any{"questionId": linkedinQuestionID(i, formID), "name": q.name,
			"predefinedField": q.field, "responseRequired": true, "responseEditable": true,
			"question":        map[string]any{"localized": map[string]string{"en_US": q.name}},
			"questionDetails": map[string]any{"textQuestionDetails": map[string]int{"maxResponseLength": 300}}}
	}
	id, _ := strconv.ParseInt(formID, 10, 64)
	return map[string]any{"id": id, "name": "Fake form " + formID, "owner": map[string]string{"sponsoredAccount": LinkedInOwner},
		"versionId": 1, "state": "PUBLISHED", "hiddenFields": []any{},
		"creationLocale": map[string]string{"country": "US", "language": "en"},
		"content":        map[string]any{"questions": questions}}
}

// linkedinResponse is a lead form response as the API returns it; the
// form is included when the request's projection asks for it.
func linkedinResponse(l Lead, formID string, withForm bool) json.RawMessage {
	first, last, _ := strings.Cut(l.Name, " ")
	var answers []map[string]any
	for i, v := range []string{first, last, l.Email, l.Phone, l.Company} {
		if v != "" {
			answers = append(answers, map[string]any{"questionId": linkedinQuestionID(i, formID),
				"answerDetails": map[string]any{"textQuestionAnswer": map[string]string{"answer": v}}})
		}
	}
	resp := map[string]any{
		"id": l.ID, "owner": map[string]string{"sponsoredAccount": LinkedInOwner}, "leadType": "SPONSORED",
		"submitter": "urn:li:person:FakeMember", "submittedAt": l.Created.UnixMilli(), "testLead": false,
		"versionedLeadGenFormUrn": fmt.Sprintf("urn:li:versionedLeadGenForm:(urn:li:leadGenForm:%s,1)", formID),
		"leadMetadata":            map[string]any{"sponsoredLeadMetadata": map[string]string{"campaign": "urn:li:sponsoredCampaign:" + LinkedInCampaign}},
		"associatedEntity":        map[string]string{"associatedCreative": "urn:li:sponsoredCreative:" + LinkedInCreative},
		"formResponse":            map[string]any{"answers": answers, "consentResponses": []any{}},
	}
	if withForm {
		resp["form"] = linkedinForm(formID)
	}
	b, _ := json.Marshal(resp)
	return b
}

// LinkedInNotification is the (unsigned) lead notification LinkedIn posts
// when l is submitted to formID.
func LinkedInNotification(formID string, l Lead) []byte {
	b, _ := json.Marshal(map[string]any{
		"type": "LEAD_ACTION", "leadGenFormResponse": "urn:li:leadGenFormResponse:" + l.ID,
		"leadGenForm": fmt.Sprintf("urn:li:versionedLeadGenForm:(urn:li:leadGenForm:%s,1)", formID),
		"owner":       map[string]string{"sponsoredAccount": LinkedInOwner}, "leadType": "SPONSORED",
		"leadAction": "CREATED", "occurredAt": l.Created.UnixMilli(),
	})
	return b
}
