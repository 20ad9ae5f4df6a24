package kinds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxJSONDepth is the deepest nesting MariaDB 10.11 stores: its JSON_VALID
// (the check on JSON columns) is false from 32 nested levels on (measured).
const maxJSONDepth = 31

// object is a decoded JSON object whose members stay raw. Lookups are exact,
// unlike encoding/json's case-insensitive matching of struct fields.
type object map[string]json.RawMessage

// decodeObject decodes raw when it is a JSON object, else returns nil.
// Members alias raw (capacity-capped, so an append never writes into it).
func decodeObject(raw []byte) object {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil
	}
	return splitObject(raw)
}

// splitObject splits a JSON object already known to be valid into its
// members in one pass, as json.Unmarshal into an object would (a repeated
// key keeps its last value) without copying or decoding the values. A
// member's value is valid JSON too, so object lookups need no new check.
//
// It earns its place: json.Unmarshal into an object instead re-validates
// and copies at every nested lookup, and a request's Verify+Parse+Map took
// up to twice as long (docs/BENCHMARKS.md, "Settings and the numbers
// behind them"): more than the 5 % we allow such code to save. Typed
// structs would match member names case-insensitively, which the kinds'
// lookups must not.
func splitObject(b []byte) object {
	o := object{}
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != '}' {
		end := stringEnd(b, i)
		key, ok := unquote(b[i:end])
		if !ok {
			return nil
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // the colon
		vEnd := valueEnd(b, i)
		o[key] = json.RawMessage(b[i:vEnd:vEnd])
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return o
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index after the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // number, true, false, null
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return len(b)
	}
}

// unquote decodes a JSON string token: plain printable ASCII directly,
// anything else (escapes, other bytes) as encoding/json does it.
func unquote(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

// object returns member key when it is an object, else nil.
func (o object) object(key string) object {
	if v, ok := o[key]; ok && len(v) > 0 && v[0] == '{' {
		return splitObject(v) // a member of a checked document
	}
	return nil
}

// array returns member key when it is an array, else nil.
func (o object) array(key string) []json.RawMessage {
	v, ok := o[key]
	if !ok {
		return nil
	}
	var a []json.RawMessage
	if json.Unmarshal(v, &a) != nil {
		return nil
	}
	return a
}

// scalar returns member key as text: a string trimmed, a number as written,
// "" for anything else.
func (o object) scalar(key string) string {
	return scalarText(o[key])
}

func (o object) boolean(key string) bool {
	var b bool
	return json.Unmarshal(o[key], &b) == nil && b
}

func scalarText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		s, ok := unquote(raw)
		if !ok {
			return ""
		}
		return strings.TrimSpace(s)
	case c == '-' || (c >= '0' && c <= '9'):
		if json.Valid(raw) {
			return string(raw)
		}
	}
	return ""
}

// personName is name, else first_name + last_name.
func personName(o object) string {
	if n := o.scalar("name"); n != "" {
		return n
	}
	return joinName(o.scalar("first_name"), o.scalar("last_name"))
}

