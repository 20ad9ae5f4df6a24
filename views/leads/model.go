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
	Repeats                         int // of TimesSeen, the repeats of deliveries (the rest are deliveries)
	CreatedAt, UpdatedAt            time.Time
	LastSeenAt, SourceCreatedAt     time.Time
	NextStep                        string    // human-owned follow-up
	DueAt                           time.Time // zero: no due date
	// The first-response clock (zero when not assigned by a rule / not
	// answered yet) and, on the lead page, the rule that chose the owner.
	AssignedAt, FirstResponseDueAt, FirstRespondedAt time.Time
	AssignedByRule                                   string
	// Pending says why a sender's lead has no details yet (PendingMeta,
	// PendingToken; "" when it has them or is not waiting for any), and
	// FormID names the sender's form it came from.
	Pending, FormID string
}

// Sightings is how often the sender sent the lead, in the one wording
// every page uses (components.SightingsText): times_seen split into
// deliveries and their repeats.
func (l Lead) Sightings() string {
	repeats := min(max(l.Repeats, 0), l.TimesSeen)
	return components.SightingsText(int64(l.TimesSeen-repeats), int64(repeats))
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

// DueText is a due date in words, in t's location (the reader's zone):
// "today 14:00", "tomorrow 09:30", "yesterday 17:00", "Mon 15:00" within a
// week, else "Jan 02 09:00".
func DueText(t, now time.Time) string {
	now = now.In(t.Location())
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
		return t.Format("Jan 02 15:04")
	}
	return t.Format("Jan 02, 2006 15:04")
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
	case l.Pending != "":
		// Not by its leadgen id: a sender's id is plumbing (Technical details).
		return "Lead from " + sourceLabel(l)
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
	// First-response views (docs/ARCHITECTURE.md, "Assignment and first response"): assigned leads nobody has
	// answered, past or near their due time; the reader's own first.
	ViewOverdue = "overdue"
	ViewDueSoon = "due_soon"
	// ViewDuplicates lists leads with a possible duplicate (docs/ARCHITECTURE.md, "Merged leads").
	ViewDuplicates = "duplicates"
)

// Values of the filter sheet beyond a status, a user or a source id.
const (
	FilterAny  = "any"     // status, owner, source, due: no condition
	StatusOpen = "open"    // every status still worked (not won or lost)
	OwnerMe    = "me"      // the signed-in user
	DueOverdue = "overdue" // due before now
	DueToday   = "today"   // due by the end of the reader's day
	DueWeek    = "week"    // due within seven days
)

// View is one quick view of the inbox: a name and the filter values it
// starts from. Values in the URL win over a view's, so a view is only
// defaults of the one filter sheet; adding a view is adding an entry here.
type View struct {
	Key, Label string
	Defaults   Filters
	ByDue      bool // a to-do list: the most overdue first
	// SLA narrows to unanswered assigned leads (leads.SLAOverdue,
	// leads.SLADueSoon); the reader's own come first.
	SLA string
	// Duplicates narrows to leads with another lead of the same normalized
	// email or phone.
	Duplicates bool
}

// Views are the inbox's quick views in order.
var Views = []View{
	{Key: ViewMine, Label: "My open leads", Defaults: Filters{Status: StatusOpen, Owner: OwnerMe}},
	{Key: ViewDue, Label: "My follow-ups due", Defaults: Filters{Status: StatusOpen, Owner: OwnerMe, Due: DueToday}, ByDue: true},
	{Key: ViewUnassigned, Label: "Unassigned new", Defaults: Filters{Status: "new", Owner: "none"}},
	{Key: ViewAll, Label: "All"},
	{Key: ViewOverdue, Label: "First reply overdue", SLA: "overdue"},
	{Key: ViewDueSoon, Label: "First reply due soon", SLA: "due_soon"},
	{Key: ViewDuplicates, Label: "Possible duplicates", Duplicates: true},
}

// ViewFor finds a view by key (ok false for an unknown one).
func ViewFor(key string) (View, bool) {
	for _, v := range Views {
		if v.Key == key {
			return v, true
		}
	}
	return View{}, false
}

// Filters are the inbox's query parameters: the view and the filter sheet
// (status, owner, source, due) plus the search. "" means "the view's".
type Filters struct {
	View                          string
	Status, Source, Owner, Due, Q string
}

// Active reports whether any filter in the URL narrows the list.
func (f Filters) Active() bool {
	return f.Status != "" || f.Source != "" || f.Owner != "" || f.Due != "" || f.Q != ""
}

