package leads

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clip"
	"leadpipe/internal/tenants"
)

// Field limits (the columns' sizes; strict mode would reject longer values).
const (
	maxName    = 255
	maxEmail   = 320
	maxPhone   = 64
	maxCompany = 255
	maxTags    = 50
	maxTagLen  = 64
	maxNoteLen = 10000
	maxQLen    = 100
)

// CreateInput is POST /api/v1/leads: a lead a person typed in.
type CreateInput struct {
	Name    string   `json:"name"`
	Email   string   `json:"email"`
	Phone   string   `json:"phone"`
	Company string   `json:"company"`
	Tags    []string `json:"tags"`
}

// PatchInput is PATCH /api/v1/leads/{id} as a JSON merge patch over the
// human-owned fields: nil means "leave as is".
type PatchInput struct {
	Status *string
	// OwnerSet with a nil OwnerID clears the owner (JSON null).
	OwnerSet bool
	OwnerID  *string
	Tags     *[]string
	NextStep *string // "" clears it
	// DueSet with a nil DueAt clears the due date (JSON null).
	DueSet bool
	DueAt  *time.Time
}

// MaxNextStep is the longest next step, in characters.
const MaxNextStep = 500

// Empty reports a patch that changes nothing.
func (p PatchInput) Empty() bool {
	return p.Status == nil && !p.OwnerSet && p.Tags == nil && p.NextStep == nil && !p.DueSet
}

// ParseNextStep checks a next step: trimmed, at most MaxNextStep characters.
func ParseNextStep(s string) (string, string) {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > MaxNextStep {
		return "", "is too long (at most 500 characters)"
	}
	return s, ""
}

// senderOwned are refreshed by every delivery: people cannot edit them.
var senderOwned = map[string]bool{"payload": true, "email": true, "name": true, "phone": true, "company": true,
	"source_created_at": true, "last_seen_at": true, "times_seen": true}

var readOnly = map[string]bool{"id": true, "source_id": true, "source_ref": true, "version": true,
	"created_at": true, "updated_at": true}

// unknownFields names, as a 422's fields, the keys of m other than known.
func unknownFields(m map[string]json.RawMessage, known ...string) map[string]string {
	bad := map[string]string{}
	for k := range m {
		if !slices.Contains(known, k) {
			bad[k] = "unknown field (send " + strings.Join(known, " and ") + ")"
		}
	}
	return bad
}

// decodeObject splits a JSON object into its members (400 when the body is
// not a JSON object).
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apperr.New(apperr.BadRequest, "request body is empty: send a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, apperr.New(apperr.BadRequest, "malformed JSON: the body must be a JSON object")
	}
	return m, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// stringField decodes a string member; null is the empty string.
func stringField(m map[string]json.RawMessage, name string, bad map[string]string) string {
	v, ok := m[name]
	if !ok || isNull(v) {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		bad[name] = "must be a string"
		return ""
	}
	return strings.TrimSpace(s)
}

func tagsField(m map[string]json.RawMessage, bad map[string]string) []string {
	v, ok := m["tags"]
	if !ok || isNull(v) {
		return []string{}
	}
	var in []string
	if err := json.Unmarshal(v, &in); err != nil {
		bad["tags"] = "must be an array of strings"
		return nil
	}
	out, msg := NormalizeTags(in)
	if msg != "" {
		bad["tags"] = msg
	}
	return out
}

// NormalizeTags trims tags, drops duplicates (keeping the first) and checks
// limits; the message is empty when the tags are acceptable.
func NormalizeTags(in []string) ([]string, string) {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, "tags must not be empty"
		}
		if utf8.RuneCountInString(t) > maxTagLen || strings.IndexFunc(t, unicode.IsControl) >= 0 {
			return nil, "each tag is at most 64 characters, without control characters"
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) > maxTags {
		return nil, "at most 50 tags"
	}
	return out, ""
}