func joinName(first, last string) string {
	return strings.TrimSpace(first + " " + last)
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// firstTime returns the first of keys that holds a recognisable time.
func firstTime(o object, keys ...string) *time.Time {
	for _, k := range keys {
		if t := parseTime(o[k]); t != nil {
			return t
		}
	}
	return nil
}

// timeLayouts: RFC 3339 (fractions are accepted by Parse anyway), and the
// Graph API's offset without a colon.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05-0700", "2006-01-02T15:04:05.999999999-0700", "2006-01-02 15:04:05"}

// parseTime reads an RFC 3339-like string, or unix seconds as a number or
// numeric string. Values of 1e11 and more (year 5138 in seconds) are taken as
// milliseconds, as some senders use them.
func parseTime(raw json.RawMessage) *time.Time {
	s := scalarText(raw)
	if s == "" {
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 || n >= 1e14 {
			return nil
		}
		t := time.Unix(n, 0)
		if n >= 1e11 {
			t = time.UnixMilli(n)
		}
		t = t.UTC()
		return &t
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if !(n > 0 && n < 1e14) {
			return nil
		}
		if n >= 1e11 {
			n /= 1000
		}
		t := time.UnixMicro(int64(math.Round(n * 1e6))).UTC()
		return &t
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	return nil
}

// checkBody accepts a body only when it is a JSON object that both MySQL and
// MariaDB will store in a JSON column.
func checkBody(body []byte) error {
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: body is not valid UTF-8", ErrUnparseable)
	}
	if !json.Valid(body) {
		return fmt.Errorf("%w: body is not valid JSON", ErrUnparseable)
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); t[0] != '{' {
		return fmt.Errorf("%w: body is not a JSON object", ErrUnparseable)
	}
	return storable(body)
}

var (
	errTooDeep   = fmt.Errorf("%w: JSON nested deeper than %d levels", ErrUnparseable, maxJSONDepth)
	errSurrogate = fmt.Errorf("%w: JSON string holds an unpaired UTF-16 surrogate escape", ErrUnparseable)
	errBigNumber = fmt.Errorf("%w: JSON number out of double range", ErrUnparseable)
)

// storable checks valid JSON for what json.Valid allows but the databases
// reject: nesting deeper than maxJSONDepth (MariaDB), unpaired \uD800-\uDFFF
// escapes (both), numbers beyond float64 range (MySQL).
func storable(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '{' || c == '[':
			depth++
			if depth > maxJSONDepth {
				return errTooDeep
			}
		case c == '}' || c == ']':
			depth--
		case c == '"':
			for i++; b[i] != '"'; i++ {
				if b[i] != '\\' {
					continue
				}
				i++
				if b[i] != 'u' {
					continue
				}
				r := hex4(b[i+1 : i+5])
				i += 4
				if r < 0xD800 || r > 0xDFFF {
					continue
				}
				if r >= 0xDC00 || i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
					return errSurrogate
				}
				if lo := hex4(b[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					return errSurrogate
				}
				i += 6
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && strings.IndexByte("+-.0123456789eE", b[j]) >= 0 {
				j++
			}
			if _, err := strconv.ParseFloat(string(b[i:j]), 64); errors.Is(err, strconv.ErrRange) && !underflow(b[i:j]) {
				return errBigNumber
			}
			i = j - 1
		}
	}
	return nil
}

// underflow reports a tiny number (negative exponent), which parses to 0 and
// is stored fine.
func underflow(num []byte) bool {
	e := bytes.IndexAny(num, "eE")
	return e >= 0 && e+1 < len(num) && num[e+1] == '-'
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// storablePayload returns raw compacted and storable; input that fails only
// on encoding details (bad UTF-8, lone surrogates) is re-encoded rather than
// refused, since Map also takes objects from the Graph API.
func storablePayload(raw []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrUnparseable)
	}
	out := buf.Bytes()
	if !utf8.Valid(out) {
		out = bytes.ToValidUTF8(out, []byte("\uFFFD")) // invalid bytes can only sit inside strings
	}
	if err := storable(out); err != nil {
		if !errors.Is(err, errSurrogate) {
			return nil, err
		}
		if out, err = reencode(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// reencode decodes and encodes again: encoding/json turns lone surrogates into
// U+FFFD. Numbers keep their text; member order becomes sorted.
func reencode(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrUnparseable)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrUnparseable)
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if err := storable(out); err != nil {
		return nil, err
	}
	return out, nil
}

// rewriteMembers copies a JSON object in member order, compacted, dropping
// every member named drop and, when set is non-nil, replacing (or appending)
// member setName with set.
func rewriteMembers(b []byte, drop, setName string, set json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%w: body is not a JSON object", ErrUnparseable)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	n := 0
	write := func(k string, v []byte) {
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		out.Write(kb)
		out.WriteByte(':')
		_ = json.Compact(&out, v)
	}
	done := set == nil
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: body is not valid JSON", ErrUnparseable)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: body is not valid JSON", ErrUnparseable)
		}
		switch {
		case k == setName && set != nil:
			if !done {
				write(k, set)
				done = true
			}
		case k == drop:
		default:
			write(k, v)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: body is not valid JSON", ErrUnparseable)
	}
	if !done {
		write(setName, set)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
