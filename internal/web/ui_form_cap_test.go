package web_test

import (
	"net/http"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// uiPostsCappedElsewhere are the UI POST routes not wrapped in withForm,
// and why their body is capped all the same. A route added here must say
// how; everything else is wrapped.
var uiPostsCappedElsewhere = map[string]string{
	// signInForm: parseForm after Cache-Control: no-store.
	"/login":          "signInForm",
	"/login/tenant":   "signInForm",
	"/login/forgot":   "signInForm",
	"/invite/{token}": "signInForm",
	"/reset/{token}":  "signInForm",
	// postedSource (and genericSource over it): parseForm, then the source.
	"/monitor/sources/{id}/rules":           "postedSource",
	"/sources/{id}/dead-letters":            "postedSource",
	"/sources/{id}/mapping":                 "postedSource",
	"/sources/{id}/mapping/preview":         "postedSource",
	"/sources/{id}/reconcile-settings":      "postedSource",
	"/sources/{id}/test-delivery":           "postedSource",
	"/settings/users/{id}/away":             "userForm",
	"/settings/users/{id}/disabled":         "userForm",
	"/settings/users/{id}/role":             "userForm",
	"/settings/assignment":                  "freshAssignment",
	"/settings/assignment/rules/{n}/delete": "freshAssignment",
	"/settings/assignment/rules/{n}/move":   "freshAssignment",
	"/settings/assignment/rules":            "saveRule",
	"/settings/assignment/rules/{n}":        "saveRule",
	"/forms/{id}/preview":                   "parseForm once the form is found (it also answers GET)",
	// No form is read: the URL says it all.
	"/logout":                         "reads no form",
	"/settings/endpoints/{id}/delete": "reads no form",
	"/settings/tokens/{id}/revoke":    "reads no form",
	"/settings/users/{id}/invite":     "reads no form",
	"/settings/users/{id}/remove":     "reads no form",
	"/sources/{id}/reconcile":         "reads no form",
	// Bodies that are not small forms, with caps of their own.
	"/imports":         "CSV upload: imports.MaxBytes",
	"/leads/bulk.json": "JSON through Idempotent.Wrap",
}

// A UI POST route gets its form parsed, with the size cap, by withForm;
// one that is neither wrapped nor listed above fails here.
func TestUIPostRoutesCapTheirForm(t *testing.T) {
	e := uiEnv(t, "web_form_cap")
	routes, ok := e.App.Web.Routes().(chi.Routes)
	if !ok {
		t.Fatal("Routes() is not a chi router")
	}
	var wrapped, listed []string
	err := chi.Walk(routes, func(method, route string, h http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method != http.MethodPost || !uiRoute(route) {
			return nil
		}
		f, ok := h.(http.HandlerFunc)
		if !ok {
			t.Errorf("POST %s: handler %T is not a HandlerFunc", route, h)
			return nil
		}
		// withForm's closure carries its name, inlined or not.
		name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
		_, excepted := uiPostsCappedElsewhere[route]
		switch isWrapped := strings.Contains(name, ".withForm."); {
		case isWrapped && excepted:
			t.Errorf("POST %s is wrapped in withForm now: take it off uiPostsCappedElsewhere", route)
		case isWrapped:
			wrapped = append(wrapped, route)
		case excepted:
			listed = append(listed, route)
		default:
			t.Errorf("POST %s (%s) is not wrapped in s.withForm: its form would be read without the size cap", route, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(wrapped) < 20 {
		sort.Strings(wrapped)
		t.Fatalf("only %d wrapped POST routes walked (%v): is the UI mounted?", len(wrapped), wrapped)
	}
	if len(listed) != len(uiPostsCappedElsewhere) {
		t.Errorf("%d of the %d routes of uiPostsCappedElsewhere were walked: drop the ones that are gone", len(listed), len(uiPostsCappedElsewhere))
	}
}

// uiRoute: the routes of the web UI, not the API, webhooks, the hosted
// forms or mounted extras.
func uiRoute(route string) bool {
	for _, p := range []string{"/api/", "/hooks/", "/f/", "/admin/", "/assets/"} {
		if strings.HasPrefix(route, p) {
			return false
		}
	}
	return true
}
