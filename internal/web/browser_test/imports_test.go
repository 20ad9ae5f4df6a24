package browser_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
)

// download clicks a link and returns the file the browser saved.
func (tb *tab) download(sel string) []byte {
	tb.t.Helper()
	dir := tb.t.TempDir()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	progress := chromedp.Events(ctx, browser.DownloadProgress)
	enabled := true
	if err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &enabled,
				BrowserContextID: chromedp.FromContext(tb.ctx).BrowserContextID}) // the tab's own context (its cookies)
			return err
		}),
		chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible),
	); err != nil {
		tb.t.Fatalf("%s: download %s: %v", tb.name, sel, err)
	}
	for ev, err := range progress {
		if err != nil {
			tb.t.Fatalf("%s: download %s: %v", tb.name, sel, err)
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			tb.t.Fatalf("%s: download %s canceled", tb.name, sel)
		}
		if ev.State == browser.DownloadProgressStateCompleted {
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				tb.t.Fatal(err)
			}
			return b
		}
	}
	tb.t.Fatalf("%s: download %s did not complete", tb.name, sel)
	return nil
}

func shotsDir(t *testing.T) string {
	dir := os.Getenv("LEADPIPE_SHOTS")
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shots saves the page at 1280 and 390 px (artifacts, and $LEADPIPE_SHOTS
// when set).
func (tb *tab) shots(name string) {
	tb.t.Helper()
	tb.screenshot(name)
	if dir := shotsDir(tb.t); dir != "" {
		for _, w := range []string{"1280", "390"} {
			b, err := os.ReadFile(filepath.Join(artifactsDir(tb.t), name+"-"+w+".png"))
			if err == nil {
				_ = os.WriteFile(filepath.Join(dir, name+"-"+w+".png"), b, 0o644)
			}
		}
	}
}

// TestBrowserImport: an admin uploads a CSV file (UTF-8 with a BOM, one
// column the defaults do not know, two bad rows), sees its first rows and
// the proposed mapping, maps the unknown column to the company, starts the
// import, watches the progress bar move (htmx polling) to the result, and
// downloads the refused rows. The page fits a phone.
func TestBrowserImport(t *testing.T) {
	requireChromium(t)
	d := newSalesDayWith(t, "ui_import", apptest.Options{RedisDB: apptest.RedisUI, Worker: true})
	e, acme := d.e, d.acme
	svc := e.App.Web.Imports
	svc.BatchSize = 20
	svc.AfterBatch = func(string, int) error { time.Sleep(250 * time.Millisecond); return nil } // a progress bar to watch

	var f bytes.Buffer
	f.WriteString("\uFEFFE-mail Address,First Name,Last Name,Firma,Phone,Notes\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&f, "buyer%03d@example.test,Buyer,Nr %d,Großhandel %d GmbH,+49 30 %07d,\"likes \"\"quotes\"\", commas\"\n", i, i, i%7, i)
	}
	f.WriteString("broken@example.test,Only,Three\n")
	f.WriteString("not-an-email,Bad,Address,X,,\n")
	file := filepath.Join(t.TempDir(), "trade-fair.csv")
	if err := os.WriteFile(file, f.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	_, admin := adminTab(t, e, acme)
	admin.open("/leads")
	admin.submit(`[data-testid="nav-imports"]`) // click, and wait for the whole page
	admin.waitText("h1", "Import leads")
	admin.shots("import-upload")
	admin.do(chromedp.SetUploadFiles(chromedp.CSS(`input[type=file]`), []string{file}, chromedp.NodeReady))
	admin.submit(`[data-testid="import-upload-submit"]`)
	if loc := admin.location(); !strings.Contains(loc, "/imports/") {
		t.Fatalf("after upload at %s", loc)
	}

	t.Log("preview: the first rows and the proposed mapping")
	if n := admin.count(`[data-testid="preview-row"]`); n != 10 {
		t.Fatalf("preview shows %d rows, want 10", n)
	}
	if got := admin.text(`[data-testid="import-preview"] tr td`); got != "buyer000@example.test" {
		t.Fatalf("first preview cell %q (BOM left in?)", got)
	}
	field := func(i int) string {
		return run(admin, chromedp.Value(chromedp.CSS(fmt.Sprintf(`[data-testid="map-%d"]`, i)), chromedp.NodeReady))
	}
	if field(0) != "email" || field(1) != "first_name" || field(2) != "last_name" || field(3) != "payload" || field(4) != "phone" {
		t.Fatalf("proposed mapping: %s %s %s %s %s", field(0), field(1), field(2), field(3), field(4))
	}
	if got := run(admin, chromedp.Value(chromedp.CSS(`[data-testid="natural-key"]`), chromedp.NodeReady)); got != "0" {
		t.Fatalf("natural key column %q, want 0 (the email)", got)
	}
	admin.do(chromedp.SetValue(chromedp.CSS(`[data-testid="map-3"]`), "company", chromedp.NodeVisible))
	admin.phoneFits(strings.TrimPrefix(admin.location(), e.URL))
	admin.do(chromedp.SetValue(chromedp.CSS(`[data-testid="map-3"]`), "company", chromedp.NodeVisible))
	admin.shots("import-preview")

	t.Log("start: the progress bar moves to the result")
	admin.submit(`[data-testid="import-start"]`)
	seen := map[int]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := run(admin, chromedp.Evaluate[map[string]string](`(function(){var s=document.querySelector('[data-testid="import-status"]');
			return {state: s.dataset.state, value: document.querySelector('[data-testid="import-progress"]').getAttribute("value")};})()`))
		v, _ := strconv.Atoi(st["value"])
		seen[v] = true
		if st["state"] == "succeeded" {
			break
		}
		if len(seen) == 3 && v > 0 {
			admin.shots("import-progress")
		}
		if time.Now().After(deadline) {
			t.Fatalf("import still %v after 60 s", st)
		}
		time.Sleep(150 * time.Millisecond)
	}
	between := 0
	for v := range seen {
		if v > 0 && v < 100 {
			between++
		}
	}
	if between < 2 {
		t.Fatalf("the progress bar did not move through the import: %v", seen)
	}
	stats := admin.text(`[data-testid="import-status"]`)
	for _, want := range []string{"300", "302 of 302 rows", "Refused"} {
		if !strings.Contains(stats, want) {
			t.Fatalf("result %q lacks %q", stats, want)
		}
	}
	admin.shots("import-done")
	var company string
	if err := e.App.DB.Get(&company, `SELECT company FROM leads WHERE tenant_id = ? AND source_ref = 'buyer003@example.test'`, acme.ID); err != nil || company != "Großhandel 3 GmbH" {
		t.Fatalf("mapped company %q (%v)", company, err)
	}

	t.Log("the refused rows, downloaded")
	rows, err := csv.NewReader(bytes.NewReader(admin.download(`[data-testid="import-errors"]`))).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][0] != "301" || !strings.Contains(rows[2][1], "email") {
		t.Fatalf("error report: %v %q", err, rows)
	}

	t.Log("the imports list shows it")
	admin.open("/imports")
	if n := admin.count(`[data-testid="import-row"]`); n != 1 {
		t.Fatalf("%d imports listed", n)
	}
	admin.phoneFits("/imports")
}

