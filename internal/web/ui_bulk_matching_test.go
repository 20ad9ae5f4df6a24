package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// jsonCall sends a JSON request with the browser's session cookie.
func (b *browser) jsonCall(method, path, body string, hdr ...string) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// TestUISelectAllMatching: the inbox's "Select all N matching" calls:
// GET /leads/ids lists the filter's ids (a bad filter is a 422), and
// POST /leads/bulk.json on the session changes them once per
// Idempotency-Key even when 20 identical requests race; another tenant's
// id is not_found and unchanged; a cross-origin request is refused.
func TestUISelectAllMatching(t *testing.T) {
	e := uiEnv(t, "ui_bulk_matching")
	a := e.Tenant("acme")
	other := e.Tenant("other")
	var mine []string
	for _, n := range []string{"Dana Scully", "Fox Mulder", "Walter Skinner"} {
		mine = append(mine, createLead(t, e, a.Token, map[string]any{"name": n}).ID)
	}
	theirs := createLead(t, e, other.Token, map[string]any{"name": "Not yours"}).ID
	b := newBrowser(t, e)
	b.login(a.Admin.Email, a.AdminPassword)

	st, raw := b.jsonCall("GET", "/leads/ids?view=all", "")
	var ids struct {
		IDs        []string `json:"ids"`
		NextCursor string   `json:"next_cursor"`
	}
	if err := json.Unmarshal(raw, &ids); st != 200 || err != nil || len(ids.IDs) != 3 || ids.NextCursor != "" {
		t.Fatalf("ids: %d %s", st, raw)
	}
	if st, raw := b.jsonCall("GET", "/leads/ids?view=all&due=someday", ""); st != http.StatusUnprocessableEntity || !strings.Contains(string(raw), "due") {
		t.Fatalf("bad filter: %d %s", st, raw)
	}
	if st, raw := b.jsonCall("GET", "/leads/ids?view=all&status=won", ""); st != 200 || !strings.Contains(string(raw), `"ids":[]`) {
		t.Fatalf("no match: %d %s", st, raw)
	}

	body := `{"ids":["` + strings.Join(append(ids.IDs, theirs), `","`) + `"],"set":{"status":"won"}}`
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = b.jsonCall("POST", "/leads/bulk.json", body, "Idempotency-Key", "bulk-race-0")
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 && s != http.StatusConflict { // 409: the first one was still in progress
			t.Errorf("request %d: %d", i, s)
		}
	}
	for _, id := range mine {
		var status string
		var version int
		row := e.App.DB.QueryRowContext(context.Background(), `SELECT status, version FROM leads WHERE tenant_id = ? AND id = ?`, a.ID, id)
		if err := row.Scan(&status, &version); err != nil || status != "won" || version != 2 {
			t.Errorf("lead %s: %s at version %d (%v), want won at 2: one change for 20 requests", id, status, version, err)
		}
	}
	var status string
	if err := e.App.DB.GetContext(context.Background(), &status, `SELECT status FROM leads WHERE tenant_id = ? AND id = ?`, other.ID, theirs); err != nil || status != "new" {
		t.Fatalf("the other tenant's lead is %q (%v)", status, err)
	}
	st, raw = b.jsonCall("POST", "/leads/bulk.json", body, "Idempotency-Key", "bulk-race-0")
	if st != 200 || !strings.Contains(string(raw), `{"id":"`+theirs+`","status":"not_found"}`) {
		t.Fatalf("replay: %d %s", st, raw)
	}
	if st, _ := b.jsonCall("POST", "/leads/bulk.json", `{"ids":["x"],"set":{}}`, "Idempotency-Key", "bulk-bad"); st != http.StatusUnprocessableEntity {
		t.Errorf("an empty set: %d", st)
	}
	if st, _ := b.jsonCall("POST", "/leads/bulk.json", body, "Idempotency-Key", "bulk-x", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); st != http.StatusForbidden {
		t.Errorf("a cross-origin bulk change: %d, want 403", st)
	}
}
