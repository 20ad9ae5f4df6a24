package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"leadpipe/internal/outbound"
)

// LinkedIn's Lead Sync API (docs/SENDERS.md, "LinkedIn Lead Gen Forms"):
// https://learn.microsoft.com/en-us/linkedin/marketing/lead-sync/leadsync
//   - GET {base}/leadForms/{formId}: the form, with its owner (a
//     sponsoredAccount or an organization URN).
//   - GET {base}/leadFormResponses/{id}: one lead form response (a lead).
//   - GET {base}/leadFormResponses?q=owner&owner=(sponsoredAccount:<urn>)
//     &leadType=(leadType:SPONSORED)&submittedAtTimeRange=(start:<ms>,end:<ms>)
//     &count=&start=: an owner's responses, offset paging with
//     paging {start,count,total}.
//
// Every call is versioned: LinkedIn-Version (YYYYMM) and
// X-Restli-Protocol-Version 2.0.0, with the member's OAuth token as Bearer.
// Rest.li 2.0 writes structured query values as (key:value): the
// parentheses, colons and commas of that syntax stay as they are, the
// values inside are percent-encoded (so the query is built by hand, not by
// url.Values, which would encode the syntax too).

// LinkedInVersion is the LinkedIn-Version sent. LinkedIn supports each
// monthly version for at least a year; docs/SENDERS.md says when to move it.
const LinkedInVersion = "202606"

// LinkedInFields is the projection asked for with every response: the
// answers, the form (its questions name the predefined field each answer
// is for) and the ids and names attribution needs.
const LinkedInFields = "id,submittedAt,testLead,leadType,owner,versionedLeadGenFormUrn,formResponse," +
	"leadMetadata,associatedEntity,ownerInfo,associatedEntityInfo,leadMetadataInfo," +
	"form:(hiddenFields,creationLocale,name,id,content)"

// LinkedIn's documented lead types.
var linkedinLeadTypes = map[string]bool{"SPONSORED": true, "EVENT": true, "COMPANY": true, "ORGANIZATION_PRODUCT": true}

var linkedinFormID = regexp.MustCompile(`^[0-9]{1,20}$`)

// linkedinForm is one configured form: "7234246", or "EVENT:7234246" to
// pick the lead type of an organization's form (default: SPONSORED for an
// ad account's form, COMPANY for an organization's).
type linkedinForm struct {
	id, leadType string
}

// ValidateLinkedInForms checks a LinkedIn source's form_id setting.
func ValidateLinkedInForms(v string) error {
	_, err := parseLinkedInForms(v)
	return err
}

// parseLinkedInForms reads a LinkedIn source's form_id setting: one or
// more form ids separated by commas, each optionally prefixed by its lead
// type.
func parseLinkedInForms(v string) ([]linkedinForm, error) {
	var out []linkedinForm
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f := linkedinForm{id: part}
		if typ, id, ok := strings.Cut(part, ":"); ok {
			f = linkedinForm{id: strings.TrimSpace(id), leadType: strings.ToUpper(strings.TrimSpace(typ))}
			if !linkedinLeadTypes[f.leadType] {
				return nil, fmt.Errorf("pull: linkedin lead type %q is not one of SPONSORED, EVENT, COMPANY, ORGANIZATION_PRODUCT", typ)
			}
		}
		if !linkedinFormID.MatchString(f.id) {
			return nil, fmt.Errorf("pull: linkedin form id %q is not a number", f.id)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("pull: linkedin needs at least one lead form id")
	}
	return out, nil
}

func linkedinHeaders(token string) http.Header {
	return http.Header{
		"Authorization":             {"Bearer " + token},
		"Linkedin-Version":          {LinkedInVersion},
		"X-Restli-Protocol-Version": {"2.0.0"},
	}
}

// FetchLinkedInLead fetches one lead form response by its id (the id in the
// notification's leadGenFormResponse URN), with LinkedInFields.
func FetchLinkedInLead(ctx context.Context, c *outbound.Client, baseURL, accessToken, responseID string) (json.RawMessage, error) {
	return fetchLead(ctx, c, "linkedin lead form response", baseURL, accessToken, responseID, func(u *url.URL) http.Header {
		u.Path += "/leadFormResponses/" + responseID
		u.RawQuery = "fields=" + LinkedInFields
		return linkedinHeaders(accessToken)
	})
}

// linkedinGroup is the forms of one owner and lead type: one listing.
type linkedinGroup struct {
	ownerKey, ownerURN, leadType string
	forms                        map[string]bool
}

type linkedin struct {
	c      *outbound.Client
	base   *url.URL
	token  string
	forms  []linkedinForm
	size   int
	now    func() time.Time
	groups []linkedinGroup // looked up on the first page of a run
}

// linkedinCursor is the place in a window: which listing, which offset, and
// the window's end fixed on its first page (so offsets stay meaningful).
type linkedinCursor struct {
	group, start int
	end          int64
}

func (c linkedinCursor) String() string {
	return url.Values{"g": {strconv.Itoa(c.group)}, "s": {strconv.Itoa(c.start)}, "e": {strconv.FormatInt(c.end, 10)}}.Encode()
}

