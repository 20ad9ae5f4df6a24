package kinds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// token: senders that cannot sign (Zapier, Make, n8n, Pipedream, Unbounce,
// Gravity Forms, Contact Form 7, Jotform; docs/SENDERS.md, "Senders that
// cannot sign"). The secret travels as is: "Authorization: Bearer <secret>",
// HTTP Basic with the secret as the password (any user name), or the header
// config.header names. It is compared in constant time on a fixed-width
// hash, so a password that is a prefix of the secret fails. A secret in the
// query string is refused. config.allowed_ips (CIDRs) limits the client
// address. A sender that cannot even set a header posts to the source's
// secret URL instead (SecretURLToken).
type TokenConfig struct {
	Header           string            `json:"header,omitempty"`
	AllowedIPs       []string          `json:"allowed_ips,omitempty"`
	DeliveryIDHeader string            `json:"delivery_id_header,omitempty"`
	DeliveryIDPath   string            `json:"delivery_id_path,omitempty"`
	NaturalKeyPath   string            `json:"natural_key_path,omitempty"`
	Fields           map[string]string `json:"fields,omitempty"`
	Preset           string            `json:"preset,omitempty"` // the catalog entry it was made from
}

type tokenKind struct {
	header  string
	allowed []netip.Prefix
	idSource
	keyPath *jsonPath
	fields  map[string]*jsonPath
}

func (*tokenKind) Name() string { return Token }

