package kinds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GenericConfig is the `config` of a generic source.
type GenericConfig struct {
	SignatureHeader  string            `json:"signature_header,omitempty"` // default X-Signature
	Encoding         string            `json:"encoding,omitempty"`         // hex (default) or base64
	Prefix           string            `json:"prefix,omitempty"`           // e.g. "sha256="; accepted with or without
	DeliveryIDHeader string            `json:"delivery_id_header,omitempty"`
	DeliveryIDPath   string            `json:"delivery_id_path,omitempty"`
	NaturalKeyPath   string            `json:"natural_key_path"`
	EventTimePath    string            `json:"event_time_path,omitempty"` // the record's time: newer records win
	Fields           map[string]string `json:"fields,omitempty"`          // lead field → JSON path
}

// GenericFields are the lead fields a generic config may map.
var GenericFields = []string{"email", "name", "first_name", "last_name", "phone", "company", "created_at"}

// genericKind: HMAC-SHA256 of the body in a configurable header; ids and
// fields found by JSON paths.
type genericKind struct {
	header string
	base64 bool
	prefix string
	idSource
	keyPath    *jsonPath
	timePath   *jsonPath
	fieldPaths map[string]*jsonPath
}

func (*genericKind) Name() string { return Generic }

func parseGenericConfig(config json.RawMessage) (*genericKind, map[string]string) {
	problems := map[string]string{}
	var members map[string]json.RawMessage
	if s := bytes.TrimSpace(config); len(s) == 0 || string(s) == "null" {
		problems["config.natural_key_path"] = "is required"
		return nil, problems
	}
	if err := json.Unmarshal(config, &members); err != nil || members == nil {
		problems["config"] = "must be a JSON object"
		return nil, problems
	}
	str := func(name string) string {
		v, ok := members[name]
		if !ok || string(v) == "null" {
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			problems["config."+name] = "must be a string"
		}
		return strings.TrimSpace(s)
	}
	path := func(field, p string) *jsonPath {
		if p == "" {
			return nil
		}
		jp, err := parseJSONPath(p)
		if err != nil {
			problems[field] = err.Error()
		}
		return jp
	}
	known := map[string]bool{}
	for _, k := range []string{"signature_header", "encoding", "prefix", "delivery_id_header", "delivery_id_path", "natural_key_path", "event_time_path", "fields"} {
		known[k] = true
	}
	for k := range members {
		if !known[k] {
			problems["config."+k] = "is not a known setting"
		}
	}

	g := &genericKind{header: "X-Signature", fieldPaths: map[string]*jsonPath{}}
	if h := str("signature_header"); h != "" {
		if !validHeaderName(h) {
			problems["config.signature_header"] = "must be an HTTP header name"
		}
		g.header = h
	}
	switch enc := str("encoding"); enc {
	case "", "hex":
	case "base64":
		g.base64 = true
	default:
		problems["config.encoding"] = "must be hex or base64"
	}
	g.prefix = str("prefix")
	if len(g.prefix) > 32 || strings.ContainsAny(g.prefix, " \t\r\n") {
		problems["config.prefix"] = "must be at most 32 characters without spaces"
	}
	if h := str("delivery_id_header"); h != "" {
		if !validHeaderName(h) {
			problems["config.delivery_id_header"] = "must be an HTTP header name"
		}
		g.idHeader = h
	}
	g.idPath = path("config.delivery_id_path", str("delivery_id_path"))
	if g.idHeader != "" && g.idPath != nil {
		problems["config.delivery_id_path"] = "set delivery_id_header or delivery_id_path, not both"
	}
	if p := str("natural_key_path"); p == "" {
		if _, set := problems["config.natural_key_path"]; !set {
			problems["config.natural_key_path"] = "is required"
		}
	} else {
		g.keyPath = path("config.natural_key_path", p)
	}
	g.timePath = path("config.event_time_path", str("event_time_path"))
	if raw, ok := members["fields"]; ok && string(raw) != "null" {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil || fields == nil {
			problems["config.fields"] = "must be an object of field → JSON path"
		}
		for name, v := range fields {
			key := "config.fields." + name
			var p string
			switch {
			case !slices.Contains(GenericFields, name):
				problems[key] = "is not a lead field (" + strings.Join(GenericFields, ", ") + ")"
			case json.Unmarshal(v, &p) != nil:
				problems[key] = "must be a string"
			case strings.TrimSpace(p) != "":
				if jp := path(key, strings.TrimSpace(p)); jp != nil {
					g.fieldPaths[name] = jp
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return g, problems
}

func validHeaderName(h string) bool {
	if h == "" || len(h) > 128 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func joinProblems(problems map[string]string) string {
	keys := make([]string, 0, len(problems))
	for k := range problems {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + problems[k]
	}
	return strings.Join(parts, "; ")
}

func (g *genericKind) Verify(h http.Header, body []byte, secrets []string, _ time.Time) error {
	header, err := headerText(h, g.header)
	if err != nil {
		return err
	}
	if g.prefix != "" {
		header, _ = cutPrefixFold(header, g.prefix)
	}
	header, _ = cutPrefixFold(header, "sha256=") // never valid hex or base64, so safe to drop
	var sig []byte
	if g.base64 {
		sig, err = decodeBase64(header)
	} else {
		sig, err = hex.DecodeString(header)
	}
	if err != nil || len(sig) != sha256.Size {
		return fmt.Errorf("%w: %s header is not a SHA-256 HMAC", ErrSignature, g.header)
	}
	return matchBodyHMAC(body, secrets, sig)
}

// Parse: delivery id from the configured header or path (missing → no
// delivery id), else the SHA-256 of the body when neither is configured.
func (g *genericKind) Parse(h http.Header, body []byte) ([]Record, error) {
	return g.records(h, body)
}

func (g *genericKind) Map(raw json.RawMessage) (Lead, error) {
	if decodeObject(raw) == nil {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	ref := scalarText(g.keyPath.lookup(raw))
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: nothing at %s", ErrNoNaturalKey, g.keyPath)
	}
	payload, err := storablePayload(raw)
	if err != nil {
		return Lead{}, err
	}
	field := func(name string) string {
		if p := g.fieldPaths[name]; p != nil {
			return scalarText(p.lookup(raw))
		}
		return ""
	}
	l := Lead{
		SourceRef: NormalizeID(ref),
		Email:     field("email"),
		Name:      firstNonEmpty(field("name"), joinName(field("first_name"), field("last_name"))),
		Phone:     field("phone"),
		Company:   field("company"),
		Payload:   payload,
	}
	if p := g.fieldPaths["created_at"]; p != nil {
		l.CreatedAt = parseTime(p.lookup(raw))
	}
	if g.timePath != nil {
		l.EventTime = parseTime(g.timePath.lookup(raw))
	}
	return l, nil
}

// jsonPath is a small JSONPath subset: $ then .name, [index] or ["name"].
type jsonPath struct {
	text string
	segs []pathSeg
}

type pathSeg struct {
	key   string
	index int // -1 for a key
}

func (p *jsonPath) String() string { return p.text }

func parseJSONPath(s string) (*jsonPath, error) {
	if len(s) > 256 {
		return nil, errors.New("must be at most 256 characters")
	}
	if !strings.HasPrefix(s, "$") {
		return nil, errors.New("must be a JSON path like $.lead.id")
	}
	p := &jsonPath{text: s}
	for i := 1; i < len(s); {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("has an empty name at offset %d", i)
			}
			p.segs = append(p.segs, pathSeg{key: s[i+1 : j], index: -1})
			i = j
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("has an unclosed [ at offset %d", i)
			}
			inner := s[i+1 : i+end]
			if len(inner) >= 2 && (inner[0] == '"' || inner[0] == '\'') && inner[len(inner)-1] == inner[0] {
				p.segs = append(p.segs, pathSeg{key: inner[1 : len(inner)-1], index: -1})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || inner[0] < '0' || inner[0] > '9' {
					return nil, fmt.Errorf("has an invalid index [%s]", inner)
				}
				p.segs = append(p.segs, pathSeg{index: n})
			}
			i += end + 1
		default:
			return nil, fmt.Errorf("expects . or [ at offset %d", i)
		}
	}
	return p, nil
}

// lookup returns the value at the path, or nil.
func (p *jsonPath) lookup(raw []byte) json.RawMessage {
	if p == nil {
		return nil
	}
	if len(p.segs) == 0 && !json.Valid(raw) {
		return nil // "$" names the whole document, which must be one
	}
	cur := json.RawMessage(raw)
	for _, seg := range p.segs {
		if seg.index < 0 {
			v, ok := decodeObject(cur)[seg.key]
			if !ok {
				return nil
			}
			cur = v
			continue
		}
		var arr []json.RawMessage
		if json.Unmarshal(cur, &arr) != nil || seg.index >= len(arr) {
			return nil
		}
		cur = arr[seg.index]
	}
	return cur
}
