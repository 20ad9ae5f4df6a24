package db_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"leadpipe/internal/dbtest"
)

// The rules every SQL statement of Leadpipe follows, so tenants can be
// sharded by a MySQL-compatible engine keyed on tenant_id (Vitess, TiDB)
// and the SQL runs on MySQL 8 and MariaDB alike (docs/SCALING.md):
//
//  1. every table it reads or writes is constrained by its tenant key
//     (tenant_id; id for the tenants table): an INSERT names tenant_id in
//     its columns, every other reference has a tenant_id condition;
//  2. no `INSERT … AS new` row alias (MariaDB rejects it: use VALUES(col));
//  3. no `FOR UPDATE SKIP LOCKED` (Vitess and TiDB do not honour it the
//     same way, so it must never be what makes something correct);
//  4. no ORDER BY an AUTO_INCREMENT column (its order is not insertion
//     order across shards, nor under TiDB's id allocation);
//  5. no `->>` (a syntax error on MariaDB).
//
// Deliberate exceptions to rule 1, by the name of the function (or
// constant) holding the statement, each with why. A statement is listed
// here only when there is no tenant yet to constrain by (the request
// names a tenant slug, a login email or a token), or when it deliberately
// iterates every tenant. A name here that holds no such statement any more
// fails the test too, so the list stays true.
var tenantKeyExceptions = map[string]string{
	// Before a tenant is known: the request names a slug or an email.
	"internal/tenants.getTenantBySlug": "resolves a tenant slug (admin commands, login form) to the tenant; a sharded install keeps tenants unsharded or behind a slug lookup vindex",
	"internal/tenants.getLogin":        "login by email: user_logins is the global email → tenant lookup table (a lookup vindex under Vitess)",
	// Deliberate iteration over every tenant (periodic work, operators).
	"internal/tenants.listTenants":          "operator command `tenant list`",
	"internal/tenants.tenantIDsAfter":       "tenants.ForEach, the one iterator of periodic work over every tenant (reconcile tick, purges, alert evaluation, the delivery sweeper)",
	"internal/monitor.openAlertsAllTenants": "the /metrics gauge of open alerts across tenants (a scatter query under Vitess)",
	"internal/webhooks.loggedTenants":       "the worker's fold of the duplicate log finds the tenants with counts to fold (a scatter query under Vitess); each fold then works within one tenant",
	"internal/webhooks.dupLogBacklog":       "the /metrics gauges of the duplicate log's backlog across tenants (a scatter query under Vitess)",
	// Not tenant data: the installation itself.
	"internal/db.InstallationID":   "the one-row installation table: which installation this database is, claimed in Redis at start (unsharded, like tenants)",
	"internal/db.takeMigrateLease": "the one-row migration lease: schema changes are per installation, not per tenant (unsharded, like goose_db_version)",
}

// sqlStart recognises a string that begins a statement.
var sqlStart = regexp.MustCompile(`^\(*\s*(select|insert|update|delete|replace|with)\b`)

// statement is one SQL text found in the code.
type statement struct {
	pos   string // file:line
	owner string // package.Func, package.Type.Method or package.constName
	sql   string // normalised: lower case, comments and literals out, spaces collapsed
}

