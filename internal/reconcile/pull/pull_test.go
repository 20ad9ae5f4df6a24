package pull_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"leadpipe/internal/apptest/fakesleep"
	"leadpipe/internal/outbound"
	"leadpipe/internal/reconcile/fakeapi"
	"leadpipe/internal/reconcile/pull"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// newClient makes a client whose waits the recorder records.
func newClient() (*outbound.Client, *fakesleep.Recorder) {
	r := &fakesleep.Recorder{}
	return outbound.New(outbound.Options{AllowPrivate: true, Sleep: r.Sleep, ReadTimeout: 2 * time.Second}), r
}

// newPuller makes the puller of s on a client whose waits r records.
func newPuller(t *testing.T, s pull.Settings) (pull.Puller, *fakesleep.Recorder) {
	t.Helper()
	c, r := newClient()
	p, err := pull.NewPuller(s, c)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// fetchAll pages until the cursor runs out, as the reconcile task does.
func fetchAll(t *testing.T, p pull.Puller, since time.Time) ([]json.RawMessage, int) {
	t.Helper()
	var all []json.RawMessage
	cursor, pages := "", 0
	for {
		page, err := p.FetchPage(context.Background(), since, cursor)
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		all = append(all, page.Records...)
		if page.Next == "" {
			return all, pages
		}
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		cursor = page.Next
	}
}

type typeformRecord struct {
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	FormResponse struct {
		FormID      string            `json:"form_id"`
		Token       string            `json:"token"`
		SubmittedAt time.Time         `json:"submitted_at"`
		Hidden      map[string]string `json:"hidden"`
		Answers     []struct {
			Type        string `json:"type"`
			Email       string `json:"email"`
			PhoneNumber string `json:"phone_number"`
		} `json:"answers"`
	} `json:"form_response"`
}

func TestTypeformPagesThroughThousandLeads(t *testing.T) {
	leads := fakeapi.MakeLeads(1000, "tf", t0, time.Minute)
	fake := fakeapi.NewTypeform(t, "FORM1", leads)
	fake.RequireToken("tf-token")
	p, _ := newPuller(t, pull.Settings{Kind: "typeform", BaseURL: fake.URL, AccessToken: "tf-token", FormID: "FORM1", PageSize: 100})
	recs, pages := fetchAll(t, p, time.Time{})
	if len(recs) != 1000 || pages != 11 || fake.Requests() != 11 {
		t.Fatalf("got %d records in %d pages (%d requests); want 1000 in 10 pages plus the empty one", len(recs), pages, fake.Requests())
	}
	seen := map[string]bool{}
	for i, raw := range recs {
		var rec typeformRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		fr := rec.FormResponse
		if rec.EventID != "reconcile-"+fr.Token || rec.EventType != "form_response" || fr.FormID != "FORM1" {
			t.Fatalf("record %d has the wrong envelope: %s", i, raw)
		}
		want := leads[999-i] // newest first
		if fr.Token != want.ID || !fr.SubmittedAt.Equal(want.Created) || fr.Hidden["name"] != want.Name ||
			len(fr.Answers) != 2 || fr.Answers[0].Email != want.Email || fr.Answers[1].PhoneNumber != want.Phone {
			t.Fatalf("record %d = %s, want lead %+v", i, raw, want)
		}
		seen[fr.Token] = true
	}
	if len(seen) != 1000 {
		t.Errorf("%d distinct tokens", len(seen))
	}
	for _, uri := range fake.RequestURIs() {
		if strings.Contains(uri, "sort=") {
			t.Errorf("sent sort, which Typeform refuses with before: %s", uri)
		}
	}
}

func TestTypeformSince(t *testing.T) {
	leads := fakeapi.MakeLeads(50, "tf", t0, time.Hour)
	fake := fakeapi.NewTypeform(t, "F", leads)
	p, _ := newPuller(t, pull.Settings{Kind: "typeform", BaseURL: fake.URL, AccessToken: "x", FormID: "F", PageSize: 7})
	since := leads[30].Created // inclusive
	recs, _ := fetchAll(t, p, since)
	if len(recs) != 20 {
		t.Fatalf("got %d records since %v, want 20", len(recs), since)
	}
	if uri := fake.RequestURIs()[0]; !strings.Contains(uri, "since=2025-03-02T18%3A00%3A00") {
		t.Errorf("first request %s lacks the documented since form", uri)
	}
}

func TestTypeformRetriesThroughFailures(t *testing.T) {
	fake := fakeapi.NewTypeform(t, "F", fakeapi.MakeLeads(5, "tf", t0, time.Minute))
	fake.FailNext(429, 503, 503)
	p, r := newPuller(t, pull.Settings{Kind: "typeform", BaseURL: fake.URL, AccessToken: "x", FormID: "F"})
	page, err := p.FetchPage(context.Background(), time.Time{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 5 || fake.Requests() != 4 {
		t.Fatalf("got %d records after %d requests", len(page.Records), fake.Requests())
	}
	if slept := r.All(); len(slept) != 3 || slept[0] != 2*time.Second {
		t.Errorf("sleeps %v: want Retry-After 2s honoured first, then two backoffs", slept)
	}
}

func TestTypeformErrors(t *testing.T) {
	fake := fakeapi.NewTypeform(t, "F", nil)
	fake.RequireToken("right")
	p, r := newPuller(t, pull.Settings{Kind: "typeform", BaseURL: fake.URL, AccessToken: "wrong", FormID: "F"})
	_, err := p.FetchPage(context.Background(), time.Time{}, "")
	var se *outbound.StatusError
	if slept := r.All(); !errors.As(err, &se) || se.Status != 401 || len(slept) != 0 {
		t.Fatalf("got %v (sleeps %v), want a 401 not retried", err, slept)
	}
}

type metaLead struct {
	ID          string `json:"id"`
	CreatedTime string `json:"created_time"`
	FieldData   []struct {
		Name   string   `json:"name"`
		Values []string `json:"values"`
	} `json:"field_data"`
}

func TestMetaPagesThroughThousandLeads(t *testing.T) {
	leads := fakeapi.MakeLeads(1000, "9", t0, time.Minute)
	fake := fakeapi.NewMeta(t, "12345", leads)
	fake.RequireToken("graph-token")
	p, _ := newPuller(t, pull.Settings{Kind: "meta", BaseURL: fake.URL, AccessToken: "graph-token", FormID: "12345", PageSize: 100})
	var recs []json.RawMessage
	cursor := ""
	for pages := 1; ; pages++ {
		page, err := p.FetchPage(context.Background(), time.Time{}, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(page.Next, "graph-token") {
			t.Fatalf("cursor leaks the access token: %s", page.Next)
		}
		recs = append(recs, page.Records...)
		if page.Next == "" {
			break
		}
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		cursor = page.Next
	}
	if len(recs) != 1000 || fake.Requests() != 10 {
		t.Fatalf("got %d records in %d requests, want 1000 in 10", len(recs), fake.Requests())
	}
	seen := map[string]bool{}
	for i, raw := range recs {
		var l metaLead
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		want := leads[999-i]
		if l.ID != want.ID || l.CreatedTime != want.Created.Format("2006-01-02T15:04:05-0700") ||
			len(l.FieldData) != 4 || l.FieldData[0].Name != "email" || l.FieldData[0].Values[0] != want.Email {
			t.Fatalf("record %d = %s, want %+v", i, raw, want)
		}
		seen[l.ID] = true
	}
	if len(seen) != 1000 {
		t.Errorf("%d distinct ids", len(seen))
	}
}

func TestMetaSince(t *testing.T) {
	leads := fakeapi.MakeLeads(40, "7", t0, time.Hour)
	fake := fakeapi.NewMeta(t, "55", leads)
	p, _ := newPuller(t, pull.Settings{Kind: "meta", BaseURL: fake.URL, AccessToken: "x", FormID: "55", PageSize: 6})
	recs, _ := fetchAll(t, p, leads[25].Created)
	if len(recs) != 15 {
		t.Fatalf("got %d leads since lead 25, want 15 (inclusive)", len(recs))
	}
	first := fake.RequestURIs()[0]
	if !strings.Contains(first, "filtering=") || !strings.Contains(first, "GREATER_THAN") || !strings.HasPrefix(first, "/v21.0/55/leads?") {
		t.Errorf("first request %s", first)
	}
}

func TestMetaRetriesThroughFailures(t *testing.T) {
	fake := fakeapi.NewMeta(t, "55", fakeapi.MakeLeads(3, "7", t0, time.Minute))
	fake.FailNext(429, 503, 503)
	p, r := newPuller(t, pull.Settings{Kind: "meta", BaseURL: fake.URL, AccessToken: "x", FormID: "55"})
	recs, _ := fetchAll(t, p, time.Time{})
	if slept := r.All(); len(recs) != 3 || fake.Requests() != 4 || slept[0] != 2*time.Second {
		t.Fatalf("%d records, %d requests, sleeps %v", len(recs), fake.Requests(), slept)
	}
}

// A paging link to another host would hand it our access token.
func TestMetaRefusesForeignNext(t *testing.T) {
	var foreignHits atomic.Int32
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreignHits.Add(1) }))
	defer foreign.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":[{"id":"1","created_time":"2024-01-02T03:04:05+0000","field_data":[]}],
			"paging":{"cursors":{"before":"a","after":"b"},"next":"`+foreign.URL+`/v21.0/55/leads?access_token=x&after=b"}}`)
	}))
	defer api.Close()
	p, _ := newPuller(t, pull.Settings{Kind: "meta", BaseURL: api.URL + "/v21.0", AccessToken: "x", FormID: "55"})
	if _, err := p.FetchPage(context.Background(), time.Time{}, ""); !errors.Is(err, pull.ErrForeignNext) {
		t.Fatalf("got %v, want ErrForeignNext", err)
	}
	// A tampered stored cursor is refused too, before any request.
	if _, err := p.FetchPage(context.Background(), time.Time{}, foreign.URL+"/v21.0/55/leads?after=b"); !errors.Is(err, pull.ErrForeignNext) {
		t.Fatalf("cursor: got %v, want ErrForeignNext", err)
	}
	if _, err := p.FetchPage(context.Background(), time.Time{}, api.URL+"/v21.0/me/accounts?after=b"); !errors.Is(err, pull.ErrForeignNext) {
		t.Fatalf("cursor to another edge: got %v, want ErrForeignNext", err)
	}
	if n := foreignHits.Load(); n != 0 {
		t.Errorf("the foreign host was contacted %d times", n)
	}
}

func TestFetchMetaLead(t *testing.T) {
	leads := fakeapi.MakeLeads(3, "44", t0, time.Minute)
	fake := fakeapi.NewMeta(t, "55", leads)
	c, _ := newClient()
	raw, err := pull.FetchMetaLead(context.Background(), c, fake.URL, "x", leads[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	var l metaLead
	if err := json.Unmarshal(raw, &l); err != nil || l.ID != leads[1].ID || len(l.FieldData) != 4 {
		t.Fatalf("got %s (%v)", raw, err)
	}
	_, err = pull.FetchMetaLead(context.Background(), c, fake.URL, "x", "nope")
	var se *outbound.StatusError
	if !errors.As(err, &se) || se.Status != 400 || strings.Contains(err.Error(), "access_token=x") {
		t.Fatalf("unknown lead: %v", err)
	}
	if _, err := pull.FetchMetaLead(context.Background(), c, fake.URL, "x", "../me"); err == nil {
		t.Fatal("a path in the leadgen id was accepted")
	}
}

func TestGenericPagingAndSince(t *testing.T) {
	var items []json.RawMessage
	for i := range 25 {
		b, _ := json.Marshal(map[string]any{"id": i, "email": "g@x.test", "created_at": t0.Add(time.Duration(i) * time.Hour).Format(time.RFC3339)})
		items = append(items, b)
	}
	fake := fakeapi.NewGeneric(t, "/api/leads", items)
	fake.RequireToken("gen")
	p, _ := newPuller(t, pull.Settings{Kind: "generic", BaseURL: fake.URL + "/", AccessToken: "gen", ListPath: "/api/leads", PageSize: 10})
	recs, pages := fetchAll(t, p, time.Time{})
	if len(recs) != 25 || pages != 3 || string(recs[7]) != string(items[7]) {
		t.Fatalf("got %d records in %d pages", len(recs), pages)
	}
	recs, _ = fetchAll(t, p, t0.Add(20*time.Hour))
	if len(recs) != 5 {
		t.Fatalf("since: got %d, want 5", len(recs))
	}
}

func TestHangingAPITimesOut(t *testing.T) {
	fake := fakeapi.NewTypeform(t, "F", fakeapi.MakeLeads(2, "tf", t0, time.Minute))
	fake.Hang(time.Minute)
	var r fakesleep.Recorder
	c := outbound.New(outbound.Options{AllowPrivate: true, Sleep: r.Sleep, ReadTimeout: 100 * time.Millisecond, MaxAttempts: 2})
	p, _ := pull.NewPuller(pull.Settings{Kind: "typeform", BaseURL: fake.URL, AccessToken: "x", FormID: "F"}, c)
	start := time.Now()
	if _, err := p.FetchPage(context.Background(), time.Time{}, ""); err == nil {
		t.Fatal("want a timeout")
	}
	if time.Since(start) > 5*time.Second || fake.Requests() != 2 {
		t.Errorf("took %v with %d requests", time.Since(start), fake.Requests())
	}
	fake.Hang(0)
	if page, err := p.FetchPage(context.Background(), time.Time{}, ""); err != nil || len(page.Records) != 2 {
		t.Fatalf("after the hang: %v", err)
	}
}

func TestNewPullerValidates(t *testing.T) {
	c := outbound.New(outbound.Options{})
	tests := []struct {
		name string
		s    pull.Settings
	}{
		{"unknown kind", pull.Settings{Kind: "standard", BaseURL: "https://x.test"}},
		{"no base", pull.Settings{Kind: "generic", ListPath: "/l"}},
		{"relative base", pull.Settings{Kind: "generic", BaseURL: "x.test", ListPath: "/l"}},
		{"base with query", pull.Settings{Kind: "generic", BaseURL: "https://x.test/?a=1", ListPath: "/l"}},
		{"ftp base", pull.Settings{Kind: "generic", BaseURL: "ftp://x.test", ListPath: "/l"}},
		{"no list path", pull.Settings{Kind: "generic", BaseURL: "https://x.test"}},
		{"list path with ..", pull.Settings{Kind: "generic", BaseURL: "https://x.test", ListPath: "/a/../b"}},
		{"scheme-relative list path", pull.Settings{Kind: "generic", BaseURL: "https://x.test", ListPath: "//evil.test/l"}},
		{"typeform without form", pull.Settings{Kind: "typeform", BaseURL: "https://x.test", AccessToken: "t"}},
		{"typeform form with slash", pull.Settings{Kind: "typeform", BaseURL: "https://x.test", AccessToken: "t", FormID: "a/b"}},
		{"meta without token", pull.Settings{Kind: "meta", BaseURL: "https://x.test", FormID: "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := pull.NewPuller(tt.s, c); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
