// Package browser_test drives the web UI in Debian's headless Chromium
// against the real server (real MariaDB, Redis and the Asynq worker).
package browser_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"leadpipe/internal/apptest"
	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
)

// chromiumPath finds Debian's Chromium binary (the real one, not the
// /usr/bin/chromium wrapper script).
func chromiumPath() string {
	for _, p := range []string{os.Getenv("LEADPIPE_CHROMIUM"), "/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// requireChromium returns Chromium's path, or skips the test when there
// is none. scripts/test.sh sets LEADPIPE_REQUIRE_CHROMIUM=1 so that a
// missing Chromium fails the suite there instead of skipping quietly.
func requireChromium(t *testing.T) string {
	t.Helper()
	p := chromiumPath()
	if p == "" {
		const why = "no Chromium binary found (apt-get install chromium, or set LEADPIPE_CHROMIUM)"
		if os.Getenv("LEADPIPE_REQUIRE_CHROMIUM") == "1" {
			t.Fatal(why + ", and LEADPIPE_REQUIRE_CHROMIUM=1 forbids skipping the browser tests")
		}
		t.Skip(why + ": skipping the browser tests")
	}
	return p
}

// browserApp skips the test when there is no Chromium, else starts the
// application for it (worker: with the Asynq worker in the test).
func browserApp(t *testing.T, prefix string, worker bool) *apptest.Env {
	t.Helper()
	requireChromium(t)
	return apptest.New(t, prefix, apptest.Options{RedisDB: apptest.RedisUI, Worker: worker})
}

// standardSources makes one standard source of the tenant per pair of
// slug and name.
func standardSources(e *apptest.Env, ten apptest.Tenant, slugNames ...string) []sources.Source {
	e.T.Helper()
	var out []sources.Source
	for i := 0; i+1 < len(slugNames); i += 2 {
		s, _ := e.Source(ten.ID, sources.CreateInput{Slug: slugNames[i], Name: slugNames[i+1], Kind: "standard"})
		out = append(out, s)
	}
	return out
}

// sendTestDelivery sends the source page's test delivery and waits for
// the one lead of the tenant it makes (where: the SQL condition on it).
func (tb *tab) sendTestDelivery(e *apptest.Env, tenantID, where string) {
	tb.t.Helper()
	tb.submit(`[data-testid="send-test-delivery"]`)
	if got := tb.text(`[data-testid="flash"]`); !strings.Contains(got, "200 accepted") {
		tb.t.Fatalf("test delivery outcome %q", got)
	}
	apptest.Eventually(tb.t, 20*time.Second, "the test delivery's lead", func() bool {
		var n int
		_ = e.App.DB.Get(&n, `SELECT COUNT(*) FROM leads WHERE tenant_id = ? AND `+where, tenantID)
		return n == 1
	})
}

// adminTab starts the browser and signs the tenant's admin in on a tab of
// their own.
func adminTab(t *testing.T, e *apptest.Env, ten apptest.Tenant) (context.Context, *tab) {
	t.Helper()
	browser := startBrowser(t)
	admin := newTab(t, browser, e.URL, "admin")
	admin.login(ten.Admin.Email, ten.AdminPassword)
	return browser, admin
}

// evaluateEachMinute flushes the monitor's counters and evaluates the
// alert rules once a minute after from through to, as the scheduler would.
func evaluateEachMinute(t *testing.T, mon *monitor.Service, from, to time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := mon.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for m := from.Add(time.Minute); !m.After(to); m = m.Add(time.Minute) {
		if err := mon.Evaluate(ctx, m.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
}

// startBrowser launches one headless Chromium for the test; each tab made
// with newTab gets its own browser context (cookie jar).
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	bin := requireChromium(t)
	// Chromium leaves an org.chromium.Chromium.* folder in TMPDIR per run,
	// and refuses a SingletonSocket path past 107 bytes: t.TempDir() holds
	// the test's name, so a long name failed to start the browser. A short
	// folder of our own instead.
	tmp, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(tmp, "profile")),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(1280, 900),
		chromedp.Env("TMPDIR="+tmp),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, without a timeout
		cancelB()
		cancelA()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancelB(); cancelA() })
	return bctx
}

// tab is one browser tab in its own browser context (its own cookies):
// two tabs are two different people.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
	name string
}

