// Package pull reads the senders' own list APIs page by page for reconcile.
// Each record comes back in the shape the webhook mapping of its kind already
// accepts, so pulled leads go through the same upsert path as pushed ones.
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

// Settings are a source's reconcile settings.
type Settings struct {
	Kind        string // typeform | meta | linkedin | generic
	BaseURL     string // e.g. https://api.typeform.com, https://graph.facebook.com/v21.0
	AccessToken string
	FormID      string // typeform, meta; linkedin: form ids (ValidateLinkedInForms)
	ListPath    string // generic, e.g. /v1/leads
	PageSize    int    // default 100
}

// Page is one page of records. Next is an opaque cursor for the following
// page, "" when there is none. It never contains the access token, so it may
// be logged or stored.
type Page struct {
	Records []json.RawMessage
	Next    string
}

// Puller fetches one page of records changed since since (ignored when
// cursor is set: the cursor carries the original query).
type Puller interface {
	FetchPage(ctx context.Context, since time.Time, cursor string) (Page, error)
}

// ErrForeignNext means a paging link pointed away from the configured API
// host; following it would send the access token to whoever answered.
var ErrForeignNext = errors.New("pull: next page link leaves the configured API host")

// ErrNoProgress means the API handed back the cursor we sent; following it
// would loop forever.
var ErrNoProgress = errors.New("pull: next page cursor did not advance")

const defaultPageSize = 100

// Vendors' documented maxima: Typeform page_size ≤ 1000; Graph has no hard
// documented limit on leads, but large pages time out, so we stay moderate.
// LinkedIn's lead form responses are asked for in pages of at most 100.
var maxPageSize = map[string]int{"typeform": 1000, "meta": 500, "linkedin": 100, "generic": 1000}

// idPattern keeps form and lead ids to what the vendors issue, so an id can
// never change the request path.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// NewPuller checks s and returns the puller for its kind.
func NewPuller(s Settings, c *outbound.Client) (Puller, error) {
	if c == nil {
		return nil, errors.New("pull: nil outbound client")
	}
	maxN, ok := maxPageSize[s.Kind]
	if !ok {
		return nil, fmt.Errorf("pull: source kind %q has no pull API (want typeform, meta, linkedin or generic)", s.Kind)
	}
	base, err := parseBase(s.BaseURL)
	if err != nil {
		return nil, err
	}
	size := s.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	size = min(size, maxN)

	switch s.Kind {
	case "linkedin":
		forms, err := parseLinkedInForms(s.FormID)
		if err != nil {
			return nil, err
		}
		if s.AccessToken == "" {
			return nil, errors.New("pull: linkedin needs an access token")
		}
		return &linkedin{c: c, base: base, token: s.AccessToken, forms: forms, size: size, now: time.Now}, nil
	case "typeform", "meta":
		if !idPattern.MatchString(s.FormID) {
			return nil, fmt.Errorf("pull: %s form id %q is missing or malformed", s.Kind, s.FormID)
		}
		if s.AccessToken == "" {
			return nil, fmt.Errorf("pull: %s needs an access token", s.Kind)
		}
		if s.Kind == "typeform" {
			return &typeform{c: c, base: base, token: s.AccessToken, formID: s.FormID, size: size}, nil
		}
		return &meta{c: c, base: base, token: s.AccessToken, formID: s.FormID, size: size}, nil
	default:
		list, err := listURL(base, s.ListPath)
		if err != nil {
			return nil, err
		}
		return &generic{c: c, list: list, token: s.AccessToken, size: size}, nil
	}
}

// parseBase accepts an absolute http(s) URL without query or fragment; a
// trailing slash is dropped. Whether the host may be reached is the outbound
// guard's call, at dial time.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("pull: base URL %q must be an absolute http(s) URL", outbound.RedactURL(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("pull: base URL %q must not carry a query, fragment or credentials", outbound.RedactURL(raw))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

