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

// A server missing a subsystem is a startup error naming it, not a route
// table with holes.
func TestServerCheckNamesWhatIsMissing(t *testing.T) {
	err := (&web.Server{}).Check()
	if err == nil {
		t.Fatal("an empty server passed Check")
	}
	for _, name := range []string{"Leads", "Idem", "Monitor", "Reconcile", "Deliveries", "Hooks", "Metrics", "Tenants", "Sources"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Check's error does not name %s: %v", name, err)
		}
	}
}
