package leads

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Tok is one piece of a pretty-printed JSON document; Class colours it
// (json-key, json-str, json-num, json-lit) and "" is punctuation and space.
// Text is escaped by templ like any other text.
type Tok struct {
	Class, Text string
}

// maxPayloadShown caps the highlighted payload; the rest is cut with a note.
const maxPayloadShown = 256 << 10

// PayloadTokens pretty-prints raw JSON and splits it into coloured tokens.
// Anything that is not JSON comes back as one plain token.
func PayloadTokens(raw []byte) (toks []Tok, truncated bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return []Tok{{Text: strings.ToValidUTF8(string(raw), "\uFFFD")}}, false
	}
	s := buf.String()
	if len(s) > maxPayloadShown {
		cut := maxPayloadShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, truncated = s[:cut], true
	}
	var plain strings.Builder
	flush := func() {
		if plain.Len() > 0 {
			toks = append(toks, Tok{Text: plain.String()})
			plain.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(s) {
				j++
			}
			cls := "json-str"
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\n') {
				k++
			}
			if k < len(s) && s[k] == ':' {
				cls = "json-key"
			}
			flush()
			toks = append(toks, Tok{Class: cls, Text: s[i:j]})
			i = j
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(s) && strings.IndexByte("0123456789.eE+-", s[j]) >= 0 {
				j++
			}
			flush()
			toks = append(toks, Tok{Class: "json-num", Text: s[i:j]})
			i = j
		case c == 't' || c == 'f' || c == 'n':
			j := i
			for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
				j++
			}
			flush()
			toks = append(toks, Tok{Class: "json-lit", Text: s[i:j]})
			i = j
		default:
			plain.WriteByte(c)
			i++
		}
	}
	flush()
	return toks, truncated
}
