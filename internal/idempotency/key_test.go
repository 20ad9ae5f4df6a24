package idempotency

import (
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   string
		ok     bool
	}{
		{"uuid", []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7"}, "7c9e6679-7425-40de-944b-e07fc1f90ae7", true},
		{"sf-string quotes stripped", []string{`"7c9e6679"`}, "7c9e6679", true},
		{"sf-string escapes", []string{`"a\"b\\c"`}, `a"b\c`, true},
		{"surrounding spaces", []string{"  abc  "}, "abc", true},
		{"inner space", []string{"a b"}, "a b", true},
		{"one char", []string{"x"}, "x", true},
		{"255 chars", []string{strings.Repeat("k", 255)}, strings.Repeat("k", 255), true},
		{"missing", nil, "", false},
		{"two headers", []string{"a", "b"}, "", false},
		{"empty", []string{""}, "", false},
		{"empty quoted", []string{`""`}, "", false},
		{"256 chars", []string{strings.Repeat("k", 256)}, "", false},
		{"256 chars quoted", []string{`"` + strings.Repeat("k", 256) + `"`}, "", false},
		{"non-ascii", []string{"clé"}, "", false},
		{"control char", []string{"a\x01b"}, "", false},
		{"unterminated quote", []string{`"abc`}, "", false},
		{"bad escape", []string{`"a\nb"`}, "", false},
		{"bare quote inside sf-string", []string{`"a"b"`}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseKey(c.values)
			if c.ok != (err == nil) || got != c.want {
				t.Fatalf("ParseKey(%q) = %q, %v; want %q ok=%v", c.values, got, err, c.want, c.ok)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	same := []string{
		`{"b":1,"a":{"y":[1,2,{"k":"v"}],"x":null}}`,
		"{\n  \"a\": {\"x\": null, \"y\": [1, 2, {\"k\": \"v\"}]},\n  \"b\": 1\n}\n",
	}
	first, err := Canonical([]byte(same[0]))
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != `{"a":{"x":null,"y":[1,2,{"k":"v"}]},"b":1}` {
		t.Fatalf("canonical form %s", first)
	}
	for _, s := range same[1:] {
		got, err := Canonical([]byte(s))
		if err != nil || string(got) != string(first) {
			t.Fatalf("%q → %s, %v", s, got, err)
		}
	}
	// Big numbers and HTML characters survive unchanged.
	got, _ := Canonical([]byte(`{"n":12345678901234567890,"s":"<a&b>"}`))
	if string(got) != `{"n":12345678901234567890,"s":"<a&b>"}` {
		t.Fatalf("got %s", got)
	}
	if got, err := Canonical([]byte("  \n")); err != nil || got != nil {
		t.Fatalf("empty body: %q %v", got, err)
	}
	for _, bad := range []string{`{"a":`, `{"a":1} {"b":2}`, `{"a":1}x`, `nope`} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	a := Fingerprint("POST", "/api/v1/leads", first)
	if a == Fingerprint("POST", "/api/v1/leads/x/notes", first) || a == Fingerprint("PUT", "/api/v1/leads", first) {
		t.Fatal("the fingerprint must cover method and path")
	}
}
