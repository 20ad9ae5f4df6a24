// Package kinds implements the inbound webhook source kinds (docs/API.md, "Sources"):
// signature verification, splitting a body into deliveries, and mapping a
// stored delivery to lead fields. It is pure code: no database, no HTTP server.
package kinds

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors. Returned errors wrap one of them with a short reason that
// is safe to show to the sender (it never contains a secret).
var (
	ErrSignature    = errors.New("invalid signature")   // HTTP 401
	ErrUnparseable  = errors.New("unparseable payload") // 422, dead letter
	ErrNoDeliveryID = errors.New("no delivery id")      // 422, dead letter
	ErrNoNaturalKey = errors.New("no natural key")      // 422, dead letter
	ErrUnknownKind  = errors.New("unknown source kind")
	// ErrInvalidConfig: a source's stored config no longer validates (a
	// processing failure no retry can fix).
	ErrInvalidConfig = errors.New("invalid source config")
)

// MaxIDLen is the longest delivery id or source ref stored as is. MariaDB's
// INSERT IGNORE silently truncates longer values (two ids sharing a 191-byte
// prefix would then collide), so longer ids are hashed to a fixed width.
const MaxIDLen = 191

// tolerance is how far a signed timestamp may be from now, either way.
const tolerance = 300 // seconds

// Record is one delivery carried by a request.
type Record struct {
	DeliveryID string          // sender's delivery id, normalised with NormalizeID
	Raw        json.RawMessage // bytes to store; Map is later called on exactly these
}

// Lead holds the lead fields a record maps to.
type Lead struct {
	SourceRef string // natural key, normalised with NormalizeID
	Email     string
	Name      string
	// FirstName and LastName are set where the sender sends the name in
	// parts that arrive apart (HubSpot): the lead then changes that part
	// of its name and keeps the other. Name is not read then.
	FirstName string
	LastName  string
	Phone     string
	Company   string
	CreatedAt *time.Time // sender's creation time when the payload has one (UTC)
	// EventTime is when the sender produced this record, where the kind
	// carries one (docs/ARCHITECTURE.md, record order): the lead keeps the data of
	// the newest record. Nil: receipt order decides.
	EventTime *time.Time
	Tags      []string
	Payload   json.RawMessage // record object, compact JSON storable in MySQL and MariaDB
	// Touch is where the record says the lead came from (campaign, click
	// ids, landing page); Consent what the person agreed to. Nil: nothing.
	Touch   *Touches
	Consent *Consent
}

// Kind is one way senders sign and shape their webhooks.
type Kind interface {
	Name() string
	// Verify checks the request against every secret given (current and
	// in-grace ones) in constant time on the raw bytes. It returns nil or an
	// error wrapping ErrSignature.
	Verify(h http.Header, body []byte, secrets []string, now time.Time) error
	// Parse splits a verified body into records (ErrUnparseable, ErrNoDeliveryID).
	Parse(h http.Header, body []byte) ([]Record, error)
	// Map turns one record's Raw into lead fields, from the bytes alone
	// (ErrUnparseable, ErrNoNaturalKey).
	Map(raw json.RawMessage) (Lead, error)
}

// The kinds without a config are Kinds by their table (unconfigured).
var (
	_ Kind = (*genericKind)(nil)
	_ Kind = (*tokenKind)(nil)

	_ RequestVerifier = hubspotKind{}
	_ RequestVerifier = (*tokenKind)(nil)
)

// Kind names, as stored in a source's `kind`.
const (
	Standard    = "standard"
	Timestamped = "timestamped"
	Typeform    = "typeform"
	Meta        = "meta"
	GoogleAds   = "google-ads"
	Generic     = "generic"
	LinkedIn    = "linkedin"
	HubSpot     = "hubspot"
	Webflow     = "webflow"
	Tally       = "tally"
	TikTok      = "tiktok"
	Token       = "token"
	// Form is a tenant's own web form (form.go); it is made by the forms
	// API, never by the sources API, so it is not in Names.
	Form = "form"
)

