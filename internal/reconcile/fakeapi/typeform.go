package fakeapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NewTypeform serves GET /forms/{formID}/responses like the Typeform
// Responses API: Bearer auth, page_size (1–1000, default 25), since/until
// (inclusive; ISO 8601 or unix seconds), before=<token> (exclusive), newest
// first. As the real API, it rejects sort together with before/after.
func NewTypeform(t testing.TB, formID string, leads []Lead) *Fake {
	f := newFake(t, (*Fake).serveTypeform)
	f.formID = formID
	f.leads = sortLeads(leads)
	return f
}

func typeformError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"code": code, "description": desc})
}

func (f *Fake) serveTypeform(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	formID, token, all := f.formID, f.token, f.leads
	f.mu.Unlock()

	if r.Method != http.MethodGet {
		typeformError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "only GET")
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" || (token != "" && got != token) {
		typeformError(w, http.StatusUnauthorized, "AUTHENTICATION_FAILED", "Authentication credentials not found on the Request Headers")
		return
	}
	if r.URL.Path != "/forms/"+formID+"/responses" {
		typeformError(w, http.StatusNotFound, "FORM_NOT_FOUND", "Non existing form with uid "+r.URL.Path)
		return
	}
	q := r.URL.Query()
	size, ok := pageSize(q.Get("page_size"), 25, 1000)
	if !ok {
		typeformError(w, http.StatusBadRequest, "VALIDATION_ERROR", "page_size must be between 1 and 1000")
		return
	}
	if q.Get("sort") != "" && (q.Has("before") || q.Has("after")) {
		typeformError(w, http.StatusBadRequest, "VALIDATION_ERROR", "sort cannot be used together with before or after")
		return
	}
	if q.Has("after") {
		typeformError(w, http.StatusBadRequest, "VALIDATION_ERROR", "after is not supported by this fake")
		return
	}
	var since, until time.Time
	for name, dst := range map[string]*time.Time{"since": &since, "until": &until} {
		if v := q.Get(name); v != "" {
			tm, ok := parseTypeformTime(v)
			if !ok {
				typeformError(w, http.StatusBadRequest, "VALIDATION_ERROR", name+" is not a valid date")
				return
			}
			*dst = tm
		}
	}
	matching := slices.DeleteFunc(slices.Clone(all), func(l Lead) bool {
		sub := l.Created.Truncate(time.Second)
		return (!since.IsZero() && sub.Before(since)) || (!until.IsZero() && sub.After(until))
	})
	page := matching
	if before := q.Get("before"); before != "" {
		i := slices.IndexFunc(matching, func(l Lead) bool { return l.ID == before })
		if i < 0 {
			typeformError(w, http.StatusBadRequest, "VALIDATION_ERROR", "before token not found")
			return
		}
		page = matching[i+1:]
	}
	page = page[:min(size, len(page))]

	items := make([]json.RawMessage, len(page))
	for i, l := range page {
		items[i] = TypeformResponse(formID, l)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"total_items": len(matching),
		"page_count":  (len(matching) + size - 1) / size,
		"items":       items,
	})
}

// parseTypeformTime accepts what the API documents (unix seconds, or ISO
// 8601 UTC to the second like 2020-03-20T14:00:59) and RFC 3339.
func parseTypeformTime(v string) (time.Time, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), true
	}
	for _, layout := range []string{"2006-01-02T15:04:05", time.RFC3339} {
		if tm, err := time.Parse(layout, v); err == nil {
			return tm.UTC(), true
		}
	}
	return time.Time{}, false
}

func typeformAnswers(l Lead) []map[string]any {
	var answers []map[string]any
	if l.Email != "" {
		answers = append(answers, map[string]any{
			"field": map[string]string{"id": "fEmail01", "type": "email", "ref": "email"},
			"type":  "email", "email": l.Email,
		})
	}
	if l.Phone != "" {
		answers = append(answers, map[string]any{
			"field":        map[string]string{"id": "fPhone01", "type": "phone_number", "ref": "phone"},
			"type":         "phone_number",
			"phone_number": l.Phone,
		})
	}
	return answers
}

func typeformHidden(l Lead) map[string]string {
	hidden := map[string]string{}
	if l.Name != "" {
		hidden["name"] = l.Name
	}
	if l.Company != "" {
		hidden["company"] = l.Company
	}
	return hidden
}

// TypeformResponse is one item of the Responses API list for l.
func TypeformResponse(formID string, l Lead) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"landing_id":    "land-" + l.ID,
		"token":         l.ID,
		"response_id":   l.ID,
		"response_type": "completed",
		"landed_at":     l.Created.Add(-time.Minute).UTC().Format(time.RFC3339),
		"submitted_at":  l.Created.UTC().Format(time.RFC3339),
		"metadata": map[string]string{
			"user_agent": "fakeapi", "platform": "other", "referer": "https://example.typeform.com/to/" + formID,
			"network_id": "net-" + l.ID, "browser": "default",
		},
		"hidden":     typeformHidden(l),
		"calculated": map[string]int{"score": 0},
		"answers":    typeformAnswers(l),
	})
	return b
}

// TypeformWebhook is the (unsigned) webhook body Typeform posts for l.
func TypeformWebhook(formID string, l Lead) []byte {
	b, _ := json.Marshal(map[string]any{
		"event_id":   "evt-" + l.ID,
		"event_type": "form_response",
		"form_response": map[string]any{
			"form_id":      formID,
			"token":        l.ID,
			"landed_at":    l.Created.Add(-time.Minute).UTC().Format(time.RFC3339),
			"submitted_at": l.Created.UTC().Format(time.RFC3339),
			"hidden":       typeformHidden(l),
			"definition": map[string]any{
				"id": formID, "title": "Fake form",
				"fields": []map[string]string{
					{"id": "fEmail01", "ref": "email", "type": "email", "title": "Email"},
					{"id": "fPhone01", "ref": "phone", "type": "phone_number", "title": "Phone"},
				},
			},
			"answers": typeformAnswers(l),
		},
	})
	return b
}
