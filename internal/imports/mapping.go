package imports

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"leadpipe/internal/apperr"
)

// Lead fields a column can map to. FieldPayload keeps the column in the
// lead's payload only (every column is in the payload anyway); FieldIgnore
// drops it from the payload too.
const (
	FieldEmail     = "email"
	FieldName      = "name"
	FieldFirstName = "first_name"
	FieldLastName  = "last_name"
	FieldPhone     = "phone"
	FieldCompany   = "company"
	FieldTags      = "tags"
	FieldPayload   = "payload"
	FieldIgnore    = "ignore"
)

// Fields lists the fields a column may map to, for the API and the form.
var Fields = []string{FieldEmail, FieldName, FieldFirstName, FieldLastName, FieldPhone, FieldCompany, FieldTags, FieldPayload, FieldIgnore}

// defaultFields maps common header names (lower case) to fields: the
// contract's names and the variants spreadsheets and CRM exports use.
var defaultFields = map[string]string{
	"email": FieldEmail, "e-mail": FieldEmail, "email address": FieldEmail, "e-mail address": FieldEmail, "mail": FieldEmail,
	"name": FieldName, "full name": FieldName, "full_name": FieldName, "fullname": FieldName, "contact name": FieldName,
	"first_name": FieldFirstName, "first name": FieldFirstName, "firstname": FieldFirstName, "given name": FieldFirstName,
	"last_name": FieldLastName, "last name": FieldLastName, "lastname": FieldLastName, "surname": FieldLastName, "family name": FieldLastName,
	"phone": FieldPhone, "phone number": FieldPhone, "phone_number": FieldPhone, "telephone": FieldPhone, "mobile": FieldPhone, "tel": FieldPhone,
	"company": FieldCompany, "company name": FieldCompany, "company_name": FieldCompany, "organization": FieldCompany, "organisation": FieldCompany,
	"tags": FieldTags, "tag": FieldTags, "labels": FieldTags,
}

// DefaultField is the field a header name maps to without a mapping.
func DefaultField(column string) string {
	if f, ok := defaultFields[normalizeColumn(column)]; ok {
		return f
	}
	return FieldPayload
}

// Plan is how an import reads its file's rows: per column (by position)
// the field, and which column holds the natural key.
type Plan struct {
	Header     []string          `json:"header"`
	Fields     []string          `json:"fields"`      // per column
	NaturalKey int               `json:"natural_key"` // column index
	Mapping    map[string]string `json:"mapping"`     // header name → field, as resolved
}

// NewPlan resolves a mapping (header name → field, names matched without
// case; omitted columns take DefaultField) and the natural-key column
// (default: the column mapped to email) against a header row. Invalid
// (422) names the offending parameter.
func NewPlan(header []string, mapping map[string]string, naturalKey string) (Plan, error) {
	p := Plan{Header: header, Fields: make([]string, len(header)), NaturalKey: -1, Mapping: map[string]string{}}
	byName := map[string]int{}
	for i, h := range header {
		byName[normalizeColumn(h)] = i
		p.Fields[i] = DefaultField(h)
	}
	var bad []string
	for col, field := range mapping {
		i, ok := byName[normalizeColumn(col)]
		if !ok {
			bad = append(bad, fmt.Sprintf("column %q is not in the header row", col))
			continue
		}
		field = strings.ToLower(strings.TrimSpace(field))
		if field == "" {
			field = FieldPayload
		}
		valid := false
		for _, f := range Fields {
			valid = valid || f == field
		}
		if !valid {
			bad = append(bad, fmt.Sprintf("column %q: %q is not a field (one of %s)", col, field, strings.Join(Fields, ", ")))
			continue
		}
		p.Fields[i] = field
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return Plan{}, apperr.InvalidFields(map[string]string{"mapping": strings.Join(bad, "; ")})
	}
	seen := map[string]string{}
	for i, f := range p.Fields {
		if f != FieldPayload && f != FieldIgnore {
			if prev, dup := seen[f]; dup {
				return Plan{}, apperr.InvalidFields(map[string]string{"mapping": fmt.Sprintf("columns %q and %q both map to %s", prev, header[i], f)})
			}
			seen[f] = header[i]
		}
		p.Mapping[header[i]] = f
	}
	if naturalKey = strings.TrimSpace(naturalKey); naturalKey != "" {
		i, ok := byName[normalizeColumn(naturalKey)]
		if !ok {
			return Plan{}, apperr.InvalidFields(map[string]string{"natural_key": fmt.Sprintf("column %q is not in the header row", naturalKey)})
		}
		p.NaturalKey = i
	} else {
		for i, f := range p.Fields {
			if f == FieldEmail {
				p.NaturalKey = i
			}
		}
		if p.NaturalKey < 0 {
			return Plan{}, apperr.InvalidFields(map[string]string{"natural_key": "the file has no email column: name the column that identifies a lead (natural_key), e.g. an id column"})
		}
	}
	if p.Fields[p.NaturalKey] == FieldIgnore {
		return Plan{}, apperr.InvalidFields(map[string]string{"natural_key": "the natural key column cannot be ignored"})
	}
	return p, nil
}

// ParseMapping reads the mapping query parameter: a JSON object of header
// name → field.
func ParseMapping(raw string) (map[string]string, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, apperr.InvalidFields(map[string]string{"mapping": `must be a JSON object of column name → field, e.g. {"E-mail":"email"}`})
	}
	return m, nil
}

// draftPlan is the default plan of a header whose defaults do not make a
// valid one yet (no email column): the first column is proposed as the
// natural key.
func draftPlan(header []string) Plan {
	p := Plan{Header: header, Fields: make([]string, len(header)), Mapping: map[string]string{}}
	for i, h := range header {
		p.Fields[i] = DefaultField(h)
		p.Mapping[h] = p.Fields[i]
		if p.Fields[i] == FieldEmail && p.NaturalKey == 0 {
			p.NaturalKey = i
		}
	}
	return p
}