// Names lists every kind name.
func Names() []string {
	return []string{Standard, Timestamped, Typeform, Meta, GoogleAds, Generic, LinkedIn, HubSpot, Webflow, Tally, TikTok, Token}
}

// unconfigured are the kinds that take no config, by name.
var unconfigured = map[string]Kind{
	Standard: standardKind{}, Timestamped: timestampedKind{}, Typeform: typeformKind{}, Meta: metaKind{},
	GoogleAds: googleAdsKind{}, Form: formKind{}, LinkedIn: linkedinKind{}, HubSpot: hubspotKind{},
	Webflow: webflowKind{}, Tally: tallyKind{}, TikTok: tiktokKind{},
}

// New returns the kind by name. config is the source's `config` JSON; only
// generic and token read it (an invalid config is an error), the others
// ignore it.
func New(name string, config json.RawMessage) (Kind, error) {
	if k, ok := unconfigured[name]; ok {
		return k, nil
	}
	switch name {
	case Generic:
		return configured(parseGenericConfig(config))
	case Token:
		return configured(parseTokenConfig(config))
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownKind, name)
}

// configured is a kind made from its config, or the config's problems (k
// is then nil, and Name reads no state).
func configured[K Kind](k K, problems map[string]string) (Kind, error) {
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalidConfig, k.Name(), joinProblems(problems))
	}
	return k, nil
}

// ValidateConfig returns field → message problems of a source config (empty
// when fine). Keys name the request field, e.g. "config.natural_key_path".
// Only generic takes a config; others accept only an absent, null or {} one.
func ValidateConfig(name string, config json.RawMessage) map[string]string {
	switch name {
	case Generic:
		_, problems := parseGenericConfig(config)
		return problems
	case Token:
		_, problems := parseTokenConfig(config)
		return problems
	case Standard, Timestamped, Typeform, Meta, GoogleAds, LinkedIn, HubSpot, Webflow, Tally, TikTok:
		if isEmptyConfig(config) {
			return map[string]string{}
		}
		return map[string]string{"config": "only generic and token sources take a config"}
	}
	return map[string]string{"kind": "must be one of " + strings.Join(Names(), ", ")}
}

// GenerateSecret returns a fresh random secret in the format the kind's
// senders use:
//   - standard:    "whsec_" + base64(24 random bytes), as Standard Webhooks/Svix issue them;
//   - timestamped: "whsec_" + hex(32 random bytes); the whole string is the key, as with Stripe;
//   - others:      hex(32 random bytes).
func GenerateSecret(name string) (string, error) {
	switch name {
	case Standard:
		return "whsec_" + base64.StdEncoding.EncodeToString(randomBytes(24)), nil
	case Timestamped:
		return "whsec_" + hex.EncodeToString(randomBytes(32)), nil
	case Typeform, Meta, GoogleAds, Generic, LinkedIn, HubSpot, Webflow, Tally, TikTok, Token:
		return hex.EncodeToString(randomBytes(32)), nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownKind, name)
}

// ValidateSecret reports whether a secret supplied by a user can work for the
// kind (for a 422 on source creation or rotation).
func ValidateSecret(name, secret string) error {
	if secret == "" {
		return errors.New("must not be empty")
	}
	if len(secret) > 1024 {
		return errors.New("must be at most 1024 bytes")
	}
	if strings.TrimSpace(secret) != secret {
		return errors.New("must not start or end with whitespace")
	}
	switch name {
	case Standard:
		if _, ok := standardKey(secret); !ok {
			return errors.New(`must be "whsec_" followed by base64`)
		}
	case Timestamped, Typeform, Meta, GoogleAds, Generic, LinkedIn, HubSpot, Webflow, Tally, TikTok:
	case Token:
		if len(secret) < 16 {
			return errors.New("must be at least 16 characters: it is the only proof a token sender gives")
		}
	default:
		return fmt.Errorf("%w: %q", ErrUnknownKind, name)
	}
	return nil
}

