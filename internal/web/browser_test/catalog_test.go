package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserAddSourceFromCatalog: "Add a source" starts from the catalog;
// picking HubSpot shows its exact webhook URL and HubSpot's own steps; the
// source is created with HubSpot's secret; "Send a test delivery" signs a
// sample as HubSpot does (v3, over the public URI) and shows 200 accepted.
// A token preset (Unbounce) shows its secret webhook URL once created. Both
// widths fit.
func TestBrowserAddSourceFromCatalog(t *testing.T) {
	e := browserApp(t, "ui_catalog", true)
	ten := e.Tenant("acme")
	_, admin := adminTab(t, e, ten)

	admin.open("/sources")
	admin.submit(`[data-testid="open-catalog"]`)
	if n := admin.count(`[data-testid="catalog"] li`); n < 20 {
		t.Fatalf("%d catalog entries", n)
	}
	for _, vp := range widths {
		admin.viewport(vp.w, vp.h, vp.mobile)
		admin.open("/sources/add?entry=hubspot")
		admin.fitsWidth(fmt.Sprintf("the catalog at %d px", vp.w))
	}
	admin.viewport(1280, 900, false)
	admin.open("/sources/add?entry=hubspot")
	if got := admin.text(`[data-testid="catalog-url"]`); !strings.Contains(got, e.URL+"/hooks/acme/hubspot") {
		t.Fatalf("webhook URL %q", got)
	}
	if got := admin.text(`[data-testid="catalog-steps"]`); !strings.Contains(got, "Client secret") || !strings.Contains(got, "contact.propertyChange") {
		t.Fatalf("steps %q", got)
	}
	admin.screenshot("catalog-hubspot")

	hubspotSecret := "6a1c2f84-3d9b-4c1e-9f0a-8b7e6d5c4b3a"
	admin.do(chromedp.SendKeys(chromedp.CSS(`[data-testid="catalog-form"] input[name=secret]`), hubspotSecret, chromedp.NodeVisible))
	admin.submit(`[data-testid="catalog-create"]`)
	if !strings.Contains(admin.location(), "/sources") || admin.count(`[data-testid="send-test-delivery"]`) != 1 {
		t.Fatalf("after create: %s", admin.location())
	}
	admin.sendTestDelivery(e, ten.ID, `email = 'test-delivery@example.com'`)
	admin.screenshot("catalog-hubspot-tested")

	admin.open("/sources/add?entry=token:unbounce")
	if got := admin.text(`[data-testid="catalog-url"]`); !strings.Contains(got, "/hooks/acme/unbounce/") {
		t.Fatalf("unbounce URL %q", got)
	}
	admin.submit(`[data-testid="catalog-create"]`)
	if got := admin.text(`[data-testid="new-secret"]`); !strings.Contains(got, "Secret webhook URL") ||
		admin.count(`[data-testid="new-secret"] input[value^="`+e.URL+`/hooks/acme/unbounce/"]`) != 1 {
		t.Fatalf("new token source shows %q", got)
	}
	admin.submit(`[data-testid="send-test-delivery"]`)
	if got := admin.text(`[data-testid="flash"]`); !strings.Contains(got, "200 accepted") {
		t.Fatalf("unbounce test delivery %q", got)
	}
	admin.screenshot("catalog-unbounce-tested")
}