func listURL(base *url.URL, listPath string) (*url.URL, error) {
	if !strings.HasPrefix(listPath, "/") || strings.HasPrefix(listPath, "//") {
		return nil, fmt.Errorf("pull: list path %q must start with a single /", listPath)
	}
	ref, err := url.Parse(listPath)
	if err != nil || ref.Fragment != "" {
		return nil, fmt.Errorf("pull: list path %q is not a valid path", listPath)
	}
	for _, seg := range strings.Split(ref.Path, "/") {
		if seg == ".." {
			return nil, fmt.Errorf("pull: list path %q must not contain ..", listPath)
		}
	}
	u := *base
	u.Path = base.Path + ref.Path
	u.RawQuery = ref.RawQuery
	return &u, nil
}

func bearer(token string) http.Header {
	if token == "" {
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + token}}
}

// --- Typeform -------------------------------------------------------------

type typeform struct {
	c             *outbound.Client
	base          *url.URL
	token, formID string
	size          int
}

// FetchPage lists responses newest first. Typeform refuses sort together with
// before, and its default order is already newest first, so no sort is sent.
// since goes in the documented "UTC to the second" form.
func (p *typeform) FetchPage(ctx context.Context, since time.Time, cursor string) (Page, error) {
	u := *p.base
	u.Path += "/forms/" + p.formID + "/responses"
	q := url.Values{"page_size": {strconv.Itoa(p.size)}}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format("2006-01-02T15:04:05"))
	}
	if cursor != "" {
		q.Set("before", cursor)
	}
	u.RawQuery = q.Encode()

	var body struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := p.c.GetJSON(ctx, u.String(), bearer(p.token), &body); err != nil {
		return Page{}, fmt.Errorf("pull: typeform responses: %w", err)
	}
	page := Page{Records: make([]json.RawMessage, 0, len(body.Items))}
	formID, _ := json.Marshal(p.formID)
	var last string
	for _, item := range body.Items {
		var token string
		if err := json.Unmarshal(item["token"], &token); err != nil || token == "" {
			return Page{}, errors.New("pull: typeform response item without a token")
		}
		if _, ok := item["form_id"]; !ok {
			item["form_id"] = formID // the webhook's form_response carries it; the list item does not
		}
		rec, err := json.Marshal(map[string]any{
			"event_id":      "reconcile-" + token,
			"event_type":    "form_response",
			"form_response": item,
		})
		if err != nil {
			return Page{}, fmt.Errorf("pull: typeform item %s: %w", token, err)
		}
		page.Records = append(page.Records, rec)
		last = token
	}
	// Typeform signals the end with an empty page.
	if last != "" {
		if last == cursor {
			return Page{}, ErrNoProgress
		}
		page.Next = last
	}
	return page, nil
}

// --- Meta Graph -------------------------------------------------------------

type meta struct {
	c             *outbound.Client
	base          *url.URL
	token, formID string
	size          int
}

// FetchPage lists a form's leads. The first page filters on time_created;
// later pages follow Graph's paging.next, which must stay on the configured
// host. The cursor is that link without its access_token, re-added here.
func (p *meta) FetchPage(ctx context.Context, since time.Time, cursor string) (Page, error) {
	var u *url.URL
	if cursor == "" {
		u = new(url.URL)
		*u = *p.base
		u.Path += "/" + p.formID + "/leads"
		q := url.Values{"limit": {strconv.Itoa(p.size)}}
		if !since.IsZero() {
			// GREATER_THAN is strict; one second less keeps since inclusive like the other kinds.
			filter, _ := json.Marshal([]map[string]any{{"field": "time_created", "operator": "GREATER_THAN", "value": since.Unix() - 1}})
			q.Set("filtering", string(filter))
		}
		u.RawQuery = q.Encode()
	} else {
		var err error
		if u, err = p.sameHost(cursor); err != nil {
			return Page{}, err
		}
	}
	q := u.Query()
	q.Set("access_token", p.token)
	u.RawQuery = q.Encode()

	var body struct {
		Data   []json.RawMessage `json:"data"`
		Paging struct {
			Next string `json:"next"`
		} `json:"paging"`
	}
	if err := p.c.GetJSON(ctx, u.String(), nil, &body); err != nil {
		return Page{}, fmt.Errorf("pull: meta leads: %w", err)
	}
	page := Page{Records: body.Data}
	if page.Records == nil {
		page.Records = []json.RawMessage{}
	}
	if body.Paging.Next != "" && len(body.Data) > 0 {
		next, err := p.sameHost(body.Paging.Next)
		if err != nil {
			return Page{}, err
		}
		nq := next.Query()
		nq.Del("access_token")
		next.RawQuery = nq.Encode()
		page.Next = next.String()
		if page.Next == cursor {
			return Page{}, ErrNoProgress
		}
	}
	return page, nil
}

