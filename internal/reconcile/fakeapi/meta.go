package fakeapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// MetaGraphVersion is the version path the Meta fake's URL carries, like
// https://graph.facebook.com/v21.0.
const MetaGraphVersion = "v21.0"

// NewMeta serves the Graph API lead retrieval endpoints: GET
// /{formID}/leads?access_token=&limit=&filtering=&after= (newest first,
// cursor paging, paging.next a full URL carrying the access token as Graph
// does) and GET /{leadgen_id}?access_token=. f.URL includes the version path.
func NewMeta(t testing.TB, formID string, leads []Lead) *Fake {
	f := newFake(t, (*Fake).serveMeta)
	f.formID = formID
	f.leads = sortLeads(leads)
	f.URL = f.srv.URL + "/" + MetaGraphVersion
	return f
}

var graphVersion = regexp.MustCompile(`^/v\d+\.\d+(/|$)`)

func graphError(w http.ResponseWriter, status int, code int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "code": code, "fbtrace_id": "FakeTrace",
	}})
}

func (f *Fake) serveMeta(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	formID, token, all := f.formID, f.token, f.leads
	f.mu.Unlock()

	if r.Method != http.MethodGet {
		graphError(w, http.StatusBadRequest, 100, "GraphMethodException", "Unsupported request method")
		return
	}
	q := r.URL.Query()
	got := q.Get("access_token")
	if got == "" {
		graphError(w, http.StatusBadRequest, 104, "OAuthException", "An access token is required to request this resource.")
		return
	}
	if token != "" && got != token {
		graphError(w, http.StatusBadRequest, 190, "OAuthException", "Invalid OAuth access token - Cannot parse access token")
		return
	}
	path := r.URL.Path
	if m := graphVersion.FindString(path); m != "" {
		path = "/" + strings.TrimPrefix(path, m)
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 2 && parts[1] == "leads" && parts[0] == formID:
		f.serveMetaLeads(w, r, q, all)
	case len(parts) == 1 && parts[0] != "":
		i := slices.IndexFunc(all, func(l Lead) bool { return l.ID == parts[0] })
		if i < 0 {
			graphError(w, http.StatusBadRequest, 100, "GraphMethodException",
				fmt.Sprintf("Unsupported get request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", parts[0]))
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Write(MetaLead(all[i]))
	default:
		graphError(w, http.StatusBadRequest, 100, "GraphMethodException", "Unsupported get request.")
	}
}

type graphFilter struct {
	Field    string          `json:"field"`
	Operator string          `json:"operator"`
	Value    json.RawMessage `json:"value"`
}

func (f *Fake) serveMetaLeads(w http.ResponseWriter, r *http.Request, q url.Values, all []Lead) {
	limit, ok := pageSize(q.Get("limit"), 25, 5000)
	if !ok {
		graphError(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Invalid limit")
		return
	}
	matching := slices.Clone(all)
	if raw := q.Get("filtering"); raw != "" {
		var filters []graphFilter
		if err := json.Unmarshal([]byte(raw), &filters); err != nil {
			graphError(w, http.StatusBadRequest, 100, "OAuthException", "(#100) filtering must be an array of objects")
			return
		}
		for _, fl := range filters {
			var v json.Number
			if err := json.Unmarshal(fl.Value, &v); err != nil {
				var s string
				if json.Unmarshal(fl.Value, &s) != nil {
					graphError(w, http.StatusBadRequest, 100, "OAuthException", "(#100) invalid filter value")
					return
				}
				v = json.Number(s)
			}
			ts, err := v.Int64()
			if fl.Field != "time_created" || err != nil || (fl.Operator != "GREATER_THAN" && fl.Operator != "LESS_THAN") {
				graphError(w, http.StatusBadRequest, 100, "OAuthException", "(#100) unsupported filter "+fl.Field+" "+fl.Operator)
				return
			}
			matching = slices.DeleteFunc(matching, func(l Lead) bool {
				if fl.Operator == "GREATER_THAN" {
					return l.Created.Unix() <= ts
				}
				return l.Created.Unix() >= ts
			})
		}
	}
	start := 0
	if after := q.Get("after"); after != "" {
		id, err := base64.RawURLEncoding.DecodeString(after)
		i := slices.IndexFunc(matching, func(l Lead) bool { return l.ID == string(id) })
		if err != nil || i < 0 {
			graphError(w, http.StatusBadRequest, 100, "OAuthException", "(#100) Invalid cursor")
			return
		}
		start = i + 1
	}
	page := matching[start:min(start+limit, len(matching))]

	data := make([]json.RawMessage, len(page))
	for i, l := range page {
		data[i] = MetaLead(l)
	}
	resp := map[string]any{"data": data}
	if len(page) > 0 {
		cur := func(l Lead) string { return base64.RawURLEncoding.EncodeToString([]byte(l.ID)) }
		paging := map[string]any{"cursors": map[string]string{"before": cur(page[0]), "after": cur(page[len(page)-1])}}
		if start+len(page) < len(matching) {
			next := url.Values{}
			for k, v := range q {
				next[k] = v
			}
			next.Set("after", cur(page[len(page)-1]))
			paging["next"] = f.srv.URL + r.URL.Path + "?" + next.Encode()
		}
		resp["paging"] = paging
	}
	writeJSON(w, http.StatusOK, resp)
}

// MetaLead is the Graph API lead object for l, as GET /{leadgen_id} and the
// leads edge return it.
func MetaLead(l Lead) json.RawMessage {
	type field struct {
		Name   string   `json:"name"`
		Values []string `json:"values"`
	}
	fields := []field{}
	for _, kv := range [][2]string{{"email", l.Email}, {"full_name", l.Name}, {"phone_number", l.Phone}, {"company_name", l.Company}} {
		if kv[1] != "" {
			fields = append(fields, field{kv[0], []string{kv[1]}})
		}
	}
	b, _ := json.Marshal(map[string]any{
		"id":           l.ID,
		"created_time": l.Created.UTC().Format("2006-01-02T15:04:05-0700"),
		"field_data":   fields,
	})
	return b
}

// MetaWebhook is the (unsigned) leadgen webhook body Meta posts for leads of
// one page and form.
func MetaWebhook(pageID, formID string, leads ...Lead) []byte {
	changes := make([]map[string]any, len(leads))
	for i, l := range leads {
		changes[i] = map[string]any{
			"field": "leadgen",
			"value": map[string]any{
				"leadgen_id":   l.ID,
				"page_id":      pageID,
				"form_id":      formID,
				"created_time": l.Created.Unix(),
			},
		}
	}
	b, _ := json.Marshal(map[string]any{
		"object": "page",
		"entry":  []map[string]any{{"id": pageID, "time": time.Now().Unix(), "changes": changes}},
	})
	return b
}