// NormalizeID returns id unchanged when it is valid UTF-8 of at most MaxIDLen
// bytes, else "sha256:" + hex(sha256(id)) (71 bytes).
func NormalizeID(id string) string {
	if len(id) <= MaxIDLen && utf8.ValidString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// cleanID trims an id (trailing spaces compare equal under PAD SPACE
// collations) and normalises it; "" stays "".
func cleanID(id string) string {
	id = strings.TrimSpace(id)
	if id == "" {
		return ""
	}
	return NormalizeID(id)
}

func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// hashedRecord checks body and returns it as its request's one record, with
// the delivery id idOf reads from it (cleaned), else the SHA-256 of the body.
func hashedRecord(body []byte, idOf func(doc object) string) ([]Record, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	id := cleanID(idOf(decodeObject(body)))
	if id == "" {
		id = bodyHash(body)
	}
	return []Record{{DeliveryID: id, Raw: clone(body)}}, nil
}

// namedRecord is hashedRecord for a body that must name its delivery: no id
// is an ErrNoDeliveryID saying the member missing is missing.
func namedRecord(body []byte, missing string, idOf func(doc object) string) ([]Record, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	id := cleanID(idOf(decodeObject(body)))
	if id == "" {
		return nil, fmt.Errorf("%w: %s is missing", ErrNoDeliveryID, missing)
	}
	return []Record{{DeliveryID: id, Raw: clone(body)}}, nil
}

// openRecord starts a Map: the record's object, its natural key (keyOf of
// the object) and the payload to store. No object is ErrUnparseable; no
// key, an ErrNoNaturalKey saying missing is missing.
func openRecord(raw json.RawMessage, missing string, keyOf func(doc object) string) (doc object, ref string, payload json.RawMessage, err error) {
	if doc = decodeObject(raw); doc == nil {
		return nil, "", nil, fmt.Errorf("%w: payload is not a JSON object", ErrUnparseable)
	}
	if ref = keyOf(doc); ref == "" {
		return nil, "", nil, fmt.Errorf("%w: %s is missing", ErrNoNaturalKey, missing)
	}
	if payload, err = storablePayload(raw); err != nil {
		return nil, "", nil, err
	}
	return doc, ref, payload, nil
}

// idSource is where a kind reads a request's delivery id: the header
// idHeader, else the value at idPath in the body, else (neither set) the
// SHA-256 of the body.
type idSource struct {
	idHeader string
	idPath   *jsonPath
}

// headerID is the delivery id in the header, "" when it is in the body.
func (s idSource) headerID(h http.Header) string {
	if s.idHeader == "" {
		return ""
	}
	return cleanID(h.Get(s.idHeader))
}

// records returns a checked body as its request's one record.
func (s idSource) records(h http.Header, body []byte) ([]Record, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	var id string
	switch {
	case s.idHeader != "":
		if id = cleanID(h.Get(s.idHeader)); id == "" {
			return nil, fmt.Errorf("%w: missing %s header", ErrNoDeliveryID, s.idHeader)
		}
	case s.idPath != nil:
		if id = cleanID(scalarText(s.idPath.lookup(body))); id == "" {
			return nil, fmt.Errorf("%w: nothing at %s", ErrNoDeliveryID, s.idPath)
		}
	default:
		id = bodyHash(body)
	}
	return []Record{{DeliveryID: id, Raw: clone(body)}}, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24 (it crashes instead)
	return b
}

func hmacSHA256(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

var dot = []byte{'.'}

// equalSecret compares two secrets without leaking their lengths.
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return hmac.Equal(ha[:], hb[:])
}

func noMatch() error { return fmt.Errorf("%w: no matching signature", ErrSignature) }

// Why a signature check refused a request, for the rejected-request
// inspector; both also match ErrSignature. Anything else that matches
// ErrSignature is a bad signature.
var (
	ErrMissingSignature = errors.New("missing signature")
	ErrStaleTimestamp   = errors.New("stale timestamp")
)

// sigError is a refusal with its reason; its message is the one the sender
// reads in the 401.
type sigError struct {
	msg    string
	reason error
	skew   int64 // seconds the signed time is behind now (negative: ahead)
}

func (e *sigError) Error() string   { return e.msg }
func (e *sigError) Unwrap() []error { return []error{ErrSignature, e.reason} }

func missingHeader(name string) error {
	return &sigError{msg: fmt.Sprintf("%v: missing %s header", ErrSignature, name), reason: ErrMissingSignature}
}

// Reject reasons (the rejected-request inspector's "reason").
const (
	ReasonMissingSignature = "missing_signature"
	ReasonBadSignature     = "bad_signature"
	ReasonStaleTimestamp   = "stale_timestamp"
	ReasonTooLarge         = "too_large"
	ReasonUnknownKind      = "unknown_kind"
	ReasonAddressRefused   = "address_refused"
	ReasonSecretInQuery    = "secret_in_query"
	ReasonBadForm          = "bad_form"
)

// RejectReason names why err refused a request and, for a stale
// timestamp, how many seconds the signed time was behind now (negative:
// ahead of it).
func RejectReason(err error) (reason string, skewSeconds *int64) {
	var se *sigError
	switch {
	case errors.Is(err, ErrUnknownKind), errors.Is(err, ErrInvalidConfig):
		return ReasonUnknownKind, nil
	case errors.Is(err, ErrMissingSignature):
		return ReasonMissingSignature, nil
	case errors.Is(err, ErrAddressNotAllowed):
		return ReasonAddressRefused, nil
	case errors.Is(err, ErrSecretInQuery):
		return ReasonSecretInQuery, nil
	case errors.Is(err, ErrFormBody):
		return ReasonBadForm, nil
	case errors.As(err, &se) && errors.Is(err, ErrStaleTimestamp):
		skew := se.skew
		return ReasonStaleTimestamp, &skew
	}
	return ReasonBadSignature, nil
}

// parseSignedTime parses a unix-seconds timestamp and checks it is within
// tolerance of now in both directions.
func parseSignedTime(s string, now time.Time) (int64, error) {
	t, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: timestamp is not unix seconds", ErrSignature)
	}
	n := now.Unix() // compared without subtraction so huge values cannot overflow
	switch {
	case t < n-tolerance:
		return 0, &sigError{msg: fmt.Sprintf("%v: timestamp is more than %d s old", ErrSignature, tolerance), reason: ErrStaleTimestamp, skew: skewOf(n, t)}
	case t > n+tolerance:
		return 0, &sigError{msg: fmt.Sprintf("%v: timestamp is more than %d s in the future", ErrSignature, tolerance), reason: ErrStaleTimestamp, skew: skewOf(n, t)}
	}
	return t, nil
}

