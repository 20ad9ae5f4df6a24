package components

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/a-h/templ"
)

// Option is one choice of a Select.
type Option struct {
	Value, Label string
}

// StatusOptions are the lead statuses as Select options.
func StatusOptions() []Option {
	opts := make([]Option, 0, len(statuses))
	for _, s := range statuses {
		opts = append(opts, Option{Value: s, Label: StatusLabel(s)})
	}
	return opts
}

// FieldID is the id a form helper gives the control named name; use it to
// point a link or label at a field.
func FieldID(name string) string {
	var b strings.Builder
	b.WriteString("f-")
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// inputParts splits caller attributes into the id, the input type and the
// remaining attributes, so an attrs "type" or "id" overrides the default
// instead of producing a duplicate attribute.
func inputParts(name string, attrs templ.Attributes) (id, typ string, rest templ.Attributes) {
	id, typ = FieldID(name), "text"
	rest = templ.Attributes{}
	for k, v := range attrs {
		switch strings.ToLower(k) {
		case "id":
			if s, ok := v.(string); ok && s != "" {
				id = s
			}
		case "type":
			if s, ok := v.(string); ok && s != "" {
				typ = s
			}
		case "name", "value", "aria-invalid", "aria-describedby", "class":
			// owned by the helper
		default:
			rest[k] = v
		}
	}
	return id, typ, rest
}

func errorID(id string) string { return id + "-error" }

// copyID derives a stable element id for a CopyField from its label and value.
func copyID(label, value string) string {
	h := fnv.New32a()
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write([]byte(value))
	return fmt.Sprintf("copy-%08x", h.Sum32())
}

func isRequired(attrs templ.Attributes) bool {
	v, ok := attrs["required"]
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	return !isBool || b
}
