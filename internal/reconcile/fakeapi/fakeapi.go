// Package fakeapi runs local stand-ins for the senders' list APIs (Typeform
// Responses API, Meta Graph lead retrieval, LinkedIn Lead Sync, a generic cursor list) so the
// reconcile code can be tested end to end without the network. The servers
// follow the vendors' documented request and response shapes, including the
// ways they fail (queued 429/503s, hanging requests).
package fakeapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Lead is one lead as the fake sender knows it.
type Lead struct {
	ID, Email, Name, Phone, Company string
	Created                         time.Time
}

// MakeLeads returns n leads created step apart starting at start, with
// distinct ids and emails, for paging tests.
func MakeLeads(n int, prefix string, start time.Time, step time.Duration) []Lead {
	out := make([]Lead, n)
	for i := range out {
		out[i] = Lead{
			ID:      fmt.Sprintf("%s%06d", prefix, i),
			Email:   fmt.Sprintf("lead%d@%s.test", i, prefix),
			Name:    fmt.Sprintf("Lead %d", i),
			Phone:   fmt.Sprintf("+1555%07d", i),
			Company: "Acme",
			Created: start.Add(time.Duration(i) * step).UTC(),
		}
	}
	return out
}

// Fake is a running fake API. Its URL is the base URL to configure in the
// source's reconcile settings.
type Fake struct {
	URL string
	// RetryAfter is sent with queued 429 responses ("" sends none). Set it
	// before calling FailNext; the default is "2".
	RetryAfter string

	srv *httptest.Server

	mu       sync.Mutex
	formID   string // typeform, meta
	path     string // generic
	leads    []Lead // newest first
	other    []Lead // linkedin: leads of LinkedInOtherForm
	items    []json.RawMessage
	fail     []int
	hang     time.Duration
	requests int
	uris     []string
	token    string // "" = any non-empty token (typeform, meta); none needed (generic)
}

func newFake(t testing.TB, h func(f *Fake, w http.ResponseWriter, r *http.Request)) *Fake {
	f := &Fake{RetryAfter: "2"}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.before(w, r) {
			h(f, w, r)
		}
	}))
	f.URL = f.srv.URL
	t.Cleanup(f.Close)
	return f
}

// Close stops the server; it is also registered with t.Cleanup.
func (f *Fake) Close() { f.srv.Close() }

// FailNext queues statuses answered to the next requests, one each, before
// normal service resumes: FailNext(429, 503, 503).
func (f *Fake) FailNext(statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = append(f.fail, statuses...)
}

// Hang makes every following request wait d (or until the client gives up)
// before being served; Hang(0) ends it.
func (f *Fake) Hang(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang = d
}

// RequireToken makes the fake accept only this access token.
func (f *Fake) RequireToken(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = token
}

// Requests counts every request received, failed ones included.
func (f *Fake) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// RequestURIs lists the request URIs received, in order.
func (f *Fake) RequestURIs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.uris)
}

// Add makes more leads available (e.g. ones whose webhook was "lost").
func (f *Fake) Add(leads ...Lead) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leads = sortLeads(append(f.leads, leads...))
}

// AddItems appends raw items to a generic fake.
func (f *Fake) AddItems(items ...json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(f.items, items...)
}

// sortLeads orders newest first, as both vendors list them; ties by id so
// cursors are stable.
func sortLeads(ls []Lead) []Lead {
	ls = slices.Clone(ls)
	slices.SortStableFunc(ls, func(a, b Lead) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return ls
}

// before does the bookkeeping common to every request; false means it has
// already answered.
func (f *Fake) before(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	f.requests++
	f.uris = append(f.uris, r.URL.RequestURI())
	hang := f.hang
	status := 0
	if len(f.fail) > 0 {
		status, f.fail = f.fail[0], f.fail[1:]
	}
	retryAfter := f.RetryAfter
	f.mu.Unlock()

	if hang > 0 {
		t := time.NewTimer(hang)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return false
		case <-t.C:
		}
	}
	if status != 0 {
		if status == http.StatusTooManyRequests && retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeJSON(w, status, map[string]any{"code": "FAKE_FAILURE", "description": http.StatusText(status)})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// pageSize parses a page size parameter: default when absent, 400 when out of range.
func pageSize(v string, def, maxN int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxN {
		return 0, false
	}
	return n, true
}