// skewOf is n - t, clamped so that absurd timestamps cannot overflow.
func skewOf(n, t int64) int64 {
	const limit = 1 << 40
	switch {
	case t < n-limit:
		return limit
	case t > n+limit:
		return -limit
	}
	return n - t
}

// decodeBase64 accepts padded and unpadded, standard and URL alphabets; the
// four are mutually exclusive so the result is never ambiguous.
func decodeBase64(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var b []byte
		if b, err = enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, err
}

// cutPrefixFold removes prefix from s, ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func isEmptyConfig(config json.RawMessage) bool {
	s := strings.TrimSpace(string(config))
	if s == "" || s == "null" {
		return true
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(config, &m) == nil && len(m) == 0 && s[0] == '{'
}

// HeaderDeliveryID returns the delivery id a request carries in a header
// (standard: webhook-id; generic and token with delivery_id_header),
// exactly as Parse
// would return it, or "" when the kind takes it from the body. It lets the
// ingest path recognise a duplicate right after the signature check,
// without reading the body again.
func HeaderDeliveryID(k Kind, h http.Header) string {
	switch k := k.(type) {
	case standardKind:
		return standardID.headerID(h)
	case *genericKind:
		return k.headerID(h)
	case *tokenKind:
		return k.headerID(h)
	}
	return ""
}
