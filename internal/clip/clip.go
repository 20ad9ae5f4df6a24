// Package clip cuts strings to a size: a column's width, a log line's, a
// label's. It never splits a UTF-8 sequence.
package clip

import "unicode/utf8"

// Bytes returns s cut to at most n bytes on a rune boundary, with mark
// (e.g. "…", not counted in n) appended when it was cut.
func Bytes(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

// Runes returns s cut to at most n runes (a VARCHAR(n) column's
// characters), with mark (not counted in n) appended when it was cut.
func Runes(s string, n int, mark string) string {
	if len(s) <= n {
		return s // n bytes hold at most n runes
	}
	i := 0
	for r := 0; r < n; r++ {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + mark
}
