package web_test

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.yaml.in/yaml/v3"

	"leadpipe/internal/audit"
	"leadpipe/internal/monitor"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/tenants"
	"leadpipe/internal/web"
	"leadpipe/internal/webhooks"
)

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// apiRoute normalises a route for comparison: parameter names do not
// matter, only their places.
func apiRoute(method, pattern string) string {
	return strings.ToUpper(method) + " " + pathParam.ReplaceAllString(strings.TrimSuffix(pattern, "/"), "{}")
}

// documented reads the operations of openapi.yaml: paths at two spaces of
// indent under `paths:`, operations at four (the layout the file's header
// promises).
func documented(t *testing.T, spec []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(spec))
	inPaths, path := false, ""
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if !strings.HasPrefix(line, " ") {
			inPaths = strings.HasPrefix(line, "paths:")
			continue
		}
		if !inPaths {
			continue
		}
		switch {
		case strings.HasPrefix(line, "  /") && strings.HasSuffix(trimmed, ":"):
			path = strings.TrimSuffix(trimmed, ":")
		case strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(trimmed, ":")
			switch m {
			case "get", "post", "put", "patch", "delete":
				out[apiRoute(m, path)] = strings.ToUpper(m) + " " + path
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("openapi.yaml: no operations found under paths:")
	}
	return out
}

// TestOpenAPIMatchesRouter: every /api/ route of the router is in
// openapi.yaml and every documented /api/ operation is routed.
func TestOpenAPIMatchesRouter(t *testing.T) {
	e := uiEnv(t, "web_openapi")
	routes, ok := e.App.Web.Routes().(chi.Routes)
	if !ok {
		t.Fatal("Routes() is not a chi router")
	}
	routed := map[string]string{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		// Only the API is documented: not /healthz, /readyz, /metrics,
		// /hooks/*, UI pages, /assets/* or the operator's queue dashboard.
		if strings.HasPrefix(route, "/api/") {
			routed[apiRoute(method, route)] = method + " " + route
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs := documented(t, web.OpenAPISpec)

	var missing, stale []string
	for k, v := range routed {
		if _, ok := docs[k]; !ok {
			missing = append(missing, v)
		}
	}
	for k, v := range docs {
		if !strings.HasPrefix(v[strings.Index(v, " ")+1:], "/api/") {
			continue // documented non-API paths (the webhook endpoint) are not compared
		}
		if _, ok := routed[k]; !ok {
			stale = append(stale, v)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	for _, r := range missing {
		t.Errorf("route %s is in the router but missing from internal/web/openapi.yaml: document it there", r)
	}
	for _, r := range stale {
		t.Errorf("operation %s is in internal/web/openapi.yaml but no such route is in the router: route it or remove it", r)
	}
	if len(routed) < 10 {
		t.Errorf("only %d API routes walked: is the app wired?", len(routed))
	}

	// The document is served without authentication.
	res := e.Do("GET", "/api/openapi.yaml", "", nil)
	if res.Status != 200 || res.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(res.Body, web.OpenAPISpec) {
		t.Fatalf("GET /api/openapi.yaml: %d %q (%d bytes)", res.Status, res.Header.Get("Content-Type"), len(res.Body))
	}
	if !bytes.HasPrefix(bytes.TrimSpace(stripComments(web.OpenAPISpec)), []byte("openapi: 3.1.")) {
		t.Fatal("openapi.yaml must start with openapi: 3.1.x")
	}
}

func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// TestOpenAPISchemasMatchResponses: the documented properties of the
// response schemas are exactly the JSON fields the handlers send (a
// counter added to the stats or a run, or a preview's event time, is
// documented, and nothing documented is missing).
func TestOpenAPISchemasMatchResponses(t *testing.T) {
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(web.OpenAPISpec, &spec); err != nil {
		t.Fatal(err)
	}
	for schema, v := range map[string]any{
		"StatsBucket":    monitor.Bucket{},
		"ReconcileRun":   reconcile.RunView{},
		"SourceDelivery": webhooks.DeliveryItem{},
		"PreviewItem":    webhooks.PreviewItem{},
		"Token":          tenants.Token{},
		"User":           web.APIUser{},
		"AuditEntry":     audit.Entry{},
	} {
		t.Run(schema, func(t *testing.T) {
			var documented []string
			for k := range spec.Components.Schemas[schema].Properties {
				documented = append(documented, k)
			}
			var sent []string
			rt := reflect.TypeOf(v)
			for i := range rt.NumField() {
				if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
					sent = append(sent, name)
				}
			}
			sort.Strings(documented)
			sort.Strings(sent)
			if !slices.Equal(documented, sent) {
				t.Fatalf("openapi.yaml %s documents %v; the response sends %v", schema, documented, sent)
			}
		})
	}
}