// SQLWALK_DUMP=1 go test -v -run TestEverySQLStatementIsShardable ./internal/db/ lists every statement found.
func TestEverySQLStatementIsShardable(t *testing.T) {
	root := moduleRoot(t)
	schema := loadSchema(t)
	stmts := walkSQL(t, root)
	if len(stmts) < 50 {
		t.Fatalf("found only %d SQL statements under %s: the walker is broken", len(stmts), root)
	}
	used := map[string]bool{}
	checked := 0
	for _, s := range stmts {
		problems := checkStatement(s.sql, schema)
		if len(problems) == 0 {
			if len(referencedTables(s.sql, schema)) > 0 {
				checked++
			}
			continue
		}
		var rest []string
		for _, p := range problems {
			if strings.HasPrefix(p, ruleTenant) {
				if _, ok := tenantKeyExceptions[s.owner]; ok {
					used[s.owner] = true
					continue
				}
			}
			rest = append(rest, p)
		}
		if len(rest) == 0 {
			checked++
			continue
		}
		t.Errorf("%s (%s):\n    %s\n    %s", s.pos, s.owner, strings.Join(rest, "\n    "), clip(s.sql))
	}
	for name := range tenantKeyExceptions {
		if !used[name] {
			t.Errorf("tenantKeyExceptions lists %s, which holds no statement that needs it: remove it (or fix the name)", name)
		}
	}
	if os.Getenv("SQLWALK_DUMP") != "" {
		for _, s := range stmts {
			t.Logf("%s %s: %s", s.pos, s.owner, clip(s.sql))
		}
	}
	t.Logf("%d statements found, %d on tables checked, %d named exceptions", len(stmts), checked, len(tenantKeyExceptions))
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// --- the schema, from a freshly migrated database ---

type schemaInfo struct {
	tenantKey map[string]string          // table → its tenant key column ("" when it has none)
	autoInc   map[string]map[string]bool // table → AUTO_INCREMENT columns
}

func loadSchema(t *testing.T) schemaInfo {
	t.Helper()
	d, _ := dbtest.New(t, "sqlwalk")
	var cols []struct {
		Table  string `db:"TABLE_NAME"`
		Column string `db:"COLUMN_NAME"`
		Extra  string `db:"EXTRA"`
	}
	if err := d.SelectContext(context.Background(), &cols, `SELECT TABLE_NAME, COLUMN_NAME, EXTRA
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()`); err != nil {
		t.Fatal(err)
	}
	s := schemaInfo{tenantKey: map[string]string{}, autoInc: map[string]map[string]bool{}}
	for _, c := range cols {
		table, col := strings.ToLower(c.Table), strings.ToLower(c.Column)
		if _, ok := s.tenantKey[table]; !ok {
			s.tenantKey[table] = ""
		}
		if col == "tenant_id" {
			s.tenantKey[table] = "tenant_id"
		}
		if strings.Contains(strings.ToLower(c.Extra), "auto_increment") {
			if s.autoInc[table] == nil {
				s.autoInc[table] = map[string]bool{}
			}
			s.autoInc[table][col] = true
		}
	}
	if _, ok := s.tenantKey["tenants"]; !ok {
		t.Fatal("no tenants table in the migrated schema")
	}
	s.tenantKey["tenants"] = "id" // the tenants table is keyed by the tenant id itself
	delete(s.tenantKey, "goose_db_version")
	return s
}

// --- the rules ---

const ruleTenant = "not constrained by tenant key"

var (
	reAsNew      = regexp.MustCompile(`\)\s*as\s+new\b|\bas\s+new\s+on\s+duplicate\b`)
	reSkipLocked = regexp.MustCompile(`\bskip\s+locked\b`)
	reOrderBy    = regexp.MustCompile(`\border\s+by\s+(.+?)(\blimit\b|\bfor\s+update\b|\block\s+in\b|\)|$|\bunion\b)`)
	reTableRef   = regexp.MustCompile(`\b(from|join|into|update)\s+([a-z_][a-z0-9_]*)(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?`)
	reInsertCols = regexp.MustCompile(`\b(?:insert|replace)\s+(?:ignore\s+)?into\s+([a-z_][a-z0-9_]*)\s*\(([^)]*)\)`)
)

// notAlias are words that can follow a table name and are not its alias.
var notAlias = map[string]bool{"where": true, "set": true, "join": true, "left": true, "right": true, "inner": true,
	"outer": true, "cross": true, "straight_join": true, "on": true, "using": true, "order": true, "group": true,
	"limit": true, "values": true, "value": true, "select": true, "force": true, "use": true, "ignore": true,
	"partition": true, "natural": true, "for": true, "lock": true, "having": true, "union": true, "window": true,
	"as": true, "returning": true, "into": true, "straight": true, opaqueMark: true}

type tableRef struct{ table, alias, via string }

func referencedTables(sql string, s schemaInfo) []tableRef {
	var refs []tableRef
	for _, m := range reTableRef.FindAllStringSubmatch(sql, -1) {
		if _, known := s.tenantKey[m[2]]; !known && m[2] != opaqueMark {
			continue
		}
		alias := m[3]
		if notAlias[alias] {
			alias = ""
		}
		refs = append(refs, tableRef{table: m[2], alias: alias, via: m[1]})
	}
	return refs
}

// checkStatement returns what is wrong with one normalised statement.
func checkStatement(sql string, s schemaInfo) []string {
	var problems []string
	if reAsNew.MatchString(sql) {
		problems = append(problems, "uses an `AS new` row alias: write VALUES(col) in ON DUPLICATE KEY UPDATE")
	}
	if reSkipLocked.MatchString(sql) {
		problems = append(problems, "uses FOR UPDATE SKIP LOCKED")
	}
	if strings.Contains(sql, "->>") {
		problems = append(problems, "uses ->> (MariaDB: JSON_UNQUOTE(JSON_EXTRACT(…)))")
	}
	refs := referencedTables(sql, s)
	problems = append(problems, orderByAutoIncrement(sql, refs, s)...)

	// Rule 1. INSERT targets need tenant_id among their columns.
	inserted := map[string]bool{}
	for _, m := range reInsertCols.FindAllStringSubmatch(sql, -1) {
		inserted[m[1]] = true
		key, known := s.tenantKey[m[1]]
		if m[1] == opaqueMark {
			key, known = "tenant_id", true
		}
		if !known {
			continue
		}
		if key == "" || !hasColumn(m[2], key) {
			problems = append(problems, fmt.Sprintf("%s: INSERT INTO %s without %s among its columns", ruleTenant, m[1], orNone(key)))
		}
	}
	// Every other reference needs its tenant key compared with a value
	// (key = ?, key IN (…), (key, …) IN (…)), directly or through a join
	// equality with a reference that has one (a.tenant_id = b.tenant_id).
	// A reference without a qualifier is matched by as many unqualified
	// value conditions.
	c := tenantConditions(sql)
	needUnqualified := map[string][]tableRef{}
	for _, r := range refs {
		if r.via == "into" && inserted[r.table] {
			continue
		}
		key := s.tenantKey[r.table]
		if r.table == opaqueMark {
			key = "tenant_id" // a table chosen at run time
		}
		if key == "" {
			problems = append(problems, fmt.Sprintf("%s: table %s has no tenant_id column", ruleTenant, r.table))
			continue
		}
		if c.constrained(r.table, key) || (r.alias != "" && c.constrained(r.alias, key)) {
			continue
		}
		needUnqualified[key] = append(needUnqualified[key], r)
	}
	for key, rs := range needUnqualified {
		if c.unqualified[key] >= len(rs) {
			continue
		}
		for _, r := range rs {
			problems = append(problems, fmt.Sprintf("%s: %s %s%s has no %s = ? (or IN) condition", ruleTenant, strings.ToUpper(r.via), r.table, aliasNote(r.alias), key))
		}
	}
	return problems
}

// conditions are the tenant key comparisons of one statement.
type conditions struct {
	valued      map[string]bool     // "q.col" compared with a value
	joined      map[string][]string // "q.col" = "p.col" equalities
	unqualified map[string]int      // col compared with a value, no qualifier
}

var (
	reValueCond = regexp.MustCompile(`(?:\b([a-z_][a-z0-9_]*)\.)?\b(tenant_id|id)\s*(?:=|<=>)\s*(?:\?|\(|[0-9])|(?:\b([a-z_][a-z0-9_]*)\.)?\b(tenant_id|id)\s+in\s*\(`)
	reTupleCond = regexp.MustCompile(`\(\s*(?:([a-z_][a-z0-9_]*)\.)?(tenant_id)\s*,[^()]*\)\s*in\s*\(`)
	reJoinCond  = regexp.MustCompile(`\b([a-z_][a-z0-9_]*)\.(tenant_id|id)\s*=\s*([a-z_][a-z0-9_]*)\.(tenant_id|id)\b`)
)

var (
	reSetClause = regexp.MustCompile(`^(\(*\s*update\b.*?)\bset\b.*?(\bwhere\b|$)`)
	reDupClause = regexp.MustCompile(`\bon duplicate key set\b.*$`)
)

func tenantConditions(sql string) conditions {
	// Assignments are not conditions.
	sql = reSetClause.ReplaceAllString(sql, "$1 $2")
	sql = reDupClause.ReplaceAllString(sql, "")
	c := conditions{valued: map[string]bool{}, joined: map[string][]string{}, unqualified: map[string]int{}}
	add := func(q, col string, at int) {
		if q != "" {
			c.valued[q+"."+col] = true
			return
		}
		if at > 0 && (sql[at-1] == '.' || isWord(sql[at-1])) {
			return
		}
		c.unqualified[col]++
	}
	for _, m := range reValueCond.FindAllStringSubmatchIndex(sql, -1) {
		if m[4] >= 0 { // = form
			q := ""
			if m[2] >= 0 {
				q = sql[m[2]:m[3]]
			}
			add(q, sql[m[4]:m[5]], m[4])
		} else {
			q := ""
			if m[6] >= 0 {
				q = sql[m[6]:m[7]]
			}
			add(q, sql[m[8]:m[9]], m[8])
		}
	}
	for _, m := range reTupleCond.FindAllStringSubmatchIndex(sql, -1) {
		q := ""
		if m[2] >= 0 {
			q = sql[m[2]:m[3]]
		}
		add(q, sql[m[4]:m[5]], m[4])
	}
	for _, m := range reJoinCond.FindAllStringSubmatch(sql, -1) {
		l, r := m[1]+"."+m[2], m[3]+"."+m[4]
		c.joined[l] = append(c.joined[l], r)
		c.joined[r] = append(c.joined[r], l)
	}
	return c
}

// constrained: q.col is compared with a value, or joined to one that is.
func (c conditions) constrained(q, col string) bool {
	seen := map[string]bool{}
	var walk func(k string) bool
	walk = func(k string) bool {
		if seen[k] {
			return false
		}
		seen[k] = true
		if c.valued[k] {
			return true
		}
		for _, n := range c.joined[k] {
			if walk(n) {
				return true
			}
		}
		return false
	}
	return walk(q + "." + col)
}

func orNone(key string) string {
	if key == "" {
		return "a tenant key (the table has no tenant_id)"
	}
	return key
}

func aliasNote(a string) string {
	if a == "" {
		return ""
	}
	return " " + a
}

func hasColumn(list, col string) bool {
	for _, c := range strings.Split(list, ",") {
		if strings.TrimSpace(c) == col {
			return true
		}
	}
	return false
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func orderByAutoIncrement(sql string, refs []tableRef, s schemaInfo) []string {
	var problems []string
	for _, m := range reOrderBy.FindAllStringSubmatch(sql, -1) {
		for _, item := range strings.Split(m[1], ",") {
			f := strings.Fields(item)
			if len(f) == 0 {
				continue
			}
			col := f[0]
			qual := ""
			if q, c, ok := strings.Cut(col, "."); ok {
				qual, col = q, c
			}
			for _, r := range refs {
				if qual != "" && qual != r.table && qual != r.alias {
					continue
				}
				if s.autoInc[r.table][col] {
					problems = append(problems, fmt.Sprintf("orders by %s.%s, an AUTO_INCREMENT column", r.table, col))
				}
			}
		}
	}
	return problems
}

// --- finding the statements in the Go code ---

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// walkSQL returns every string (or concatenation of strings) in the
// module's non-test Go files that begins a SQL statement. An operand that
// is not a literal is resolved when it can be: a constant of the package,
// a local variable assigned a string in the same function, or a local
// assigned from a call to a function of the package whose own literals
// put a tenant_id condition first (Filter.where-style builders). Anything
// else stays an opaque placeholder, which constrains nothing.
func walkSQL(t *testing.T, root string) []statement {
	t.Helper()
	fset := token.NewFileSet()
	type file struct {
		pkg string
		f   *ast.File
	}
	var files []file
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_templ.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		files = append(files, file{filepath.ToSlash(rel), f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*pkgInfo{}
	for _, f := range files {
		p := pkgs[f.pkg]
		if p == nil {
			p = &pkgInfo{consts: map[string]string{}, tenantBuilders: map[string]bool{}}
			pkgs[f.pkg] = p
		}
		p.addFile(f.f)
	}
	var out []statement
	for _, f := range files {
		p := pkgs[f.pkg]
		for _, decl := range f.f.Decls {
			for _, item := range ownedNodes(decl) {
				owner := f.pkg + "." + item.name
				r := &resolver{pkg: p, fn: item.node}
				built := map[ast.Node]bool{} // WriteString calls already part of a built statement
				ast.Inspect(item.node, func(n ast.Node) bool {
					if built[n] {
						return false
					}
					if text, pos, ok := r.builtStatement(n, built); ok {
						if sql := normaliseSQL(text); sqlStart.MatchString(sql) {
							out = append(out, statement{pos: fset.Position(pos).String(), owner: owner, sql: sql})
						}
						return false
					}
					e, ok := n.(ast.Expr)
					if !ok {
						return true
					}
					text, ok := r.stringValue(e, 0)
					if !ok {
						return true
					}
					if sql := normaliseSQL(text); sqlStart.MatchString(sql) {
						out = append(out, statement{pos: fset.Position(e.Pos()).String(), owner: owner, sql: sql})
					}
					return false // the parts of a concatenation are not statements of their own
				})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// pkgInfo is what a package's files give the resolver.
type pkgInfo struct {
	consts         map[string]string
	tenantBuilders map[string]bool // functions (by name) whose literals start a condition with tenant_id
}

var reTenantFirst = regexp.MustCompile(`^\s*\(?\s*([a-z_]+\.)?tenant_id\s*(=|in\b)`)

func (p *pkgInfo) addFile(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			if d.Tok != token.CONST {
				continue
			}
			for _, spec := range d.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := (&resolver{}).stringValue(vs.Values[i], 0); ok {
							p.consts[n.Name] = s
						}
					}
				}
			}
		case *ast.FuncDecl:
			ast.Inspect(d, func(n ast.Node) bool {
				if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					if s, err := strconv.Unquote(bl.Value); err == nil && reTenantFirst.MatchString(strings.ToLower(s)) {
						p.tenantBuilders[d.Name.Name] = true
					}
				}
				return true
			})
		}
	}
}

// opaqueMark stands for an operand the walker cannot see into. Where it
// names a table (FROM <it>), that run-time table must carry a tenant_id
// condition like any other.
const opaqueMark = "_expr_"

type resolver struct {
	pkg *pkgInfo
	fn  ast.Node
}

const maxResolveDepth = 4

// stringValue evaluates a string literal or a + concatenation holding at
// least one literal; other operands are resolved as far as they can be.
func (r *resolver) stringValue(e ast.Expr, depth int) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return r.stringValue(x.X, depth)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		l, lok := r.stringValue(x.X, depth)
		rt, rok := r.stringValue(x.Y, depth)
		if !lok && !rok {
			return "", false
		}
		if !lok {
			l = r.operand(x.X, depth)
		}
		if !rok {
			rt = r.operand(x.Y, depth)
		}
		return l + rt, true
	}
	return "", false
}