func parseLinkedInCursor(s string) (linkedinCursor, error) {
	q, err := url.ParseQuery(s)
	if err != nil {
		return linkedinCursor{}, fmt.Errorf("pull: linkedin cursor %q: %w", s, err)
	}
	g, err1 := strconv.Atoi(q.Get("g"))
	st, err2 := strconv.Atoi(q.Get("s"))
	e, err3 := strconv.ParseInt(q.Get("e"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || g < 0 || st < 0 || e <= 0 {
		return linkedinCursor{}, fmt.Errorf("pull: linkedin cursor %q is malformed", s)
	}
	return linkedinCursor{group: g, start: st, end: e}, nil
}

// FetchPage lists the responses submitted since since to the configured
// forms: per owner and lead type, one listing paged by offset; responses
// to the owner's other forms are left out.
func (p *linkedin) FetchPage(ctx context.Context, since time.Time, cursor string) (Page, error) {
	if err := p.lookUpForms(ctx); err != nil {
		return Page{}, err
	}
	cur := linkedinCursor{end: p.now().UnixMilli()}
	if cursor != "" {
		var err error
		if cur, err = parseLinkedInCursor(cursor); err != nil {
			return Page{}, err
		}
		if cur.group >= len(p.groups) {
			return Page{}, fmt.Errorf("pull: linkedin cursor %q names listing %d of %d", cursor, cur.group, len(p.groups))
		}
	}
	g := p.groups[cur.group]
	start := int64(0)
	if !since.IsZero() {
		start = max(since.UnixMilli(), 0)
	}
	u := *p.base
	u.Path += "/leadFormResponses"
	u.RawQuery = "q=owner&owner=(" + g.ownerKey + ":" + url.QueryEscape(g.ownerURN) + ")" +
		"&leadType=(leadType:" + g.leadType + ")" +
		"&limitedToTestLeads=false" +
		"&submittedAtTimeRange=(start:" + strconv.FormatInt(start, 10) + ",end:" + strconv.FormatInt(cur.end, 10) + ")" +
		"&fields=" + LinkedInFields +
		"&count=" + strconv.Itoa(p.size) + "&start=" + strconv.Itoa(cur.start)

	var body struct {
		Elements []json.RawMessage `json:"elements"`
		Paging   struct {
			Start int  `json:"start"`
			Count int  `json:"count"`
			Total *int `json:"total"`
		} `json:"paging"`
	}
	if err := p.c.GetJSON(ctx, u.String(), linkedinHeaders(p.token), &body); err != nil {
		return Page{}, fmt.Errorf("pull: linkedin lead form responses: %w", err)
	}
	page := Page{Records: []json.RawMessage{}}
	for _, el := range body.Elements {
		var head struct {
			Form string `json:"versionedLeadGenFormUrn"`
		}
		if err := json.Unmarshal(el, &head); err != nil {
			return Page{}, fmt.Errorf("pull: linkedin lead form response is not an object: %w", err)
		}
		if g.forms[linkedinFormOf(head.Form)] {
			page.Records = append(page.Records, el)
		}
	}
	next := cur.start + len(body.Elements)
	more := len(body.Elements) > 0 && (body.Paging.Total == nil && len(body.Elements) >= p.size ||
		body.Paging.Total != nil && next < *body.Paging.Total)
	switch {
	case more:
		page.Next = linkedinCursor{group: cur.group, start: next, end: cur.end}.String()
	case cur.group+1 < len(p.groups):
		page.Next = linkedinCursor{group: cur.group + 1, start: 0, end: cur.end}.String()
	}
	if page.Next != "" && page.Next == cursor {
		return Page{}, ErrNoProgress
	}
	return page, nil
}

// lookUpForms asks LinkedIn for each configured form's owner and groups
// the forms by owner and lead type, in the order configured.
func (p *linkedin) lookUpForms(ctx context.Context) error {
	if p.groups != nil {
		return nil
	}
	var groups []linkedinGroup
	for _, f := range p.forms {
		u := *p.base
		u.Path += "/leadForms/" + f.id
		var form struct {
			Owner struct {
				SponsoredAccount string `json:"sponsoredAccount"`
				Organization     string `json:"organization"`
			} `json:"owner"`
		}
		if err := p.c.GetJSON(ctx, u.String(), linkedinHeaders(p.token), &form); err != nil {
			return fmt.Errorf("pull: linkedin lead form %s: %w", f.id, err)
		}
		g := linkedinGroup{ownerKey: "sponsoredAccount", ownerURN: form.Owner.SponsoredAccount, leadType: "SPONSORED"}
		if g.ownerURN == "" {
			g = linkedinGroup{ownerKey: "organization", ownerURN: form.Owner.Organization, leadType: "COMPANY"}
		}
		if g.ownerURN == "" {
			return fmt.Errorf("pull: linkedin lead form %s has no owner", f.id)
		}
		if f.leadType != "" {
			g.leadType = f.leadType
		}
		i := 0
		for i < len(groups) && !(groups[i].ownerURN == g.ownerURN && groups[i].leadType == g.leadType) {
			i++
		}
		if i == len(groups) {
			g.forms = map[string]bool{}
			groups = append(groups, g)
		}
		groups[i].forms[f.id] = true
	}
	p.groups = groups
	return nil
}

// linkedinFormOf is the form id of a versioned form URN
// "urn:li:versionedLeadGenForm:(urn:li:leadGenForm:<id>,<version>)": every
// version of a form counts as that form.
func linkedinFormOf(urn string) string {
	const form = "urn:li:leadGenForm:"
	i := strings.Index(urn, form)
	if i < 0 {
		return ""
	}
	rest := urn[i+len(form):]
	if j := strings.IndexAny(rest, ",)"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var _ Puller = (*linkedin)(nil)
