package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/retention"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
)

// TestWiringAssignsNoFieldAfterConstruction: the wiring (internal/app)
// gives every service what it needs when it builds it: no statement there
// assigns an exported field of a built value, and the App's own fields are
// set only while Open and wire build it. The commands (cmd/server,
// cmd/worker) assign nothing of the App (a) they opened: their flags are
// app.Options.
func TestWiringAssignsNoFieldAfterConstruction(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "../../cmd/server", "../../cmd/worker"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	// Roots whose fields may be assigned, and why.
	allowed := map[string]string{
		"cfg": "the configuration being completed before anything is built (demoDefaults)",
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		inApp := filepath.Base(filepath.Dir(path)) == "app" || filepath.Dir(path) == "."
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			building := inApp && (fn.Name.Name == "Open" || fn.Name.Name == "wire")
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok {
					return true
				}
				for _, lhs := range as.Lhs {
					sel, ok := lhs.(*ast.SelectorExpr)
					if !ok || !sel.Sel.IsExported() {
						continue
					}
					checked++
					root, ok := rootIdent(sel)
					if !inApp && (!ok || root.Name != "a") {
						continue // a command's own values (requests, records)
					}
					if ok && building && root.Name == "a" && sel.X == ast.Expr(root) {
						continue // the App under construction
					}
					if ok && allowed[root.Name] != "" {
						continue
					}
					t.Errorf("%s: %s is assigned after construction: pass it to the constructor (or an app.Option)",
						fset.Position(as.Pos()), selectorText(sel))
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no field assignment seen at all: the test reads nothing")
	}
}

func rootIdent(e ast.Expr) (*ast.Ident, bool) {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x, true
		case *ast.SelectorExpr:
			e = x.X
		default:
			return nil, false
		}
	}
}

func selectorText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return selectorText(x.X) + "." + x.Sel.Name
	}
	return "…"
}

// TestServicesHaveNoExportedDependencyFields: the services the wiring
// builds through constructors take their clock, hooks and observers as
// arguments and keep them unexported, so nothing can swap one after the
// service is in use (the hidden ordering rule a settable field is).
func TestServicesHaveNoExportedDependencyFields(t *testing.T) {
	services := []any{
		tenants.Service{}, sources.Service{}, monitor.Service{}, retention.Service{}, idempotency.Store{}, leads.Service{},
	}
	// Exported dependency fields that stay for now, with the reason.
	stays := map[string]string{
		"leads.Service.Now":        "leads.Service is being reshaped by the one sender write; the wiring builds it with leads.WithClock",
		"leads.Service.Deliveries": "as above; given to leads.NewService",
		"leads.Service.Events":     "as above; given to leads.NewService",
	}
	for _, s := range services {
		typ := reflect.TypeOf(s)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() || f.Anonymous {
				continue
			}
			if k := f.Type.Kind(); k != reflect.Func && k != reflect.Interface {
				continue
			}
			name := typ.String() + "." + f.Name
			if stays[name] != "" {
				continue
			}
			t.Errorf("%s is an exported %s field: make it a constructor argument kept unexported", name, f.Type.Kind())
		}
	}
}
