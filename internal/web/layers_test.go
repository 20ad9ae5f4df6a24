package web_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"leadpipe/internal/web"
)

// The web layer parses, calls a service and renders: no package under
// internal/web may reach the database itself. Test files (helpers that set
// up rows) are exempt; build.Package.Imports lists non-test imports only.
func TestWebLayerDoesNotImportTheDatabase(t *testing.T) {
	forbidden := map[string]bool{
		"github.com/jmoiron/sqlx": true,
		"leadpipe/internal/db":    true,
		"database/sql":            true,
	}
	checked := 0
	err := walkPackages(".", nil, func(path string, pkg *build.Package) error {
		checked++
		for _, imp := range pkg.Imports {
			if forbidden[imp] || strings.HasPrefix(imp, "leadpipe/internal/db/") {
				t.Errorf("internal/web/%s imports %s: call a service instead", path, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no packages checked")
	}
}

// webImporters would list domain packages allowed to import internal/web,
// each with its reason. It is empty and stays so: an entry that no longer
// imports web fails the test.
var webImporters = map[string]string{}

// The HTTP layer is on top: no domain package imports internal/web (only
// the wiring, internal/app, and test helpers do). Test files are exempt;
// build.Package.Imports lists non-test imports only.
func TestNoDomainPackageImportsTheWebLayer(t *testing.T) {
	walkAllowing(t, "webImporters", webImporters, 10, "packages", "no longer imports internal/web", func(rel, _ string, pkg *build.Package) (int, []string, error) {
		var bad []string
		for _, imp := range pkg.Imports {
			if imp == "leadpipe/internal/web" || strings.HasPrefix(imp, "leadpipe/internal/web/") {
				bad = append(bad, fmt.Sprintf("%s imports %s: the domain returns values and apperr codes; the handler in internal/web maps them", rel, imp))
			}
		}
		return 1, bad, nil
	})
}

// httpOutsideWeb lists the packages outside internal/web allowed to
// define net/http handlers, each with its reason. An entry that no longer
// defines one fails the test.
var httpOutsideWeb = map[string]string{
	"internal/reconcile/fakeapi": "stand-ins for the senders' own APIs (Typeform, Meta's Graph API, LinkedIn Lead Sync, a generic list) that tests and benchmarks pull from; not Leadpipe's HTTP surface",
	"internal/monitor":           "NewMetricsHandler is the Prometheus client's handler (promhttp) over the monitor's collectors; internal/web mounts it at /metrics",
}

// Only internal/web speaks HTTP: no other package under internal (but the
// wiring) declares a handler: a function taking an http.ResponseWriter, a
// ServeHTTP method, an http.HandlerFunc conversion or a function returning
// an http.Handler. Test files are exempt (fake servers).
func TestNoHTTPHandlersOutsideTheWebLayer(t *testing.T) {
	fset := token.NewFileSet()
	walkAllowing(t, "httpOutsideWeb", httpOutsideWeb, 50, "files", "defines no handler any more", func(rel, dir string, pkg *build.Package) (int, []string, error) {
		var bad []string
		for i, name := range pkg.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				return i, bad, err
			}
			for _, what := range httpHandlersIn(f) {
				bad = append(bad, fmt.Sprintf("%s/%s %s: handlers live in internal/web, which calls the domain and maps its errors", rel, name, what))
			}
		}
		return len(pkg.GoFiles), bad, nil
	})
}

// walkAllowing walks the domain packages with visit, which says how many
// things (unit) of a package it checked and what in it breaks the rule.
// A package on the allow list (named list) may break it; an entry that no
// longer does is stale (the package now: stale) and fails, and so does a
// walk that checked fewer than least things.
func walkAllowing(t *testing.T, list string, allowed map[string]string, least int, unit, stale string, visit func(rel, dir string, pkg *build.Package) (int, []string, error)) {
	t.Helper()
	seen := map[string]bool{}
	checked := 0
	err := walkDomainPackages(func(rel, dir string, pkg *build.Package) error {
		n, bad, err := visit(rel, dir, pkg)
		checked += n
		if _, ok := allowed[rel]; ok && len(bad) > 0 {
			seen[rel] = true
		} else {
			for _, b := range bad {
				t.Error(b)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < least {
		t.Fatalf("only %d %s checked: the walk is broken", checked, unit)
	}
	for rel := range allowed {
		if !seen[rel] {
			t.Errorf("%s lists %s, which %s: remove it", list, rel, stale)
		}
	}
}

// walkDomainPackages calls fn with every package under internal but the
// web layer, the wiring (internal/app) and test helpers (internal/apptest):
// its path from the repository root, its folder and its non-test files.
func walkDomainPackages(fn func(rel, dir string, pkg *build.Package) error) error {
	root := filepath.Join("..", "..")
	relOf := func(path string) string {
		rel, _ := filepath.Rel(root, path)
		return filepath.ToSlash(rel)
	}
	skip := map[string]bool{"internal/app": true, "internal/apptest": true}
	return walkPackages(filepath.Join(root, "internal"), func(path string) bool {
		rel := relOf(path)
		return rel == "internal/web" || strings.HasPrefix(rel, "internal/web/") || skip[rel] || strings.Contains(rel, "testdata")
	}, func(path string, pkg *build.Package) error {
		return fn(relOf(path), path, pkg)
	})
}

// walkPackages calls fn with every folder below root that holds a Go
// package (and its non-test files), but those skip rules out.
func walkPackages(root string, skip func(path string) bool, fn func(path string, pkg *build.Package) error) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || skip != nil && skip(path) {
			return err
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		return fn(path, pkg)
	})
}

// httpHandlersIn names what in f makes an HTTP handler.
func httpHandlersIn(f *ast.File) []string {
	isHTTP := func(e ast.Expr, name string) bool {
		if st, ok := e.(*ast.StarExpr); ok {
			e = st.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != name {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == "http"
	}
	var out []string
	checkType := func(ft *ast.FuncType, where string) {
		if ft.Params != nil {
			for _, p := range ft.Params.List {
				if isHTTP(p.Type, "ResponseWriter") {
					out = append(out, where+" takes an http.ResponseWriter")
				}
			}
		}
		if ft.Results != nil {
			for _, r := range ft.Results.List {
				if isHTTP(r.Type, "Handler") || isHTTP(r.Type, "HandlerFunc") {
					out = append(out, where+" returns an http.Handler")
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncDecl:
			if x.Recv != nil && x.Name.Name == "ServeHTTP" {
				out = append(out, "declares ServeHTTP")
			}
			checkType(x.Type, "func "+x.Name.Name)
		case *ast.FuncLit:
			checkType(x.Type, "a func literal")
		case *ast.CallExpr:
			if isHTTP(x.Fun, "HandlerFunc") {
				out = append(out, "converts to http.HandlerFunc")
			}
		}
		return true
	})
	return out
}

// A server missing a subsystem is a startup error naming it, not a route
// table with holes.
func TestServerCheckNamesWhatIsMissing(t *testing.T) {
	err := (&web.Server{}).Check()
	if err == nil {
		t.Fatal("an empty server passed Check")
	}
	for _, name := range []string{"Leads", "Idem", "Monitor", "Reconcile", "Deliveries", "DeliveryOps", "Hooks", "Metrics", "Tenants", "Sources"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Check's error does not name %s: %v", name, err)
		}
	}
}

// Comments point into the repository (docs/ARCHITECTURE.md and the other
// docs), never to a contract file that only lives outside it.
func TestCommentsPointIntoTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".templ")) || strings.HasSuffix(path, "layers_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, outside := range []string{"PRODUCT.md", "shared/docs", "// anchor:"} {
			if strings.Contains(string(b), outside) {
				t.Errorf("%s mentions %q: point to docs/ARCHITECTURE.md (or another file in the repository) instead", path, outside)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The sender write is one method (leads.Service.WriteSenders): no package
// outside internal/leads assembles it from its parts, and only the leads
// area writes INSERT INTO leads (one column list: leadInsertCols).
func TestOneSenderWrite(t *testing.T) {
	parts := map[string]bool{"UpsertFromSender": true, "UpsertFromSenderBatch": true, "UpsertFromSenderBatchDeferred": true,
		"RecordTouches": true, "SenderChanged": true}
	fset := token.NewFileSet()
	inserts := 0
	err := walkDomainPackages(func(rel, dir string, pkg *build.Package) error {
		for _, name := range pkg.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if parts[x.Sel.Name] && rel != "internal/leads" {
						t.Errorf("%s/%s uses %s: write sender records with leads.Service.WriteSenders", rel, name, x.Sel.Name)
					}
				case *ast.BasicLit:
					if x.Kind == token.STRING && strings.Contains(strings.ToUpper(x.Value), "INSERT INTO LEADS (") {
						inserts++
						if rel != "internal/leads" || name != "store.go" {
							t.Errorf("%s/%s inserts into leads: use insertLeads (internal/leads/store.go)", rel, name)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inserts != 1 {
		t.Errorf("%d column lists of INSERT INTO leads in the leads area, want 1", inserts)
	}
}