func (r *resolver) operand(e ast.Expr, depth int) string {
	const opaque = " " + opaqueMark + " "
	id, ok := e.(*ast.Ident)
	if !ok || r.pkg == nil || depth >= maxResolveDepth {
		return opaque
	}
	if s, ok := r.pkg.consts[id.Name]; ok {
		return s
	}
	rhs := r.firstAssignment(id.Name)
	if rhs == nil {
		return opaque
	}
	if s, ok := r.stringValue(rhs, depth+1); ok {
		return s
	}
	switch v := rhs.(type) {
	case *ast.Ident:
		return r.operand(v, depth+1)
	case *ast.CallExpr:
		name := ""
		switch fn := v.Fun.(type) {
		case *ast.Ident:
			name = fn.Name
		case *ast.SelectorExpr:
			name = fn.Sel.Name
		}
		if r.pkg.tenantBuilders[name] {
			return " tenant_id = ? "
		}
	}
	return opaque
}

// builtStatement: a b.WriteString("SELECT …") call starts a statement
// written piecewise into a strings.Builder; the statement is that call and
// every later WriteString on the same builder in the function.
func (r *resolver) builtStatement(n ast.Node, built map[ast.Node]bool) (string, token.Pos, bool) {
	builder, arg, ok := writeString(n)
	if !ok {
		return "", 0, false
	}
	first, ok := r.stringValue(arg, 0)
	if !ok || !sqlStart.MatchString(normaliseSQL(first)) {
		return "", 0, false
	}
	var b strings.Builder
	ast.Inspect(r.fn, func(m ast.Node) bool {
		if m == nil || m.Pos() < n.Pos() {
			return true
		}
		if name, a, ok := writeString(m); ok && name == builder {
			built[m] = true
			if v, ok := r.stringValue(a, 0); ok {
				b.WriteString(v)
			} else {
				b.WriteString(r.operand(a, 0))
			}
			return false
		}
		return true
	})
	return b.String(), n.Pos(), true
}

