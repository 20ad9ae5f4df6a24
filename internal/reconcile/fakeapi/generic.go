package fakeapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NewGeneric serves GET {path}?since=&cursor=&limit= returning
// {"items":[…],"next_cursor":"…"|null}, in the order given. since (RFC 3339)
// keeps items whose "created_at" is at or after it; items without one always
// match. A Bearer token is only checked after RequireToken.
func NewGeneric(t testing.TB, path string, items []json.RawMessage) *Fake {
	f := newFake(t, (*Fake).serveGeneric)
	f.path = path
	f.items = append([]json.RawMessage(nil), items...)
	return f
}

func (f *Fake) serveGeneric(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	path, token, all := f.path, f.token, f.items
	f.mu.Unlock()

	problem := func(status int, detail string) {
		writeJSON(w, status, map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	}
	if token != "" {
		if got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); got != token {
			problem(http.StatusUnauthorized, "bad token")
			return
		}
	}
	if r.Method != http.MethodGet || r.URL.Path != path {
		problem(http.StatusNotFound, "no such list")
		return
	}
	q := r.URL.Query()
	limit, ok := pageSize(q.Get("limit"), 50, 1000)
	if !ok {
		problem(http.StatusUnprocessableEntity, "limit must be 1..1000")
		return
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		tm, err := time.Parse(time.RFC3339, v)
		if err != nil {
			problem(http.StatusUnprocessableEntity, "since must be RFC 3339")
			return
		}
		since = tm
	}
	var matching []json.RawMessage
	for _, it := range all {
		var rec struct {
			CreatedAt string `json:"created_at"`
		}
		json.Unmarshal(it, &rec)
		if created, err := time.Parse(time.RFC3339, rec.CreatedAt); err == nil && !since.IsZero() && created.Before(since) {
			continue
		}
		matching = append(matching, it)
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 || n > len(matching) {
			problem(http.StatusBadRequest, "invalid cursor")
			return
		}
		start = n
	}
	end := min(start+limit, len(matching))
	var next *string
	if end < len(matching) {
		c := base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
		next = &c
	}
	items := matching[start:end]
	if items == nil {
		items = []json.RawMessage{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}
