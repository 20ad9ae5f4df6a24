package keyset_test

import (
	"reflect"
	"testing"

	"leadpipe/internal/keyset"
)

func TestCut(t *testing.T) {
	id := func(s string) string { return s }
	for _, tc := range []struct {
		rows     []string
		want     []string
		wantNext string
	}{
		{nil, nil, ""},
		{[]string{"c", "b"}, []string{"c", "b"}, ""},
		{[]string{"c", "b", "a"}, []string{"c", "b"}, "b"},
	} {
		got, next := keyset.Cut(tc.rows, 2, id)
		if !reflect.DeepEqual(got, tc.want) || next != tc.wantNext {
			t.Errorf("Cut(%q, 2) = %q %q, want %q %q", tc.rows, got, next, tc.want, tc.wantNext)
		}
	}
}

func TestPage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		typ      string
		before   string
		wantSQL  string
		wantArgs []any
	}{
		{"first page, no filter", "", "", "SELECT id FROM t WHERE tenant_id = ? ORDER BY id DESC LIMIT ?", []any{"T", 50}},
		{"filter", "x", "", "SELECT id FROM t WHERE tenant_id = ? AND type = ? ORDER BY id DESC LIMIT ?", []any{"T", "x", 50}},
		{"filter and cursor", "x", "01J", "SELECT id FROM t WHERE tenant_id = ? AND type = ? AND id < ? ORDER BY id DESC LIMIT ?", []any{"T", "x", "01J", 50}},
		{"cursor", "", "01J", "SELECT id FROM t WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?", []any{"T", "01J", 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sql, args := keyset.New("SELECT id FROM t WHERE tenant_id = ?", "T").And(tc.typ != "", "type = ?", tc.typ).Page(tc.before, 50)
			if sql != tc.wantSQL || !reflect.DeepEqual(args, tc.wantArgs) {
				t.Fatalf("got %q %v, want %q %v", sql, args, tc.wantSQL, tc.wantArgs)
			}
		})
	}
}
