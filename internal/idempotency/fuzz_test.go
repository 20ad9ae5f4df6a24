package idempotency

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseKey: an accepted key is 1–255 printable ASCII; a bare key
// written as an RFC 8941 sf-string parses to itself; surrounding spaces do
// not matter; two header values are always refused.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"a", "9b2f1c7e-3c1a-4e0b-8f5e-2d1a7c9e4b10", `"quoted \" key"`, `"\\"`, `""`, `"a`, "a\tb", "\x7f",
		strings.Repeat("k", 255), strings.Repeat("k", 256), ` "x" `, `"a\b"`, "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := ParseKey([]string{v})
		if err == nil {
			if len(k) < 1 || len(k) > MaxKeyLen {
				t.Fatalf("ParseKey(%q) = %q: length %d", v, k, len(k))
			}
			for i := 0; i < len(k); i++ {
				if k[i] < 0x20 || k[i] > 0x7e {
					t.Fatalf("ParseKey(%q) = %q: byte %#x is not printable ASCII", v, k, k[i])
				}
			}
			q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
			if k2, err := ParseKey([]string{" " + q + "\t"}); err != nil || k2 != k {
				t.Fatalf("the quoted form %q of key %q parses to %q, %v", q, k, k2, err)
			}
		}
		if _, err := ParseKey([]string{v, v}); err == nil {
			t.Fatal("two Idempotency-Key values accepted")
		}
	})
}

// FuzzCanonical: the canonical form is valid JSON, means the same as the
// body, is its own canonical form, and does not depend on whitespace or
// member order (a re-indented body has the same fingerprint).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, ` { "a" : 1.50 , "a":2 } `, `"<&>"`, `1e400`, `{"\u00e9":"\ud800"}`, `[]`, ``,
		`{"a":1} {"b":2}`, `{"z":{"y":{"x":-0}}}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := Canonical(body)
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(body)) == 0 {
			if len(c) != 0 {
				t.Fatalf("empty body canonicalises to %q", c)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q: not JSON", body, c)
		}
		c2, err := Canonical(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("Canonical not idempotent: %q → %q → %q (%v)", body, c, c2, err)
		}
		v1, v2 := decodeNumbers(t, body), decodeNumbers(t, c)
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("Canonical(%q) = %q changes the meaning", body, c)
		}
		indented, err := json.MarshalIndent(v1, " ", "\t")
		if err != nil {
			return
		}
		c3, err := Canonical(indented)
		if err != nil || Fingerprint("POST", "/x", c3) != Fingerprint("POST", "/x", c) {
			t.Fatalf("re-indented body %q canonicalises to %q, not %q (%v)", indented, c3, c, err)
		}
	})
}

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}
