package web_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"leadpipe/internal/apptest"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/imports"
)

type importJSON struct {
	ID         string            `json:"id"`
	State      string            `json:"state"`
	Rows       int               `json:"rows"`
	Processed  int               `json:"processed"`
	Progress   float64           `json:"progress"`
	New        int               `json:"new"`
	Updated    int               `json:"updated"`
	Unchanged  int               `json:"unchanged"`
	Errors     int               `json:"errors"`
	SourceID   string            `json:"source_id"`
	NaturalKey string            `json:"natural_key"`
	Mapping    map[string]string `json:"mapping"`
	FinishedAt *time.Time        `json:"finished_at"`
}

func newImportEnv(t *testing.T, prefix string, worker bool) *apptest.Env {
	e := apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisLeads, Worker: worker})
	e.App.Web.Imports.BatchSize = 50 // several batches per file
	return e
}

func uploadCSV(t *testing.T, e *apptest.Env, token, key string, body []byte, query string) apptest.Response {
	t.Helper()
	path := "/api/v1/imports"
	if query != "" {
		path += "?" + query
	}
	h := []string{"Content-Type", "text/csv"}
	if key != "" {
		h = append(h, "Idempotency-Key", key)
	}
	return e.Do("POST", path, token, body, h...)
}

func startImport(t *testing.T, e *apptest.Env, token, key string, body []byte, query string) importJSON {
	t.Helper()
	r := uploadCSV(t, e, token, key, body, query)
	if r.Status != 202 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	var im importJSON
	r.JSON(t, &im)
	return im
}

