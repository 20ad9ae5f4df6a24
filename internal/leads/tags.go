package leads

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// Tags is a JSON array column ([] when NULL).
type Tags []string

// Scan implements sql.Scanner.
func (t *Tags) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*t = Tags{}
		return nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return fmt.Errorf("tags: cannot scan %T", src)
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	if out == nil {
		out = []string{}
	}
	*t = out
	return nil
}

// Value implements driver.Valuer.
func (t Tags) Value() (driver.Value, error) {
	if t == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]string(t))
	return string(b), err
}

// MarshalJSON never emits null.
func (t Tags) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(t))
}