// Effective is what the sheet shows: each value from the URL, else the
// view's, else FilterAny.
func (f Filters) Effective() Filters {
	v, _ := ViewFor(f.View)
	pick := func(url, def string) string {
		switch {
		case url != "":
			return url
		case def != "":
			return def
		}
		return FilterAny
	}
	return Filters{View: f.View, Q: f.Q, Status: pick(f.Status, v.Defaults.Status), Source: pick(f.Source, v.Defaults.Source),
		Owner: pick(f.Owner, v.Defaults.Owner), Due: pick(f.Due, v.Defaults.Due)}
}

// NarrowCount is how many sheet values the user chose (the button's
// badge): a value in the URL that differs from the view's own. A view's
// defaults are the view, not a filter the user set.
func (f Filters) NarrowCount() int {
	v, _ := ViewFor(f.View)
	def := func(s string) string {
		if s == "" {
			return FilterAny
		}
		return s
	}
	n := 0
	for _, p := range [][2]string{{f.Status, v.Defaults.Status}, {f.Source, v.Defaults.Source}, {f.Owner, v.Defaults.Owner}, {f.Due, v.Defaults.Due}} {
		if p[0] != "" && p[0] != def(p[1]) {
			n++
		}
	}
	return n
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
	if f.Due != "" {
		v.Set("due", f.Due)
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

// DueOptions are the sheet's due-date choices.
func DueOptions() []components.Option {
	return []components.Option{{Value: FilterAny, Label: "Any time"}, {Value: DueOverdue, Label: "Overdue"},
		{Value: DueToday, Label: "Due today or earlier"}, {Value: DueWeek, Label: "Due within 7 days"}}
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
	Views     []View
	// Matching is how many leads the filters match (all pages), for
	// "Select all N matching".
	Matching StatusCount
	// SLA is the first-response view's filter ("" in other views); the
	// first Mine of Leads are the reader's own.
	SLA  string
	Mine int
	// Groups are the duplicates view's sets (nil in other views): each
	// page lead with the leads it shares an email or phone with.
	Groups []DuplicateGroup
}

// DuplicateGroup is one set of possible duplicates: why they match and
// the lead a merge keeps (Survivor: the newest someone gave a status, else
// the newest).
type DuplicateGroup struct {
	Reason   string // "same email", "same email and phone"
	Leads    []Lead // newest first
	Survivor string
	CanMerge bool // the reader may merge all of them (leads.MayMerge)
}

// MergeHref is the merge picker for the group: the survivor and the rest.
func (g DuplicateGroup) MergeHref() string {
	q := url.Values{}
	for _, l := range g.Leads {
		if l.ID != g.Survivor {
			q.Add("with", l.ID)
		}
	}
	return "/leads/" + g.Survivor + "/merge?" + q.Encode()
}

// PickSurvivor is the lead a merge keeps by default among leads (newest
// first): the newest whose status a person set (not New), else the newest.
func PickSurvivor(ls []Lead) string {
	for _, l := range ls {
		if l.Status != "new" {
			return l.ID
		}
	}
	if len(ls) == 0 {
		return ""
	}
	return ls[0].ID
}

// ViewHref is /leads in another quick view (the search is kept).
func (f Filters) ViewHref(view string) string {
	g := Filters{View: view, Q: f.Q}
	return g.Href("")
}

// Column is one status column of the board.
type Column struct {
	Status     string
	Count      StatusCount
	Leads      []Lead
	NextCursor string // "" when every card is shown
}

// Folded reports whether the board shows the column folded to its count
// (Won and Lost: closed deals, not worked on the board).
func (c Column) Folded() bool { return c.Status == "won" || c.Status == "lost" }

// BoardView is GET /leads/board.
type BoardView struct {
	Page    layouts.Page
	Columns []Column
	PerCol  int
	HasAny  bool
	Now     time.Time
	MeID    string // the signed-in user (live notifications)
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
	// First marks the oldest delivery of the lead: it "arrived", the later
	// ones "updated" it (MarkFirstDelivery).
	First bool
}

// Technical reports whether the entry is the sender's plumbing only (a
// repeated delivery, a record older than the lead's data): it shows under
// "Technical details", never in the timeline a salesperson reads.
func (e Event) Technical() bool { return e.Kind == "duplicate" || e.Kind == "stale" }

// FromSender reports whether the sender made the entry (what "Technical
// details" lists with its ids).
func (e Event) FromSender() bool {
	switch e.Kind {
	case "delivery", "duplicate", "stale", "reconcile":
		return true
	}
	return false
}

// MarkFirstDelivery marks the oldest delivery of a timeline (newest first)
// as the one the lead arrived with, unless an older entry says how it came.
func MarkFirstDelivery(evs []Event) []Event {
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Kind {
		case "delivery":
			evs[i].First = true
			return evs
		case "created", "reconcile", EventArrived:
			return evs
		}
	}
	return evs
}

// EventArrived is the timeline's first entry for a sender's lead whose
// delivery is not on record: it arrived from its source at CreatedAt.
const EventArrived = "arrived"

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
	Merge      MergePanels // possible duplicates and merges (merge.go)
	Origin     *Origin     // where the lead came from, its consents (origin.go)
}