func writeString(n ast.Node) (builder string, arg ast.Expr, ok bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", nil, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "WriteString" {
		return "", nil, false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", nil, false
	}
	return id.Name, call.Args[0], true
}

// firstAssignment finds the expression first assigned to a local name in
// the enclosing function (x := e, x, y := e1, e2, x, y := f(), var x = e).
func (r *resolver) firstAssignment(name string) ast.Expr {
	var found ast.Expr
	ast.Inspect(r.fn, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch a := n.(type) {
		case *ast.AssignStmt:
			for i, l := range a.Lhs {
				if li, ok := l.(*ast.Ident); ok && li.Name == name {
					if len(a.Rhs) == len(a.Lhs) {
						found = a.Rhs[i]
					} else if len(a.Rhs) == 1 {
						found = a.Rhs[0]
					}
					return false
				}
			}
		case *ast.ValueSpec:
			for i, l := range a.Names {
				if l.Name == name && i < len(a.Values) {
					found = a.Values[i]
					return false
				}
			}
		}
		return true
	})
	return found
}

type owned struct {
	name string
	node ast.Node
}

// ownedNodes splits a declaration into the parts a statement is named by:
// a function (Type.Method for methods) or each constant/variable.
func ownedNodes(decl ast.Decl) []owned {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		name := d.Name.Name
		if d.Recv != nil && len(d.Recv.List) > 0 {
			name = recvName(d.Recv.List[0].Type) + "." + name
		}
		return []owned{{name, d}}
	case *ast.GenDecl:
		var out []owned
		for _, spec := range d.Specs {
			if vs, ok := spec.(*ast.ValueSpec); ok && len(vs.Names) > 0 {
				out = append(out, owned{vs.Names[0].Name, vs})
			}
		}
		return out
	}
	return nil
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

