// Package leads holds the pages sales staff work in all day: the inbox,
// the pipeline board, a lead's page and the new-lead form.
package leads

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"leadpipe/views/components"
	"leadpipe/views/layouts"
)

// Lead is a lead as the pages show it.
type Lead struct {
	ID, Name, Email, Phone, Company string
	SourceID, SourceName, SourceRef string // SourceID "" for a lead typed in by a person
	Status                          string
	OwnerID, OwnerName              string
	Tags                            []string
	Version                         int
	TimesSeen                       int
	CreatedAt, UpdatedAt            time.Time
	LastSeenAt, SourceCreatedAt     time.Time
	NextStep                        string    // human-owned follow-up
	DueAt                           time.Time // zero: no due date
	// Pending says why a sender's lead has no details yet (PendingMeta,
	// PendingToken; "" when it has them or is not waiting for any), and
	// FormID names the sender's form it came from.
	Pending, FormID string
}

// Why a Meta lead has only its leadgen id: the webhook carries no fields,
// they are fetched from the Graph API with the source's access token.
const (
	PendingMeta  = "meta"       // enrichment will fill it in
	PendingToken = "meta-token" // the source has no access token: nothing will
)

// PendingText is the chip of a lead waiting for its details.
func (l Lead) PendingText() string {
	switch l.Pending {
	case PendingMeta:
		return "Details pending from Meta"
	case PendingToken:
		return "No details: connect a Meta access token"
	}
	return ""
}

// Overdue reports whether the follow-up's due time has passed.
func (l Lead) Overdue(now time.Time) bool { return !l.DueAt.IsZero() && l.DueAt.Before(now) }