// TestBrowserExport: the inbox's Export button downloads the leads of the
// view being looked at, with its filters.
func TestBrowserExport(t *testing.T) {
	requireChromium(t)
	d := newSalesDay(t, "ui_export", "Dana Scully", "Fox Mulder", "Walter Skinner")
	e, acme := d.e, d.acme
	res := e.Do("PATCH", "/api/v1/leads/"+d.leads["Fox Mulder"], acme.Token, map[string]any{"status": "qualified"}, "If-Match", `"1"`)
	if res.Status != 200 {
		t.Fatalf("patch: %d %s", res.Status, res.Body)
	}
	_, admin := adminTab(t, e, acme)

	admin.open("/leads?view=all")
	if href := run(admin, chromedp.AttributeValue(chromedp.CSS(`[data-testid="export"]`), "href", chromedp.NodeVisible)).Value; !strings.Contains(href, "view=all") {
		t.Fatalf("export link %q", href)
	}
	admin.shots("inbox-export")
	rows, err := csv.NewReader(bytes.NewReader(admin.download(`[data-testid="export"]`))).ReadAll()
	if err != nil || len(rows) != 4 || rows[0][0] != "id" {
		t.Fatalf("export of all: %v %q", err, rows)
	}

	admin.open("/leads?view=all&status=qualified")
	rows, err = csv.NewReader(bytes.NewReader(admin.download(`[data-testid="export"]`))).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][3] != "Fox Mulder" || rows[1][6] != "qualified" {
		t.Fatalf("export of qualified: %v %q", err, rows)
	}
	var n int
	if err := e.App.DB.Get(&n, `SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = 'leads.exported'`, acme.ID); err != nil || n != 2 {
		t.Fatalf("audit: %d exports recorded (%v), want 2", n, err)
	}
}