var (
	reLineComment  = regexp.MustCompile(`--[^\n]*`)
	reBlockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	reSQLString    = regexp.MustCompile(`'(?:[^'\\]|\\.|'')*'`)
	reSpaces       = regexp.MustCompile(`\s+`)
	reDupUpdate    = regexp.MustCompile(`\bon\s+duplicate\s+key\s+update\b`)
	reForUpdate    = regexp.MustCompile(`\bfor\s+update\b`)
)

func normaliseSQL(s string) string {
	s = strings.ToLower(s)
	s = reSQLString.ReplaceAllString(s, "?")
	s = reBlockComment.ReplaceAllString(s, " ")
	s = reLineComment.ReplaceAllString(s, " ")
	s = strings.ReplaceAll(s, "`", "")
	s = reSpaces.ReplaceAllString(s, " ")
	// "update" here names no table.
	s = reDupUpdate.ReplaceAllString(s, "on duplicate key set")
	s = reForUpdate.ReplaceAllString(s, "for_update")
	return strings.TrimSpace(s)
}

// The rules themselves, on statements made to break them.
func TestSQLRulesCatchViolations(t *testing.T) {
	s := schemaInfo{
		tenantKey: map[string]string{"tenants": "id", "leads": "tenant_id", "sources": "tenant_id", "outbox": "tenant_id", "logins": ""},
		autoInc:   map[string]map[string]bool{"outbox": {"seq": true}},
	}
	cases := []struct {
		sql  string
		want string // "" = no problem
	}{
		{"select id from leads where tenant_id = ? and id = ?", ""},
		{"select id from leads where (tenant_id, id) in ((?, ?), (?, ?))", ""},
		{"select l.id from leads l join sources s on s.tenant_id = l.tenant_id and s.id = l.source_id where l.tenant_id = ?", ""},
		{"select l.id from leads l join sources s on s.id = l.source_id where l.tenant_id = ?", "JOIN sources s"},
		{"select l.id from leads l join sources s on s.tenant_id = l.tenant_id where l.email = ?", "FROM leads l"},
		{"select tenant_id, id from leads where status = ? group by tenant_id", "FROM leads"},
		{"select id from leads where tenant_id = ? and source_id in (select id from sources where kind = ?)", "FROM sources"},
		{"select id from leads where tenant_id = ? and source_id in (select id from sources where tenant_id = ?)", ""},
		{"update leads set tenant_id = ? where id = ?", "UPDATE leads"},
		{"delete from leads where tenant_id in (?)", ""},
		{"insert into leads (id, email) values (?, ?)", "INSERT INTO leads without tenant_id"},
		{"insert into leads (tenant_id, id) values (?, ?) as new on duplicate key set email = new.email", "AS new"},
		{"insert into leads (tenant_id, id) values (?, ?) on duplicate key set email = values(email)", ""},
		{"insert into logins (email) values (?)", "INSERT INTO logins without a tenant key"},
		{"select id from leads where tenant_id = ? limit 10 for_update skip locked", "SKIP LOCKED"},
		{"select seq from outbox where tenant_id = ? order by seq limit 10", "AUTO_INCREMENT"},
		{"select o.seq from outbox o where o.tenant_id = ? order by o.seq desc", "AUTO_INCREMENT"},
		{"select id from outbox where tenant_id = ? order by created_at, id", ""},
		{"select payload->>'$.a' from leads where tenant_id = ?", "->>"},
		{"select id from tenants where id = ?", ""},
		{"select id from tenants where slug = ?", "FROM tenants"},
	}
	for _, c := range cases {
		got := strings.Join(checkStatement(normaliseSQL(c.sql), s), "; ")
		if c.want == "" && got != "" {
			t.Errorf("%s: unexpected %s", c.sql, got)
		}
		if c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want a problem mentioning %q", c.sql, got, c.want)
		}
	}
}
