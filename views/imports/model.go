// Package imports holds the CSV import pages: the upload with the list of
// imports, and one import's page (preview and mapping while a draft, then
// a progress bar polled with htmx, the counts and the error report).
package imports

import (
	"strconv"

	"leadpipe/views/components"
	"leadpipe/views/layouts"
)

// Item is one import as the pages show it.
type Item struct {
	ID, State, Filename, NaturalKey string
	Rows, Processed                 int
	New, Updated, Unchanged, Errors int
	Percent                         int // 0…100
	LastError                       string
	CreatedBy                       string
}

// Href is the import's page.
func (i Item) Href() string { return "/imports/" + i.ID }

// StatusHref is the polled status fragment.
func (i Item) StatusHref() string { return "/imports/" + i.ID + "/status" }

// ErrorsHref downloads the refused rows.
func (i Item) ErrorsHref() string { return "/imports/" + i.ID + "/errors.csv" }

// Name is the file name, or a stand-in.
func (i Item) Name() string {
	if i.Filename != "" {
		return i.Filename
	}
	return "Import " + i.ID[len(i.ID)-6:]
}

// StateLabel and StateTone show the state as a badge.
func (i Item) StateLabel() string {
	switch i.State {
	case "draft":
		return "Waiting for mapping"
	case "running":
		return "Importing"
	case "succeeded":
		return "Done"
	case "failed":
		return "Failed"
	}
	return i.State
}

func (i Item) StateTone() string {
	switch i.State {
	case "succeeded":
		return components.ToneSuccess
	case "failed":
		return components.ToneDanger
	case "running":
		return components.ToneInfo
	}
	return components.ToneNeutral
}

// ProgressText is "1,200 of 5,000 rows".
func (i Item) ProgressText() string {
	return strconv.Itoa(i.Processed) + " of " + strconv.Itoa(i.Rows) + " rows (" + strconv.Itoa(i.Percent) + "%)"
}

// ListView is GET /imports.
type ListView struct {
	Page    layouts.Page
	Key     string // the upload form's per-render key
	Problem string
	Items   []Item
	MaxMiB  int
}

// Column is one column of a draft: its name, the field it maps to, and the
// first rows' values.
type Column struct {
	Index  int
	Name   string
	Field  string
	Sample string
}

// ImportView is GET /imports/{id}.
type ImportView struct {
	Page       layouts.Page
	Item       Item
	Columns    []Column
	Header     []string
	Rows       [][]string
	NaturalKey int
	Fields     []components.Option
	Problem    string
}

// FieldName is the form field of a column's mapping.
func FieldName(i int) string { return "map." + strconv.Itoa(i) }

// KeyOptions are the columns offered as the natural key.
func (v ImportView) KeyOptions() []components.Option {
	out := make([]components.Option, len(v.Header))
	for i, h := range v.Header {
		out[i] = components.Option{Value: strconv.Itoa(i), Label: h}
	}
	return out
}

// Cell is row r's value in column c ("" when the row is short).
func Cell(row []string, c int) string {
	if c < len(row) {
		return row[c]
	}
	return ""
}