func parseTokenConfig(config json.RawMessage) (*tokenKind, map[string]string) {
	problems := map[string]string{}
	t := &tokenKind{fields: map[string]*jsonPath{}}
	if isEmptyConfig(config) {
		return t, problems
	}
	var c TokenConfig
	dec := json.NewDecoder(strings.NewReader(string(config)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		problems["config"] = "must be an object with header, allowed_ips, delivery_id_header, delivery_id_path, natural_key_path, fields, preset"
		return nil, problems
	}
	if h := strings.TrimSpace(c.Header); h != "" {
		if !validHeaderName(h) {
			problems["config.header"] = "must be an HTTP header name"
		}
		t.header = h
	}
	for i, s := range c.AllowedIPs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			a, aerr := netip.ParseAddr(strings.TrimSpace(s))
			if aerr != nil {
				problems[fmt.Sprintf("config.allowed_ips[%d]", i)] = "must be a CIDR like 203.0.113.0/24 or an address"
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		t.allowed = append(t.allowed, p.Masked())
	}
	if h := strings.TrimSpace(c.DeliveryIDHeader); h != "" {
		if !validHeaderName(h) {
			problems["config.delivery_id_header"] = "must be an HTTP header name"
		}
		t.idHeader = h
	}
	path := func(field, p string) *jsonPath {
		if p = strings.TrimSpace(p); p == "" {
			return nil
		}
		jp, err := parseJSONPath(p)
		if err != nil {
			problems[field] = err.Error()
		}
		return jp
	}
	t.idPath = path("config.delivery_id_path", c.DeliveryIDPath)
	if t.idHeader != "" && t.idPath != nil {
		problems["config.delivery_id_path"] = "set delivery_id_header or delivery_id_path, not both"
	}
	t.keyPath = path("config.natural_key_path", c.NaturalKeyPath)
	for name, p := range c.Fields {
		if !slices.Contains(GenericFields, name) {
			problems["config.fields."+name] = "is not a lead field (" + strings.Join(GenericFields, ", ") + ")"
			continue
		}
		if jp := path("config.fields."+name, p); jp != nil {
			t.fields[name] = jp
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return t, problems
}

// Verify checks the headers alone: it refuses a source limited to
// addresses (the address is not known here).
func (t *tokenKind) Verify(h http.Header, body []byte, secrets []string, now time.Time) error {
	return t.VerifyRequest(Request{Header: h}, body, secrets, now)
}

// ErrSecretInQuery: a secret was sent in the URL's query string, where
// proxies and logs keep it. Refused even when it is right.
var ErrSecretInQuery = fmt.Errorf("%w: a secret is never accepted in the query string; send it in the Authorization header", ErrSignature)

func (t *tokenKind) VerifyRequest(r Request, _ []byte, secrets []string, _ time.Time) error {
	if err := t.checkAddr(r.ClientAddr); err != nil {
		return err
	}
	if err := secretInQuery(r.URI, secrets); err != nil {
		return err
	}
	var given []string
	if auth := strings.TrimSpace(r.Header.Get("Authorization")); auth != "" {
		if v, ok := cutPrefixFold(auth, "Bearer "); ok {
			given = append(given, strings.TrimSpace(v))
		} else if v, ok := cutPrefixFold(auth, "Basic "); ok {
			if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v)); err == nil {
				if _, pass, ok := strings.Cut(string(raw), ":"); ok {
					given = append(given, pass)
				}
			}
		}
	}
	if t.header != "" {
		if v := strings.TrimSpace(r.Header.Get(t.header)); v != "" {
			given = append(given, v)
		}
	}
	if len(given) == 0 {
		name := "Authorization"
		if t.header != "" {
			name += " or " + t.header
		}
		return missingHeader(name)
	}
	for _, g := range given {
		for _, secret := range secrets {
			if secret != "" && equalSecret(g, secret) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: the token does not match", ErrSignature)
}

// ErrAddressNotAllowed: the client address is outside allowed_ips.
var ErrAddressNotAllowed = fmt.Errorf("%w: the client address is not in the source's allowed_ips", ErrSignature)

func (t *tokenKind) checkAddr(a netip.Addr) error {
	if len(t.allowed) == 0 {
		return nil
	}
	a = a.Unmap()
	for _, p := range t.allowed {
		if a.IsValid() && p.Contains(a) {
			return nil
		}
	}
	return &sigError{msg: ErrAddressNotAllowed.Error(), reason: ErrAddressNotAllowed}
}

// secretInQuery refuses a URI whose query carries one of the secrets (or
// its secret-URL token), in any parameter.
func secretInQuery(uri string, secrets []string) error {
	_, rawQuery, ok := strings.Cut(uri, "?")
	if !ok || rawQuery == "" {
		return nil
	}
	q, _ := url.ParseQuery(rawQuery)
	for _, vals := range q {
		for _, v := range vals {
			for _, s := range secrets {
				if s != "" && (equalSecret(v, s) || equalSecret(v, SecretURLToken(s))) {
					return &sigError{msg: ErrSecretInQuery.Error(), reason: ErrSecretInQuery}
				}
			}
		}
	}
	return nil
}

// VerifyURLToken checks a secret URL's token against every live secret, and
// the client address against allowed_ips (k is a token kind).
func VerifyURLToken(k Kind, r Request, urlToken string, secrets []string) bool {
	t, ok := k.(*tokenKind)
	if !ok || t.checkAddr(r.ClientAddr) != nil {
		return false
	}
	match := false
	for _, s := range secrets {
		if s != "" && equalSecret(urlToken, SecretURLToken(s)) {
			match = true // no early return: the time does not tell which secret
		}
	}
	return match
}

// SecretURLToken is the path segment of a token source's secret webhook
// URL: 128 bits derived from the secret, so it rotates with the secret and
// stays valid as long as that secret's grace.
func SecretURLToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("leadpipe secret webhook url"))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Parse: the delivery id from the configured header or path, else the
// SHA-256 of the body (a sender's retry is then a duplicate).
func (t *tokenKind) Parse(h http.Header, body []byte) ([]Record, error) {
	return t.records(h, body)
}

// Map: fields by the configured paths, else by name from the top level (or
// an Unbounce body's unpacked data.json, or a Webflow body's payload.data);
// natural key from the configured path, else the email.
func (t *tokenKind) Map(raw json.RawMessage) (Lead, error) {
	doc := decodeObject(raw)
	if doc == nil {
		return Lead{}, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	payload, err := storablePayload(raw)
	if err != nil {
		return Lead{}, err
	}
	flat := doc
	// Unbounce's unpacked data.json, and a Webflow dashboard webhook's
	// payload.data, hold the form's fields.
	for _, d := range []object{doc.object("data.json"), doc.object("payload").object("data")} {
		if d == nil {
			continue
		}
		merged := object{}
		for k, v := range flat {
			merged[k] = v
		}
		for k, v := range d {
			merged[k] = firstValue(v)
		}
		flat = merged
	}
	l := flatLead(flat)
	field := func(name string) string {
		if p := t.fields[name]; p != nil {
			return scalarText(firstValue(p.lookup(raw)))
		}
		return ""
	}
	l.Email = firstNonEmpty(field("email"), l.Email)
	l.Name = firstNonEmpty(field("name"), joinName(field("first_name"), field("last_name")), l.Name)
	l.Phone = firstNonEmpty(field("phone"), l.Phone)
	l.Company = firstNonEmpty(field("company"), l.Company)
	if p := t.fields["created_at"]; p != nil {
		l.CreatedAt = parseTime(p.lookup(raw))
	}
	ref := strings.ToLower(l.Email)
	if t.keyPath != nil {
		ref = scalarText(t.keyPath.lookup(raw))
		if ref == "" {
			return Lead{}, fmt.Errorf("%w: nothing at %s", ErrNoNaturalKey, t.keyPath)
		}
	}
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: no natural_key_path is set and the body has no email", ErrNoNaturalKey)
	}
	l.SourceRef, l.Payload = NormalizeID(ref), payload
	return l, nil
}

// firstValue unwraps a one-element array (Unbounce sends every field as a
// list of values).
func firstValue(v json.RawMessage) json.RawMessage {
	var arr []json.RawMessage
	if len(v) > 0 && v[0] == '[' && json.Unmarshal(v, &arr) == nil && len(arr) > 0 {
		return arr[0]
	}
	return v
}
