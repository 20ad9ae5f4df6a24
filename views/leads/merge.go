package leads

import (
	"strconv"

	"leadpipe/views/layouts"
)

// MergePanels is what the lead page shows about one person across
// sources (docs/ARCHITECTURE.md, "Merged leads"): whom this lead was merged into, the leads
// merged into it (each with an unmerge button for admins) and its possible
// duplicates (each with a merge link for admins).
type MergePanels struct {
	MergedInto      string // the survivor's id, for a merged lead
	MergedIntoTitle string
	Merged          []Lead
	Duplicates      []DuplicateLead
	CanMerge        bool // the reader may unmerge here (an admin, or the owner)
}

// DuplicateLead is one possible duplicate and why ("email", "phone").
type DuplicateLead struct {
	Lead     Lead
	Reasons  []string
	CanMerge bool // the reader may merge the two (an admin, or the owner of both)
}

// MergeField is one row of the merge picker: a field and each lead's value.
type MergeField struct {
	Name, Label string
	Values      []string // per lead, in MergeView.Leads order
	Pick        string   // the lead id picked (default the survivor)
}

// MergeView is GET /leads/{id}/merge?with=…: the survivor, the leads
// merged into it and, per field, whose value to keep.
type MergeView struct {
	Page     layouts.Page
	Survivor Lead
	Others   []Lead
	Fields   []MergeField // only the fields whose values differ
	Same     []string     // labels of the fields all leads agree on
	Captions []string     // per lead (Leads order): its source and when it came
	Version  int
	Key      string
	Error    string
}

// Leads are the survivor then the others, the picker's columns.
func (v MergeView) Leads() []Lead { return append([]Lead{v.Survivor}, v.Others...) }

// SwitchHref is the picker with lead id kept instead of the survivor.
func (v MergeView) SwitchHref(id string) string {
	q := "/leads/" + id + "/merge"
	sep := "?"
	for _, l := range v.Leads() {
		if l.ID != id {
			q += sep + "with=" + l.ID
			sep = "&"
		}
	}
	return q
}

// SourceLabel is where a lead came from, in sales words.
func SourceLabel(l Lead) string { return sourceLabel(l) }

// ReasonText is "same email", "same email and phone".
func ReasonText(reasons []string) string {
	switch len(reasons) {
	case 0:
		return ""
	case 1:
		return "same " + reasons[0]
	}
	return "same " + reasons[0] + " and " + reasons[1]
}

func itoa(n int) string { return strconv.Itoa(n) }

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// joinWords is "Email, Phone and Status".
func joinWords(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	out := ws[0]
	for _, w := range ws[1 : len(ws)-1] {
		out += ", " + w
	}
	return out + " and " + ws[len(ws)-1]
}