func newTab(t *testing.T, browser context.Context, base, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first Run binds the tab's life to its context: no timeout here.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("%s: open tab: %v", name, err)
	}
	tb := &tab{t: t, ctx: ctx, base: base, name: name}
	// Any alert() the page manages to run fails the test (XSS).
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			t.Errorf("%s: a JavaScript dialog opened: %q", name, ev.Message)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return tb
}

const stepTimeout = 20 * time.Second

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", tb.name, err)
	}
}

func run[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.t.Fatalf("%s: %v", tb.name, err)
	}
	return v
}

// open navigates and returns the HTTP status of the document.
func (tb *tab) open(path string) int64 {
	tb.t.Helper()
	res := run(tb, chromedp.NavigateResponse(tb.base+path))
	return res.Status
}

// submit clicks a submit button and waits for the page it leads to.
func (tb *tab) submit(sel string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))); err != nil {
		tb.t.Fatalf("%s: submit %s: %v", tb.name, sel, err)
	}
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return strings.TrimSpace(run(tb, chromedp.TextContent(chromedp.CSS(sel), chromedp.NodeReady)))
}

// liveText is the text of the first element matching sel, read in one
// script (empty when there is none): for polling a part htmx swaps, where
// text's node lookup and read can straddle a swap ("No node with given
// id found").
func (tb *tab) liveText(sel string) string {
	tb.t.Helper()
	return strings.TrimSpace(run(tb, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "")`, sel))))
}

func (tb *tab) location() string {
	tb.t.Helper()
	return run(tb, chromedp.Location())
}

func (tb *tab) count(sel string) int {
	tb.t.Helper()
	return run(tb, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
}

func (tb *tab) login(email, password string) {
	tb.t.Helper()
	tb.open("/login")
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email, chromedp.NodeVisible),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password, chromedp.NodeVisible),
	)
	tb.submit(`[data-testid="login-submit"]`)
	if loc := tb.location(); !strings.HasSuffix(loc, "/leads") {
		tb.t.Fatalf("%s: after login at %s", tb.name, loc)
	}
}

// eventually reloads path until cond holds.
func (tb *tab) eventually(path, what string, cond func() bool) {
	tb.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tb.open(path)
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: timed out waiting for %s on %s", tb.name, what, path)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// artifactsDir is where screenshots go: $LEADPIPE_ARTIFACTS, else
// artifacts/screenshots at the repository root (gitignored).
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("LEADPIPE_ARTIFACTS")
	if dir == "" {
		wd, _ := os.Getwd()
		root := wd
		for root != "/" {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			root = filepath.Dir(root)
		}
		dir = filepath.Join(root, "artifacts", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the full page at the desktop width and on a phone.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	dir := artifactsDir(tb.t)
	for _, vp := range []struct {
		w, h   int64
		suffix string
		mobile bool
	}{{1280, 900, "1280", false}, {390, 844, "390", true}} {
		emulate := func(h int64) chromedp.Action[chromedp.Void] {
			if vp.mobile {
				return chromedp.EmulateViewport(vp.w, h, chromedp.EmulateMobile, chromedp.EmulateScale(2))
			}
			return chromedp.EmulateViewport(vp.w, h)
		}
		tb.do(emulate(vp.h), chromedp.Sleep(200*time.Millisecond)) // relayout
		// A viewport as tall as the page, captured as is: capturing "beyond
		// the viewport" widens pages with sideways-scrolling parts (board).
		h := max(vp.h, int64(run(tb, chromedp.Evaluate[float64](`document.documentElement.scrollHeight`))))
		tb.do(emulate(min(h, 8000)), chromedp.Sleep(100*time.Millisecond))
		buf := run(tb, chromedp.CaptureScreenshot())
		file := filepath.Join(dir, name+"-"+vp.suffix+".png")
		if err := os.WriteFile(file, buf, 0o644); err != nil {
			tb.t.Fatal(err)
		}
		tb.t.Logf("screenshot %s", file)
	}
	tb.do(chromedp.EmulateViewport(1280, 900))
}

// choose picks a value in a select that saves on change and waits for the
// page the save leads to.
func (tb *tab) choose(sel, value string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	js := fmt.Sprintf(`(function(){var s=document.querySelector(%q); s.value=%q; s.dispatchEvent(new Event("change",{bubbles:true}));})()`, sel, value)
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Evaluate[chromedp.Void](js))); err != nil {
		tb.t.Fatalf("%s: choose %s in %s: %v", tb.name, value, sel, err)
	}
}
