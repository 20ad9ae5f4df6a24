package kinds

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
)

// PathFinds reports whether a generic source's JSON path finds a value (not
// null) in a payload; an invalid path finds nothing.
func PathFinds(path string, payload []byte) bool {
	p, err := parseJSONPath(path)
	if err != nil {
		return false
	}
	v := bytes.TrimSpace(p.lookup(payload))
	return len(v) > 0 && string(v) != "null"
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// ChildPath is the path of key under parent in the syntax PathFinds reads:
// $.a.b, or $.a["odd key"] when the key is not a plain name.
func ChildPath(parent, key string) string {
	if plainKey.MatchString(key) {
		return parent + "." + key
	}
	q, _ := json.Marshal(key)
	return parent + "[" + string(q) + "]"
}

// IndexPath is the path of an array element: $.a[0].
func IndexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