func checkLen(bad map[string]string, name, v string, n int) {
	if utf8.RuneCountInString(v) > n {
		bad[name] = "is too long (at most " + itoa(n) + " characters)"
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// ParseCreate decodes and validates a manual lead. Unknown members are
// rejected (422) so a typo never silently drops a field.
func ParseCreate(body []byte) (CreateInput, error) {
	m, err := decodeObject(body)
	if err != nil {
		return CreateInput{}, err
	}
	bad := map[string]string{}
	in := CreateInput{
		Name:    stringField(m, "name", bad),
		Email:   stringField(m, "email", bad),
		Phone:   stringField(m, "phone", bad),
		Company: stringField(m, "company", bad),
		Tags:    tagsField(m, bad),
	}
	for k := range m {
		switch k {
		case "name", "email", "phone", "company", "tags":
		case "status", "owner_id":
			bad[k] = "set it with PATCH /api/v1/leads/{id} after creating the lead"
		default:
			bad[k] = "unknown field"
		}
	}
	checkLen(bad, "name", in.Name, maxName)
	checkLen(bad, "email", in.Email, maxEmail)
	checkLen(bad, "phone", in.Phone, maxPhone)
	checkLen(bad, "company", in.Company, maxCompany)
	if in.Email != "" && bad["email"] == "" && !tenants.ValidEmail(in.Email) {
		bad["email"] = "must be an email address"
	}
	if in.Name == "" && in.Email == "" && in.Phone == "" && len(bad) == 0 {
		bad["name"] = "give at least a name, an email or a phone"
	}
	if len(bad) > 0 {
		return CreateInput{}, apperr.InvalidFields(bad)
	}
	return in, nil
}

// ParsePatch decodes a merge patch of human-owned fields. Sender-owned and
// read-only members are rejected by name (422).
func ParsePatch(body []byte) (PatchInput, error) {
	m, err := decodeObject(body)
	if err != nil {
		return PatchInput{}, err
	}
	bad := map[string]string{}
	var p PatchInput
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case k == "status":
			var s string
			if isNull(v) || json.Unmarshal(v, &s) != nil || !ValidStatus(s) {
				bad[k] = "must be one of " + strings.Join(Statuses, ", ")
				continue
			}
			p.Status = &s
		case k == "owner_id":
			p.OwnerSet = true
			if isNull(v) {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
				bad[k] = "must be a user id or null"
				continue
			}
			s = strings.TrimSpace(s)
			p.OwnerID = &s
		case k == "tags":
			t := tagsField(m, bad)
			if t != nil {
				p.Tags = &t
			}
		case k == "next_step":
			var ns string
			if !isNull(v) && json.Unmarshal(v, &ns) != nil {
				bad[k] = "must be a string or null"
				continue
			}
			ns, msg := ParseNextStep(ns)
			if msg != "" {
				bad[k] = msg
				continue
			}
			p.NextStep = &ns
		case k == "due_at":
			p.DueSet = true
			if isNull(v) {
				continue
			}
			var ds string
			if json.Unmarshal(v, &ds) != nil {
				bad[k] = "must be an RFC 3339 time or null"
				continue
			}
			t, err := time.Parse(time.RFC3339Nano, ds)
			if err != nil {
				bad[k] = "must be an RFC 3339 time or null"
				continue
			}
			t = t.UTC().Truncate(time.Microsecond)
			p.DueAt = &t
		case senderOwned[k]:
			bad[k] = "is sender-owned: it is refreshed by every delivery and cannot be edited"
		case readOnly[k]:
			bad[k] = "is read-only"
		case k == "notes":
			bad[k] = "add notes with POST /api/v1/leads/{id}/notes"
		default:
			bad[k] = "unknown field"
		}
	}
	if len(bad) > 0 {
		return PatchInput{}, apperr.InvalidFields(bad)
	}
	return p, nil
}

// ParseNote decodes POST /api/v1/leads/{id}/notes.
func ParseNote(body []byte) (string, error) {
	m, err := decodeObject(body)
	if err != nil {
		return "", err
	}
	bad := map[string]string{}
	text := stringField(m, "body", bad)
	for k := range m {
		if k != "body" {
			bad[k] = "unknown field"
		}
	}
	if text == "" && bad["body"] == "" {
		bad["body"] = "is required"
	}
	checkLen(bad, "body", text, maxNoteLen)
	if len(bad) > 0 {
		return "", apperr.InvalidFields(bad)
	}
	return text, nil
}

// Clip cuts s to at most n runes (columns are sized; strict mode would
// reject longer values and lose the whole delivery).
func Clip(s string, n int) string { return clip.Runes(s, n, "") }
