package settings

import (
	"strconv"
	"time"

	"leadpipe/views/components"
	"leadpipe/views/layouts"
)

// Conditions and strategies of the rule form (the values of its radios).
const (
	WhenAny    = "any"
	WhenSource = "source"
	WhenField  = "field"

	StrategyRoundRobin = "round_robin"
	StrategyOwner      = "owner"
)

// RuleMember is one person a rule hands leads to, as the list shows it.
type RuleMember struct {
	Name     string
	Inactive bool // disabled or removed: round robin skips them
	// Cap is the member's daily cap ("" none); AwayUntil set while they
	// are away (round robin skips them).
	Cap       string
	AwayUntil *time.Time
}

// RuleRow is one rule of the list, in words.
type RuleRow struct {
	Index    int
	Name     string
	When     string // "Every new lead", "Source is Website", "company equals “Acme”"
	Strategy string // StrategyRoundRobin or StrategyOwner
	Members  []RuleMember
	// Escalate is the escalation in words ("" none): "after 15 minutes
	// overdue, to the next member".
	Escalate string
}

// AssignmentView is GET /settings/assignment: the rules in the order they
// are tried and the first-response time.
type AssignmentView struct {
	Page    layouts.Page
	Rules   []RuleRow
	Version string // fingerprint of the rules as shown: a stale form is refused
	// Minutes is the first-response time as typed; Errors its field error.
	Minutes string
	Errors  map[string]string
}

// RuleForm is the add/edit form of one rule (GET /settings/assignment/rules/new,
// /settings/assignment/rules/{n}).
type RuleForm struct {
	Page     layouts.Page
	Index    int    // position edited; -1 adds a rule at the end
	Version  string // fingerprint of the rules the form was rendered from
	Name     string
	When     string // WhenAny, WhenSource, WhenField
	SourceID string
	Field    string
	Equals   string
	Strategy string
	Members  map[string]bool
	OwnerID  string
	// Caps are the members' daily caps as typed (by user id; "" none).
	Caps map[string]string
	// EscalateAfter is the minutes overdue as typed ("" no escalation);
	// EscalateTo "next_member" or a user id.
	EscalateAfter string
	EscalateTo    string
	Users         []components.Option // active users
	Sources       []components.Option // sources, then "Added by hand"
	Errors        map[string]string   // by form field
	Problem       string              // errors not tied to a field of this form
	// Conflict is set when the rules changed since the form was opened:
	// Current says what the edited rule is now ("" when it is gone).
	Conflict bool
	Current  string
}

// IsNew reports whether the form adds a rule.
func (f RuleForm) IsNew() bool { return f.Index < 0 }

// Action is where the form posts.
func (f RuleForm) Action() string {
	if f.IsNew() {
		return "/settings/assignment/rules"
	}
	return "/settings/assignment/rules/" + strconv.Itoa(f.Index)
}

// Title is the form's heading.
func (f RuleForm) Title() string {
	if f.IsNew() {
		return "Add an assignment rule"
	}
	return "Edit rule " + strconv.Itoa(f.Index+1)
}

func ruleHref(i int) string { return "/settings/assignment/rules/" + strconv.Itoa(i) }

func ruleNumber(i int) string { return strconv.Itoa(i + 1) }

// FieldSuggestions are the lead fields a condition usually names; any
// top-level key of the sender's payload works too.
var FieldSuggestions = []string{"email", "name", "phone", "company"}

// EscalateOptions are the escalation targets: the next member, then the
// active users.
func (f RuleForm) EscalateOptions() []components.Option {
	return append([]components.Option{{Value: "next_member", Label: "the next member (round robin)"}}, f.Users...)
}