// NewLeadForm is GET /leads/new.
type NewLeadForm struct {
	Page                        layouts.Page
	Name, Email, Phone, Company string
	Key                         string
	Errors                      map[string]string
}

// Choice is one option of the filter sheet's status list, with its count.
type Choice struct {
	Value, Label string
	Count        StatusCount
	Counted      bool
}

// openStatuses are the statuses a salesperson still works (StatusOpen).
var openStatuses = map[string]bool{"new": true, "contacted": true, "qualified": true, "unqualified": true}

// StatusChoices are Any, Open, then every status, each with the count of
// leads the other filters match.
func (v InboxView) StatusChoices() []Choice {
	out := []Choice{{Value: FilterAny, Label: "Any status"}, {Value: StatusOpen, Label: "Open (not won or lost)"}}
	byStatus := map[string]StatusCount{}
	var open StatusCount
	for i, c := range v.Counts {
		if i == 0 {
			out[0].Count, out[0].Counted = c, true
			continue
		}
		byStatus[c.Status] = c
		if openStatuses[c.Status] {
			open.N += c.N
			open.Capped = open.Capped || c.Capped
		}
	}
	if len(v.Counts) > 0 {
		out[1].Count, out[1].Counted = open, true
	}
	for _, o := range components.StatusOptions() {
		c, ok := byStatus[o.Value]
		out = append(out, Choice{Value: o.Value, Label: o.Label, Count: c, Counted: ok})
	}
	return out
}

// Text is "New · 12" (or just "New" when not counted).
func (c Choice) Text() string {
	if !c.Counted {
		return c.Label
	}
	return c.Label + " · " + c.Count.CountText()
}

// MatchingFor is how many leads a status choice matches, from the counts.
func (v InboxView) MatchingFor(status string) StatusCount {
	for _, c := range v.StatusChoices() {
		if c.Value == status {
			return c.Count
		}
	}
	return StatusCount{}
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
		return SourceName(l.SourceName)
	}
	return "Deleted source"
}

// SourceName is a source's name as sales staff know it: "Checkout (Stripe-
// style signature)" reads "Checkout". An admin may have noted how a sender
// signs in brackets; that note is plumbing, kept for the admin's pages.
func SourceName(name string) string {
	i := strings.LastIndex(name, " (")
	if i <= 0 || !strings.HasSuffix(name, ")") {
		return name
	}
	note := strings.ToLower(name[i+2 : len(name)-1])
	for _, w := range []string{"signature", "signed", "webhook", "hmac", "stripe-style", "generic", "payload", "delivery", "deliveries"} {
		if strings.Contains(note, w) {
			return strings.TrimSpace(name[:i])
		}
	}
	return name
}

// Resubmitted is "Submitted twice" (or "Submitted 3 times") for a lead the
// person sent again through the form, distinct submissions at least an
// hour apart; "" otherwise. A sender's retries of one submission are not
// the person's doing and never count.
func (l Lead) Resubmitted() string {
	n := l.TimesSeen - min(max(l.Repeats, 0), l.TimesSeen)
	if n < 2 || l.SourceID == "" || l.LastSeenAt.Sub(l.CreatedAt) < time.Hour {
		return ""
	}
	if n == 2 {
		return "Submitted twice"
	}
	return "Submitted " + strconv.Itoa(n) + " times"
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

// dueInput is the due date as a datetime-local value in the reader's zone.
func dueInput(l Lead, loc *time.Location) string {
	if l.DueAt.IsZero() {
		return ""
	}
	return l.DueAt.In(loc).Format("2006-01-02T15:04")
}

// leadTitleHint is the row title's tooltip: how to reach the person.
func leadTitleHint(l Lead) string {
	var parts []string
	for _, s := range []string{l.Email, l.Phone} {
		if s != "" && s != l.Title() {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

func groupLeads(gs []DuplicateGroup) int {
	n := 0
	for _, g := range gs {
		n += len(g.Leads)
	}
	return n
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