// sameHost parses a paging link and refuses one that leaves the configured
// scheme and host (it would carry our access token elsewhere) or this form's
// leads edge (a stored cursor must not turn into some other Graph call).
func (p *meta) sameHost(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("pull: meta paging link is not a URL: %w", ErrForeignNext)
	}
	if !strings.EqualFold(u.Scheme, p.base.Scheme) || !strings.EqualFold(u.Host, p.base.Host) || u.User != nil {
		return nil, fmt.Errorf("%w: %s://%s is not %s", ErrForeignNext, u.Scheme, u.Host, p.base.Host)
	}
	// Graph may spell the version differently in its links, so only the tail is pinned.
	if !strings.HasSuffix(u.Path, "/"+p.formID+"/leads") {
		return nil, fmt.Errorf("%w: path %s is not form %s's leads", ErrForeignNext, u.Path, p.formID)
	}
	return u, nil
}

// FetchMetaLead fetches one lead by its leadgen id (GET /{leadgen_id}), to
// fill in the fields a Meta webhook does not carry. The object is returned as
// Graph sends it: {"id","created_time","field_data",…}.
func FetchMetaLead(ctx context.Context, c *outbound.Client, baseURL, accessToken, leadgenID string) (json.RawMessage, error) {
	return fetchLead(ctx, c, "meta lead", baseURL, accessToken, leadgenID, func(u *url.URL) http.Header {
		u.Path += "/" + leadgenID
		u.RawQuery = url.Values{"access_token": {accessToken}}.Encode()
		return nil
	})
}

// fetchLead GETs one lead object by its id from a sender's API: at sets
// the URL's path and query and returns the request's headers; what names
// the object in errors.
func fetchLead(ctx context.Context, c *outbound.Client, what, baseURL, accessToken, id string, at func(*url.URL) http.Header) (json.RawMessage, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("pull: malformed %s id %q", what, id)
	}
	if accessToken == "" {
		return nil, fmt.Errorf("pull: %s needs an access token", what)
	}
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	u := *base
	header := at(&u)
	var lead json.RawMessage
	if err := c.GetJSON(ctx, u.String(), header, &lead); err != nil {
		return nil, fmt.Errorf("pull: %s %s: %w", what, id, err)
	}
	if len(lead) == 0 || lead[0] != '{' {
		return nil, fmt.Errorf("pull: %s %s: response is not an object", what, id)
	}
	return lead, nil
}

// --- Generic ----------------------------------------------------------------

type generic struct {
	c     *outbound.Client
	list  *url.URL
	token string
	size  int
}

// FetchPage reads {"items":[…],"next_cursor":…}; items are returned as is.
func (p *generic) FetchPage(ctx context.Context, since time.Time, cursor string) (Page, error) {
	u := *p.list
	q := u.Query()
	q.Set("limit", strconv.Itoa(p.size))
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u.RawQuery = q.Encode()

	var body struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor *string           `json:"next_cursor"`
	}
	if err := p.c.GetJSON(ctx, u.String(), bearer(p.token), &body); err != nil {
		return Page{}, fmt.Errorf("pull: generic list: %w", err)
	}
	page := Page{Records: body.Items}
	if page.Records == nil {
		page.Records = []json.RawMessage{}
	}
	if body.NextCursor != nil && *body.NextCursor != "" {
		if *body.NextCursor == cursor {
			return Page{}, ErrNoProgress
		}
		page.Next = *body.NextCursor
	}
	return page, nil
}

var (
	_ Puller = (*typeform)(nil)
	_ Puller = (*meta)(nil)
	_ Puller = (*generic)(nil)
)
