package fakeapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func do(t *testing.T, url string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestTypeformFake(t *testing.T) {
	f := NewTypeform(t, "F", MakeLeads(3, "tf", t0, time.Minute))
	if code, _, _ := do(t, f.URL+"/forms/F/responses"); code != 401 {
		t.Errorf("no token: %d", code)
	}
	code, _, body := do(t, f.URL+"/forms/F/responses?page_size=2", "Authorization", "Bearer x")
	var resp struct {
		TotalItems int `json:"total_items"`
		PageCount  int `json:"page_count"`
		Items      []struct {
			Token string `json:"token"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(body), &resp); code != 200 || resp.TotalItems != 3 || resp.PageCount != 2 ||
		len(resp.Items) != 2 || resp.Items[0].Token != "tf000002" {
		t.Fatalf("%d %s", code, body)
	}
	if code, _, _ := do(t, f.URL+"/forms/F/responses?before=tf000002&sort=submitted_at,desc", "Authorization", "Bearer x"); code != 400 {
		t.Errorf("sort with before: %d, want 400 like Typeform", code)
	}
	if code, _, _ := do(t, f.URL+"/forms/OTHER/responses", "Authorization", "Bearer x"); code != 404 {
		t.Errorf("other form: %d", code)
	}
}

func TestFailNextAndRequests(t *testing.T) {
	f := NewGeneric(t, "/l", []json.RawMessage{json.RawMessage(`{"id":1}`)})
	f.RetryAfter = "7"
	f.FailNext(429, 503)
	code, h, _ := do(t, f.URL+"/l")
	if code != 429 || h.Get("Retry-After") != "7" {
		t.Errorf("first: %d %q", code, h.Get("Retry-After"))
	}
	if code, h, _ := do(t, f.URL+"/l"); code != 503 || h.Get("Retry-After") != "" {
		t.Errorf("second: %d", code)
	}
	if code, _, body := do(t, f.URL+"/l"); code != 200 || !strings.Contains(body, `"next_cursor":null`) {
		t.Errorf("third: %d %s", code, body)
	}
	if f.Requests() != 3 {
		t.Errorf("requests %d", f.Requests())
	}
}

func TestMetaFake(t *testing.T) {
	leads := MakeLeads(3, "1", t0, time.Minute)
	f := NewMeta(t, "9", leads)
	if code, _, body := do(t, f.URL+"/9/leads"); code != 400 || !strings.Contains(body, "OAuthException") {
		t.Errorf("no token: %d %s", code, body)
	}
	code, _, body := do(t, f.URL+"/9/leads?access_token=x&limit=2")
	var resp struct {
		Data   []json.RawMessage     `json:"data"`
		Paging struct{ Next string } `json:"paging"`
	}
	if json.Unmarshal([]byte(body), &resp); code != 200 || len(resp.Data) != 2 || !strings.HasPrefix(resp.Paging.Next, f.URL+"/9/leads?") {
		t.Fatalf("%d %s", code, body)
	}
	code, _, body = do(t, resp.Paging.Next)
	resp.Paging.Next = ""
	if json.Unmarshal([]byte(body), &resp); code != 200 || len(resp.Data) != 1 || resp.Paging.Next != "" {
		t.Fatalf("page 2: %d %s", code, body)
	}
	if code, _, body := do(t, f.URL+"/"+leads[0].ID+"?access_token=x"); code != 200 || !strings.Contains(body, `"created_time":"2025-03-01T12:00:00+0000"`) {
		t.Errorf("single lead: %d %s", code, body)
	}
	var hook struct {
		Entry []struct {
			Changes []struct {
				Value struct {
					LeadgenID string `json:"leadgen_id"`
				} `json:"value"`
			} `json:"changes"`
		} `json:"entry"`
	}
	if err := json.Unmarshal(MetaWebhook("p1", "9", leads...), &hook); err != nil || len(hook.Entry[0].Changes) != 3 ||
		hook.Entry[0].Changes[2].Value.LeadgenID != leads[2].ID {
		t.Errorf("webhook body: %v %+v", err, hook)
	}
}
