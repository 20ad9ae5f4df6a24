package web_test

import (
	"go/build"
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
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
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
	root := filepath.Join("..", "..")
	allowed := map[string]bool{"internal/app": true, "internal/apptest": true}
	seen := map[string]bool{}
	checked := 0
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel == "internal/web" || strings.HasPrefix(rel, "internal/web/") || allowed[rel] || strings.Contains(rel, "testdata") {
			return nil
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		checked++
		for _, imp := range pkg.Imports {
			if imp != "leadpipe/internal/web" && !strings.HasPrefix(imp, "leadpipe/internal/web/") {
				continue
			}
			if _, ok := webImporters[rel]; ok {
				seen[rel] = true
				continue
			}
			t.Errorf("%s imports %s: the domain returns values and apperr codes; the handler in internal/web maps them", rel, imp)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked: the walk is broken", checked)
	}
	for rel := range webImporters {
		if !seen[rel] {
			t.Errorf("webImporters lists %s, which no longer imports internal/web: remove it", rel)
		}
	}
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