// DueText is a due date in words: "today 14:00", "tomorrow 09:30",
// "yesterday", "Mon 15:00" within a week, else "Jan 02" (UTC).
func DueText(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	day := func(x time.Time) time.Time { y, m, d := x.Date(); return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	days := int(day(t).Sub(day(now)).Hours() / 24)
	switch {
	case days == 0:
		return "today " + t.Format("15:04")
	case days == 1:
		return "tomorrow " + t.Format("15:04")
	case days == -1:
		return "yesterday " + t.Format("15:04")
	case days > 1 && days < 7:
		return t.Format("Mon 15:04")
	case t.Year() == now.Year():
		return t.Format("Jan 02")
	}
	return t.Format("Jan 02, 2006")
}

// Initials gives avatar letters for a person's name: "Sam Rivera" → "SR".
func Initials(name string) string {
	var out []rune
	word := true
	for _, r := range name {
		switch {
		case r == ' ' || r == '.' || r == '-' || r == '@':
			word = true
		case word:
			out = append(out, []rune(strings.ToUpper(string(r)))...)
			word = false
		}
		if len(out) >= 2 {
			break
		}
	}
	return string(out)
}

// Title is what a lead is called: its name, else email, else phone.
func (l Lead) Title() string {
	switch {
	case l.Name != "":
		return l.Name
	case l.Email != "":
		return l.Email
	case l.Phone != "":
		return l.Phone
	case l.Pending != "" && l.SourceRef != "":
		return "Meta lead " + l.SourceRef
	}
	return "Unnamed lead"
}

// FormText is "form 123…" for a lead whose sender named its form.
func (l Lead) FormText() string {
	if l.FormID == "" {
		return ""
	}
	return "form " + l.FormID
}

// Quick views of the inbox.
const (
	ViewMine       = "mine"       // my open leads (the default)
	ViewUnassigned = "unassigned" // unassigned new leads
	ViewDue        = "due"        // my follow-ups due today or earlier
	ViewAll        = "all"
)

// ViewTabs are the quick views in order.
var ViewTabs = []struct{ Key, Label string }{
	{ViewMine, "My open leads"}, {ViewDue, "My follow-ups due"}, {ViewUnassigned, "Unassigned new"}, {ViewAll, "All"},
}

// Filters are the inbox's query parameters.
type Filters struct {
	View                     string
	Status, Source, Owner, Q string
}

// Active reports whether any filter narrows the list.
func (f Filters) Active() bool { return f.Status != "" || f.Source != "" || f.Owner != "" || f.Q != "" }

// ToggleText labels the phone's filter button: "Filters" or "Filters (2)".
func (f Filters) ToggleText() string {
	n := 0
	for _, v := range []string{f.Status, f.Source, f.Owner} {
		if v != "" {
			n++
		}
	}
	if n == 0 {
		return "Filters"
	}
	return "Filters (" + strconv.Itoa(n) + ")"
}

// Query renders the filters as a query string (without "?"), with status
// replaced by the given one (use f.Status to keep it).
func (f Filters) Query(status string) string {
	v := url.Values{}
	if f.View != "" {
		v.Set("view", f.View)
	}
	if status != "" {
		v.Set("status", status)
	}
	if f.Source != "" {
		v.Set("source", f.Source)
	}
	if f.Owner != "" {
		v.Set("owner", f.Owner)
	}
	if f.Q != "" {
		v.Set("q", f.Q)
	}
	return v.Encode()
}

// Href is /leads with the filters and a status.
func (f Filters) Href(status string) string {
	if q := f.Query(status); q != "" {
		return "/leads?" + q
	}
	return "/leads"
}

// StatusCount is one status tab of the inbox.
type StatusCount struct {
	Status string // "" is "All"
	N      int
	Capped bool // N is a lower bound ("10,000+")
}

// CountText formats a count: 1,234 or 10,000+.
func (c StatusCount) CountText() string {
	s := thousands(c.N)
	if c.Capped {
		s += "+"
	}
	return s
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// InboxView is GET /leads.
type InboxView struct {
	Page      layouts.Page
	Filters   Filters
	Sources   []components.Option // filter choices (value "" = all)
	Owners    []components.Option // filter choices (value "" = anyone)
	Counts    []StatusCount       // All first, then each status
	Leads     []Lead
	NextHref  string // older page, "" on the last one
	IsFirst   bool   // no cursor: the newest page
	Problem   string // a filter was not understood
	HasAny    bool   // the tenant has at least one lead
	Now       time.Time
	MeID      string
	Assignees []components.Option // bulk "Assign to…" choices
	BulkKey   string              // per-render key of the bulk form
	Back      string              // this page's URL, where the bulk form returns
}

// ViewHref is /leads in another quick view (the search is kept).
func (f Filters) ViewHref(view string) string {
	g := Filters{View: view, Q: f.Q}
	return g.Href("")
}

// Column is one status column of the board.
type Column struct {
	Status string
	Count  StatusCount
	Leads  []Lead
}

// BoardView is GET /leads/board.
type BoardView struct {
	Page    layouts.Page
	Columns []Column
	PerCol  int
	HasAny  bool
	Now     time.Time
}

// Event is one timeline entry.
type Event struct {
	Kind     string // created, status_changed, owner_changed, tags_changed, note_added, delivery, duplicate, reconcile, …
	Actor    string
	At       time.Time
	From, To string // status or owner names
	Body     string // a note
	Detail   string // e.g. the sender's delivery id
	// Duplicates of one delivery: how many, first and last arrival.
	Count           int
	FirstAt, LastAt time.Time
	// Changed lists the fields a reconcile updated (empty: it found a new lead).
	Changed []string
	// Due is a next step's due date (zero: none).
	Due time.Time
	// Items are the duplicate entries a collapsed "Duplicate ×N" row
	// stands for, newest first (nil for a single entry).
	Items []Event
}

// Human reports whether a person made the entry (a change, a note, a lead
// typed in); the timeline sets these apart from what senders did.
func (e Event) Human() bool {
	switch e.Kind {
	case "status_changed", "owner_changed", "tags_changed", "note_added", "next_step_changed":
		return true
	case "created":
		return e.Actor != ""
	}
	return false
}

// CollapseDuplicates folds each run of adjacent duplicate entries from one
// sender (newest first) into one entry: the sum of their counts, the
// earliest first and the latest last arrival, and the entries in Items. A
// retry storm then takes one row of the timeline instead of hundreds.
func CollapseDuplicates(evs []Event) []Event {
	out := make([]Event, 0, len(evs))
	for i := 0; i < len(evs); {
		j := i + 1
		if evs[i].Kind == "duplicate" {
			for j < len(evs) && evs[j].Kind == "duplicate" && evs[j].Actor == evs[i].Actor {
				j++
			}
		}
		if j-i == 1 {
			out = append(out, evs[i])
			i = j
			continue
		}
		g := Event{Kind: "duplicate", Actor: evs[i].Actor, At: evs[i].At, LastAt: evs[i].LastAt, FirstAt: evs[i].FirstAt,
			Items: evs[i:j:j]}
		for _, e := range evs[i:j] {
			g.Count += e.Count
			if e.LastAt.After(g.LastAt) {
				g.LastAt = e.LastAt
			}
			if !e.FirstAt.IsZero() && (g.FirstAt.IsZero() || e.FirstAt.Before(g.FirstAt)) {
				g.FirstAt = e.FirstAt
			}
		}
		out = append(out, g)
		i = j
	}
	return out
}

// Conflict is a stale edit: someone saved first. The form is re-rendered
// with the current values and what the user tried.
type Conflict struct {
	By        string
	At        time.Time
	Field     string // "status" | "owner"
	Attempted string // the value the user tried, as a label
	Value     string // the raw value, for "Apply my change anyway"
}

// NoteForm is the add-note form's state.
type NoteForm struct {
	Key   string
	Body  string
	Error string
}

// LeadView is GET /leads/{id}.
type LeadView struct {
	Page       layouts.Page
	Lead       Lead
	Payload    []Tok
	PayloadCut bool
	Timeline   []Event
	MoreEvents int
	Owners     []components.Option // "" = unassigned, then active users
	Conflict   *Conflict
	Note       NoteForm
	Error      string // a form problem other than a conflict
	IsAdmin    bool   // links to the source page
	MeID       string
	Now        time.Time
}

// NewLeadForm is GET /leads/new.
type NewLeadForm struct {
	Page                        layouts.Page
	Name, Email, Phone, Company string
	Key                         string
	Errors                      map[string]string
}

func statusOptionsWithAll() []components.Option {
	return append([]components.Option{{Value: "", Label: "Any status"}}, components.StatusOptions()...)
}

func ownerLabel(l Lead) string {
	if l.OwnerName != "" {
		return l.OwnerName
	}
	if l.OwnerID != "" {
		return "Former user"
	}
	return ""
}

func sourceLabel(l Lead) string {
	if l.SourceID == "" {
		return "Added by hand"
	}
	if l.SourceName != "" {
		return l.SourceName
	}
	return "Deleted source"
}

// Plural is "1 lead" or "12 leads".
func Plural(n int, one, many string) string { return plural(n, one, many) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}

// humanKind turns an unknown event kind into words: "enriched" → "Enriched".
func humanKind(k string) string {
	if k == "" {
		return "Updated"
	}
	b := []byte(k)
	for i := range b {
		if b[i] == '_' || b[i] == ':' {
			b[i] = ' '
		}
	}
	if b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
	return string(b)
}

// dueInput is the due date as a datetime-local value (UTC).
func dueInput(l Lead) string {
	if l.DueAt.IsZero() {
		return ""
	}
	return l.DueAt.UTC().Format("2006-01-02T15:04")
}