func waitImport(t *testing.T, e *apptest.Env, token, id string) importJSON {
	t.Helper()
	var im importJSON
	apptest.Eventually(t, 60*time.Second, "import "+id+" to finish", func() bool {
		r := e.Do("GET", "/api/v1/imports/"+id, token, nil)
		if r.Status != 200 {
			t.Fatalf("get import: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &im)
		return im.State != "running"
	})
	if im.State != "succeeded" {
		t.Fatalf("import %s: %+v", id, im)
	}
	return im
}

// leadsChecksum is a checksum of every row of leads: equal before and after
// means no row was rewritten.
func leadsChecksum(t testing.TB, e *apptest.Env) string {
	t.Helper()
	var rows []struct {
		Table    string `db:"Table"`
		Checksum *int64 `db:"Checksum"`
	}
	if err := e.App.DB.Select(&rows, `CHECKSUM TABLE leads`); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(*rows[0].Checksum)
}

func countSourceLeads(t *testing.T, e *apptest.Env, tenantID, sourceID string) int {
	t.Helper()
	var n int
	if err := e.App.DB.Get(&n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND source_id = ?`, tenantID, sourceID); err != nil {
		t.Fatal(err)
	}
	return n
}

// peopleCSV is a clean file of n people (BOM, CRLF, a quoted field).
func peopleCSV(n int) []byte {
	var b bytes.Buffer
	b.WriteString("\uFEFFEmail,First Name,Last Name,Phone,Company,Tags,Ref\r\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "Person%04d@Example.test,Ann%d,Lee,+1 555 %04d,\"Acme, Inc.\",\"vip,csv\",R%d\r\n", i, i, i, i)
	}
	return b.Bytes()
}

// An import applies good rows through the import source, refuses bad ones
// with a reason, is one import per Idempotency-Key, re-imports as
// unchanged without rewriting a lead, and is another tenant's 404.
func TestImportCSV(t *testing.T) {
	e := newImportEnv(t, "web_import", true)
	a, b := e.Tenant("acme"), e.Tenant("other")

	var f bytes.Buffer
	f.WriteString("\uFEFFemail,name,phone,company,tags,note\n")
	for i := 0; i < 120; i++ {
		fmt.Fprintf(&f, "p%03d@acme.test,Person %d,+44 20 7946 %04d,Acme,\"a, b\",\"line one\nline two\"\n", i, i, i)
	}
	f.WriteString("ragged@acme.test,Too,Few\n")                                    // row 121: ragged
	f.WriteString("not-an-email,Bad Email,,,,\n")                                  // row 122
	f.WriteString("badphone@acme.test,Bad Phone,call me maybe,,,\n")               // row 123
	f.WriteString(",No Key,,,,\n")                                                 // row 124
	f.WriteString("P000@ACME.test,Person 0 renamed,,,,\n")                         // row 125: same lead as row 1, updated
	f.WriteString("=cmd@acme.test,\"=HYPERLINK(\"\"x\"\")\",+1 555 0100,Evil,,\n") // row 126: a valid email, a formula name
	body := f.Bytes()

	im := startImport(t, e, a.Token, "imp-1", body, "filename=people.csv")
	if im.Rows != 126 || im.NaturalKey != "email" || im.Mapping["note"] != "payload" {
		t.Fatalf("accepted import: %+v", im)
	}
	// The same key again: the same import, replayed.
	r := uploadCSV(t, e, a.Token, "imp-1", body, "filename=people.csv")
	var again importJSON
	r.JSON(t, &again)
	if r.Status != 202 || again.ID != im.ID || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("same key: %d %s", r.Status, r.Body)
	}
	// The same key with another file: 422.
	if r := uploadCSV(t, e, a.Token, "imp-1", peopleCSV(3), ""); r.Status != 422 {
		t.Fatalf("same key, other file: %d %s", r.Status, r.Body)
	}

	done := waitImport(t, e, a.Token, im.ID)
	if done.New != 121 || done.Updated != 1 || done.Unchanged != 0 || done.Errors != 4 || done.Processed != 126 || done.Progress != 1 {
		t.Fatalf("counts: %+v", done)
	}
	if n := countSourceLeads(t, e, a.ID, done.SourceID); n != 121 {
		t.Fatalf("%d leads, want 121", n)
	}
	var lead struct {
		Name, Phone, Company string
		Tags                 string
	}
	if err := e.App.DB.Get(&lead, `SELECT name, phone, company, tags FROM leads WHERE tenant_id = ? AND source_ref = ?`, a.ID, "p000@acme.test"); err != nil {
		t.Fatal(err)
	}
	if lead.Name != "Person 0 renamed" || lead.Phone != "+44 20 7946 0000" || !strings.Contains(lead.Tags, "a") {
		t.Fatalf("lead: %+v", lead)
	}

	// The refused rows, with reasons, as CSV.
	r = e.Do("GET", "/api/v1/imports/"+im.ID+"/errors", a.Token, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("errors: %d %s", r.Status, r.Body)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("errors CSV: %v %q", err, rows)
	}
	want := map[string]string{"121": "fields", "122": "email", "123": "phone", "124": "natural key"}
	for _, row := range rows[1:] {
		if !strings.Contains(row[1], want[row[0]]) {
			t.Fatalf("row %s: reason %q", row[0], row[1])
		}
	}
	if rows[1][2] != "ragged@acme.test,Too,Few" {
		t.Fatalf("raw row: %q", rows[1][2])
	}
	if r := e.Do("GET", "/api/v1/imports/"+im.ID+"/errors.csv", a.Token, nil); r.Status != 200 {
		t.Fatalf("errors.csv: %d", r.Status)
	}

	// Re-import the same file: every good row unchanged, no lead rewritten.
	before := leadsChecksum(t, e)
	re := waitImport(t, e, a.Token, startImport(t, e, a.Token, "imp-2", body, "").ID)
	// Row 1 and row 125 are one lead: re-applying row 1 changes its name
	// back, row 125 again after it; both are "updated" then. Everything
	// else is unchanged.
	if re.New != 0 || re.Unchanged+re.Updated != 122 || re.Errors != 4 {
		t.Fatalf("re-import: %+v", re)
	}
	clean := peopleCSV(80)
	first := waitImport(t, e, a.Token, startImport(t, e, a.Token, "imp-3", clean, "").ID)
	if first.New != 80 {
		t.Fatalf("clean import: %+v", first)
	}
	before = leadsChecksum(t, e)
	second := waitImport(t, e, a.Token, startImport(t, e, a.Token, "imp-4", clean, "").ID)
	if second.Unchanged != 80 || second.New != 0 || second.Updated != 0 {
		t.Fatalf("clean re-import: %+v", second)
	}
	if after := leadsChecksum(t, e); after != before {
		t.Fatalf("a re-import rewrote leads: checksum %s → %s", before, after)
	}

	// The import source takes no webhooks: the same 404 as an unknown source.
	hook := e.Do("POST", "/hooks/acme/import", "", map[string]any{"id": "x"})
	unknown := e.Do("POST", "/hooks/acme/no-such-source", "", map[string]any{"id": "x"})
	if hook.Status != 404 || unknown.Status != 404 || string(hook.Body) != string(unknown.Body) {
		t.Fatalf("webhook to the import source: %d %s (unknown source: %d %s)", hook.Status, hook.Body, unknown.Status, unknown.Body)
	}

	// Another tenant: 404 on every route of the import.
	for _, p := range []string{"/api/v1/imports/" + im.ID, "/api/v1/imports/" + im.ID + "/errors", "/api/v1/imports/" + im.ID + "/errors.csv"} {
		if r := e.Do("GET", p, b.Token, nil); r.Status != 404 {
			t.Fatalf("%s as another tenant: %d", p, r.Status)
		}
	}
	var list struct{ Items []importJSON }
	e.Do("GET", "/api/v1/imports", b.Token, nil).JSON(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("another tenant lists %d imports", len(list.Items))
	}
	// The audit log has the import.
	var audited int
	if err := e.App.DB.Get(&audited, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'leads.imported' AND target_id = ?`, a.ID, im.ID); err != nil || audited != 1 {
		t.Fatalf("audit: %d %v", audited, err)
	}
}

// A mapping and a natural key column other than email.
func TestImportMappingAndNaturalKey(t *testing.T) {
	e := newImportEnv(t, "web_import_map", true)
	a := e.Tenant("acme")
	body := []byte("Customer No,Mail,Who,Secret\n1,a@x.test,Ann,s1\n2,a@x.test,Bob,s2\n")
	q := "natural_key=customer+no&mapping=" + url.QueryEscape(`{"Mail":"email","Who":"name","secret":"ignore"}`)
	im := waitImport(t, e, a.Token, startImport(t, e, a.Token, "m-1", body, q).ID)
	if im.New != 2 || im.NaturalKey != "Customer No" || im.Mapping["Secret"] != "ignore" {
		t.Fatalf("import: %+v", im)
	}
	var payloads []string
	if err := e.App.DB.Select(&payloads, `SELECT payload FROM leads WHERE tenant_id = ? ORDER BY source_ref`, a.ID); err != nil {
		t.Fatal(err)
	}
	if len(payloads) != 2 || strings.Contains(payloads[0], "s1") || !strings.Contains(payloads[0], "Ann") {
		t.Fatalf("payloads: %q", payloads)
	}
	for _, c := range []struct{ q, field string }{
		{"natural_key=nope", "natural_key"},
		{"mapping=" + url.QueryEscape(`{"Mail":"phonebook"}`), "mapping"},
		{"mapping=" + url.QueryEscape(`{"Who":"email"}`), "mapping"}, // two email columns
		{"mapping=notjson", "mapping"},
	} {
		r := uploadCSV(t, e, a.Token, "bad-"+c.field+c.q, body, c.q)
		if r.Status != 422 || !strings.Contains(string(r.Body), c.field) {
			t.Fatalf("%s: %d %s", c.q, r.Status, r.Body)
		}
	}
	// No email column and no natural key: 422 naming natural_key.
	if r := uploadCSV(t, e, a.Token, "nokey", []byte("id,name\n1,Ann\n"), ""); r.Status != 422 || !strings.Contains(string(r.Body), "natural_key") {
		t.Fatalf("no key column: %d %s", r.Status, r.Body)
	}
}

// Ten uploads of one file at once, each with its own key: one lead per
// row, and "new" counted once over all of them.
func TestImportConcurrentUploads(t *testing.T) {
	e := newImportEnv(t, "web_import_conc", true)
	a := e.Tenant("acme")
	const rows = 300
	body := peopleCSV(rows)
	ids := make([]string, 10)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := uploadCSV(t, e, a.Token, fmt.Sprintf("conc-%d", i), body, "")
			if r.Status != 202 {
				t.Errorf("upload %d: %d %s", i, r.Status, r.Body)
				return
			}
			var im importJSON
			r.JSON(t, &im)
			ids[i] = im.ID
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	newSum, all := 0, 0
	var src string
	for _, id := range ids {
		im := waitImport(t, e, a.Token, id)
		newSum += im.New
		all += im.New + im.Updated + im.Unchanged
		src = im.SourceID
		if im.Errors != 0 {
			t.Fatalf("import %s refused rows: %+v", id, im)
		}
	}
	if newSum != rows || all != 10*rows {
		t.Fatalf("new over all imports %d (want %d), rows applied %d (want %d)", newSum, rows, all, 10*rows)
	}
	if n := countSourceLeads(t, e, a.ID, src); n != rows {
		t.Fatalf("%d leads, want %d", n, rows)
	}
	var sources int
	if err := e.App.DB.Get(&sources, `SELECT COUNT(*) FROM sources WHERE tenant_id = ? AND kind = 'import'`, a.ID); err != nil || sources != 1 {
		t.Fatalf("%d import sources (%v), want 1", sources, err)
	}
}

// hiddenLength hides a body's length, so it is sent chunked.
type hiddenLength struct{ r io.Reader }

func (h hiddenLength) Read(p []byte) (int, error) { return h.r.Read(p) }

// Files the import refuses: a clear 4xx, and nothing stored.
func TestImportRefusesBadFiles(t *testing.T) {
	e := newImportEnv(t, "web_import_bad", false)
	a := e.Tenant("acme")
	big := bytes.Repeat([]byte("x@y.test,Name\n"), 60<<20/14+1)
	big = append([]byte("email,name\n"), big...)
	cases := []struct {
		name   string
		body   []byte
		ct     string
		key    string
		status int
		detail string
	}{
		{"utf-16", append([]byte{0xFF, 0xFE}, []byte("e\x00m\x00a\x00i\x00l\x00\n\x00")...), "text/csv", "k1", 415, "UTF-16"},
		{"latin-1", []byte("email,name\nj@x.test,Jos\xe9\n"), "text/csv", "k2", 415, "not UTF-8"},
		{"cut rune", []byte("email,name\nj@x.test,Jos\xc3"), "text/csv", "k3", 415, "not UTF-8"},
		{"charset", []byte("email\na@b.test\n"), "text/csv; charset=iso-8859-1", "k4", 415, "UTF-8"},
		{"json", []byte(`{"email":"a@b.test"}`), "application/json", "k5", 415, "text/csv"},
		{"no key", []byte("email\na@b.test\n"), "text/csv", "", 400, "Idempotency-Key"},
		{"empty", []byte(""), "text/csv", "k6", 422, "empty"},
		{"dup column", []byte("email,Email\na@b.test,c@d.test\n"), "text/csv", "k7", 422, "twice"},
		{"60 MiB", big, "text/csv", "k8", 413, "50 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := []string{"Content-Type", c.ct}
			if c.key != "" {
				h = append(h, "Idempotency-Key", c.key)
			}
			r := e.Do("POST", "/api/v1/imports", a.Token, c.body, h...)
			if r.Status != c.status || !strings.Contains(string(r.Body), c.detail) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	// A 60 MiB body without a Content-Length is cut off at 50 MiB.
	req, _ := http.NewRequest("POST", e.URL+"/api/v1/imports", hiddenLength{bytes.NewReader(big)})
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Content-Type", "text/csv")
	req.Header.Set("Idempotency-Key", "k9")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("chunked 60 MiB: %v", err)
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 413 {
		t.Fatalf("chunked 60 MiB: %d %s", res.StatusCode, msg)
	}
	// Nothing half-done: no import, no stored piece of a file, no source.
	for _, q := range []string{`SELECT COUNT(*) FROM imports WHERE tenant_id = ?`, `SELECT COUNT(*) FROM import_chunks WHERE tenant_id = ?`,
		`SELECT COUNT(*) FROM idempotency_keys WHERE tenant_id = ?`} {
		var n int
		if err := e.App.DB.Get(&n, q, a.ID); err != nil || n != 0 {
			t.Fatalf("%s: %d %v", q, n, err)
		}
	}
	// The refused keys were not used up: the same key with a good file works.
	startImport(t, e, a.Token, "k2", []byte("email,name\nj@x.test,José\n"), "")
}

// A run that stops after a committed batch (a crash) resumes from the
// committed offset: every row applied once, counts exact, refused rows
// listed once; two resumed runs at once do not double anything either.
func TestImportResumesAfterCrash(t *testing.T) {
	e := newImportEnv(t, "web_import_crash", false) // no worker: the test runs the import
	a := e.Tenant("acme")
	svc := e.App.Web.Imports
	var f bytes.Buffer
	f.WriteString("email,name\n")
	for i := 0; i < 260; i++ {
		if i%50 == 7 {
			f.WriteString("broken,row,extra\n")
			continue
		}
		fmt.Fprintf(&f, "c%03d@acme.test,Crash %d\n", i, i)
	}
	im := startImport(t, e, a.Token, "crash-1", f.Bytes(), "")
	crash := errors.New("simulated crash")
	svc.AfterBatch = func(_ string, offset int) error {
		if offset >= 100 {
			return crash
		}
		return nil
	}
	if err := svc.Run(t.Context(), a.ID, im.ID); !errors.Is(err, crash) {
		t.Fatalf("run: %v", err)
	}
	// The crash came after the batch that ends at row 100 committed; the
	// next batch, already in flight (two at a time), may have committed
	// too, as it may in a real crash.
	mid := getImport(t, e, a.Token, im.ID)
	if mid.State != "running" || !(mid.Processed == 100 && mid.New == 98 && mid.Errors == 2 ||
		mid.Processed == 150 && mid.New == 147 && mid.Errors == 3) {
		t.Fatalf("after the crash: %+v", mid)
	}
	svc.AfterBatch = nil
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = svc.Run(t.Context(), a.ID, im.ID) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
	}
	done := getImport(t, e, a.Token, im.ID)
	if done.State != "succeeded" || done.Processed != 260 || done.New != 254 || done.Errors != 6 || done.Updated+done.Unchanged != 0 {
		t.Fatalf("after resuming: %+v", done)
	}
	if n := countSourceLeads(t, e, a.ID, done.SourceID); n != 254 {
		t.Fatalf("%d leads, want 254", n)
	}
	var chunks int
	if err := e.App.DB.Get(&chunks, `SELECT COUNT(*) FROM import_chunks WHERE tenant_id = ?`, a.ID); err != nil || chunks != 0 {
		t.Fatalf("a finished import keeps %d pieces of its file (%v)", chunks, err)
	}
}

func getImport(t *testing.T, e *apptest.Env, token, id string) importJSON {
	t.Helper()
	var im importJSON
	r := e.Do("GET", "/api/v1/imports/"+id, token, nil)
	if r.Status != 200 {
		t.Fatalf("get import: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &im)
	return im
}

// A draft from the web UI nobody started within imports.DraftTTL is failed
// by the sweep with the reason, and its file (personal data) deleted; a
// younger draft, in the same tenant or another, is left as it is, and
// starting the expired one starts nothing.
func TestImportSweepExpiresOldDrafts(t *testing.T) {
	e := newImportEnv(t, "web_import_drafts", false)
	a, b := e.Tenant("acme"), e.Tenant("bolt")
	svc := e.App.Web.Imports
	now := time.Now().UTC()
	svc.Now = func() time.Time { return now }
	draft := func(tenantID string) string {
		t.Helper()
		sp, err := imports.Spool(bytes.NewReader(peopleCSV(3)), 0, "")
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		v, err := svc.Create(t.Context(), tenantID, imports.CreateInput{File: sp, Filename: "people.csv", Draft: true}, idempotency.Once[imports.View]{})
		if err != nil || v.State != imports.StateDraft {
			t.Fatalf("draft: %+v %v", v, err)
		}
		return v.ID
	}
	oldA, oldB := draft(a.ID), draft(b.ID)
	now = now.Add(imports.DraftTTL + time.Minute)
	youngA, youngB := draft(a.ID), draft(b.ID)
	if err := svc.HandleSweep(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	chunks := func(tenantID, id string) int {
		var n int
		if err := e.App.DB.Get(&n, `SELECT COUNT(*) FROM import_chunks WHERE tenant_id = ? AND import_id = ?`, tenantID, id); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct{ tenant, token, id, state string }{
		{a.ID, a.Token, oldA, "failed"}, {b.ID, b.Token, oldB, "failed"}, {a.ID, a.Token, youngA, "draft"}, {b.ID, b.Token, youngB, "draft"}} {
		var got struct {
			State     string  `json:"state"`
			LastError *string `json:"last_error"`
		}
		r := e.Do("GET", "/api/v1/imports/"+c.id, c.token, nil)
		if r.Status != 200 {
			t.Fatalf("get import: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &got)
		if got.State != c.state {
			t.Fatalf("import %s: state %q, want %q", c.id, got.State, c.state)
		}
		if n := chunks(c.tenant, c.id); (c.state == "failed") != (n == 0) {
			t.Fatalf("import %s (%s) keeps %d pieces of its file", c.id, c.state, n)
		}
		if c.state == "failed" && (got.LastError == nil || !strings.Contains(*got.LastError, "not started within 24 hours")) {
			t.Fatalf("expired draft's reason: %v", got.LastError)
		}
	}
	v, err := svc.Start(t.Context(), a.ID, oldA, nil, "")
	if err != nil || v.State != "failed" {
		t.Fatalf("starting an expired draft: %+v %v", v, err)
	}
	if n := countSourceLeads(t, e, a.ID, v.SourceID); n != 0 {
		t.Fatalf("an expired draft made %d leads", n)
	}
}
