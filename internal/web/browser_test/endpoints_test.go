package browser_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jmoiron/sqlx"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/ids"
)

// hookReceiver answers 500 to the first request and 200 after, verifying
// every delivery with the Standard Webhooks library.
type hookReceiver struct {
	mu     sync.Mutex
	secret string
	ids    []string
	bad    int
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.secret != "" {
		wh, _ := standardwebhooks.NewWebhook(h.secret)
		if err := wh.Verify(body, r.Header); err != nil {
			h.bad++
		}
	}
	h.ids = append(h.ids, r.Header.Get("webhook-id"))
	if len(h.ids) == 1 {
		w.WriteHeader(500)
		_, _ = w.Write([]byte(`{"error":"try later"}`))
		return
	}
	w.WriteHeader(200)
	_, _ = w.Write([]byte(`ok`))
}

func (h *hookReceiver) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.ids) }

func TestBrowserEndpoints(t *testing.T) {
	e := browserApp(t, "ui_endpoints", true)
	acme, beta := e.Tenant("acme"), e.Tenant("beta")
	recv := &hookReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()

	browser, admin := adminTab(t, e, acme)

	t.Log("an empty list with the create form")
	if st := admin.open("/settings/endpoints"); st != 200 {
		t.Fatalf("GET /settings/endpoints: %d", st)
	}
	if strings.Contains(admin.text("main"), "coming soon") {
		t.Fatal("the coming-soon page is still there")
	}
	admin.screenshot("endpoints-empty")

	t.Log("a URL that is not one: the form says so")
	admin.do(chromedp.SetValue(chromedp.CSS(`input[name=url]`), "ftp://example.com/x", chromedp.NodeVisible))
	admin.submit(`[data-testid="create-endpoint"]`)
	if got := admin.text(`[data-testid="field-url"] [data-testid="field-error"]`); got == "" {
		t.Fatal("no error shown for an ftp URL")
	}

	t.Log("create an endpoint: the secret is shown once")
	admin.do(
		chromedp.SetValue(chromedp.CSS(`input[name=url]`), srv.URL+"/hooks/leadpipe", chromedp.NodeVisible),
		chromedp.SetValue(chromedp.CSS(`input[name=description]`), "CRM sync", chromedp.NodeVisible),
	)
	admin.submit(`[data-testid="create-endpoint"]`)
	secret := run(admin, chromedp.Value(chromedp.CSS(`[data-testid="new-secret"] input`), chromedp.NodeReady))
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret shown: %q", secret)
	}
	recv.mu.Lock()
	recv.secret = secret
	recv.mu.Unlock()
	admin.screenshot("endpoints-created")
	if admin.count(`[data-testid="endpoint-row"]`) != 1 {
		t.Fatal("the endpoint is not listed")
	}
	epID := run(admin, chromedp.AttributeValue(chromedp.CSS(`[data-testid="endpoint-row"]`), "data-id", chromedp.NodeReady)).Value

	t.Log("an event: first answer 500, then the 5 s retry lands")
	lead := ids.New()
	err := db.InTx(context.Background(), e.App.DB, func(tx *sqlx.Tx) error {
		return e.App.Events.Outbox().Emit(context.Background(), tx, acme.ID, events.Event{Type: events.LeadCreated, ResourceID: lead,
			Data: map[string]any{"id": lead, "name": "Ada <script>alert(1)</script>"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for recv.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if recv.count() < 2 {
		t.Fatalf("receiver got %d requests, want the failure and the retry", recv.count())
	}
	admin.eventually("/settings/endpoints/"+epID, "two attempts", func() bool { return admin.count(`[data-testid="attempt-row"]`) == 2 })
	if admin.count(`[data-testid="attempt-row"][data-outcome="failed"]`) != 1 || admin.count(`[data-testid="attempt-row"][data-outcome="delivered"]`) != 1 {
		t.Fatal("attempts are not one failed and one delivered")
	}
	if !strings.Contains(admin.text(`[data-testid="attempts"]`), "try later") {
		t.Fatal("the response snippet is not shown")
	}
	admin.screenshot("endpoint-detail")
	admin.phoneFits("/settings/endpoints")
	admin.phoneFits("/settings/endpoints/" + epID) // the attempts, one card each

	t.Log("replay from the attempts table")
	admin.submit(`[data-testid="attempt-row"] [data-testid="replay"]`)
	deadline = time.Now().Add(20 * time.Second)
	for recv.count() < 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if recv.count() != 3 {
		t.Fatalf("after replay the receiver has %d requests", recv.count())
	}

	t.Log("the event page")
	admin.open("/settings/endpoints/" + epID)
	admin.submit(`[data-testid="attempt-row"] a.mono`)
	if !strings.Contains(admin.text(`[data-testid="payload"]`), "lead.created") {
		t.Fatal("event payload not shown")
	}
	admin.screenshot("event-detail")

	t.Log("disable, then enable with recover")
	admin.open("/settings/endpoints/" + epID)
	admin.submit(`[data-testid="disable"]`)
	if !strings.Contains(admin.text(`[data-testid="health"]`), "Disabled") {
		t.Fatal("not disabled")
	}
	admin.submit(`[data-testid="enable"]`)
	if !strings.Contains(admin.text(`[data-testid="health"]`), "No deliveries yet") && !strings.Contains(admin.text(`[data-testid="health"]`), "Healthy") {
		t.Fatalf("after enable: %s", admin.text(`[data-testid="health"]`))
	}

	t.Log("rotate the secret: the new one is shown once")
	admin.submit(`[data-testid="rotate-secret"]`)
	if s := run(admin, chromedp.Value(chromedp.CSS(`[data-testid="new-secret"] input`), chromedp.NodeReady)); !strings.HasPrefix(s, "whsec_") || s == secret {
		t.Fatalf("rotated secret %q", s)
	}
	recv.mu.Lock()
	bad := recv.bad
	recv.mu.Unlock()
	if bad != 0 {
		t.Fatalf("%d deliveries failed Standard Webhooks verification", bad)
	}

	t.Log("another tenant's admin gets 404")
	other := newTab(t, browser, e.URL, "beta")
	other.login(beta.Admin.Email, beta.AdminPassword)
	if st := other.open("/settings/endpoints/" + epID); st != 404 {
		t.Fatalf("beta opens acme's endpoint: %d", st)
	}
	if other.open("/settings/endpoints"); other.count(`[data-testid="endpoint-row"]`) != 0 {
		t.Fatal("beta lists acme's endpoints")
	}
}
