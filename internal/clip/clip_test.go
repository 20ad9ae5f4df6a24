package clip

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		name, s   string
		n         int
		mark      string
		bytes, rs string
	}{
		{"short", "abc", 5, "…", "abc", "abc"},
		{"exact", "abcde", 5, "…", "abcde", "abcde"},
		{"ascii", "abcdef", 3, "…", "abc…", "abc…"},
		{"no mark", "abcdef", 3, "", "abc", "abc"},
		{"multibyte boundary", "héllo", 2, "", "h", "hé"},
		{"inside a rune", "日本語", 4, "…", "日…", "日本語"},
		{"zero", "abc", 0, "…", "…", "…"},
		{"runes fit, bytes do not", "ééé", 3, "", "é", "ééé"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Bytes(c.s, c.n, c.mark); got != c.bytes || !utf8.ValidString(got) {
				t.Errorf("Bytes(%q, %d) = %q, want %q", c.s, c.n, got, c.bytes)
			}
			if got := Runes(c.s, c.n, c.mark); got != c.rs {
				t.Errorf("Runes(%q, %d) = %q, want %q", c.s, c.n, got, c.rs)
			}
		})
	}
}
