package layouts

import (
	"strconv"
	"unicode"
)

// User is the signed-in person as the layout needs it.
type User struct {
	Name, Email, Role string // Role "admin" | "staff"
}

// IsAdmin reports whether the user sees the admin navigation.
func (u *User) IsAdmin() bool { return u != nil && u.Role == RoleAdmin }

const (
	RoleAdmin = "admin"
	RoleStaff = "staff"
)

// Page is the view model of the application chrome around every signed-in page.
type Page struct {
	Title      string
	User       *User // nil on the login page
	TenantName string
	Active     string // nav key: "leads","board","sources","monitor","alerts","users","tokens","endpoints","audit"
	OpenAlerts int    // unacknowledged open alerts: admins see a banner linking /alerts when > 0
	Flash      string // success notice
	Undo       *Undo  // optional action offered with the flash ("Undo")
	FlashError string // error notice
	Wide       bool   // the page uses the full window width (board)
	TimeZone   string // the user's IANA zone: app.js formats times in it
}

// Undo is a one-click form that reverses what the flash reports.
type Undo struct {
	Action string  // POST target
	Label  string  // button text, default "Undo"
	Fields []Field // hidden inputs
}

// Field is one hidden form input.
type Field struct{ Name, Value string }

// phoneTabs is how many nav entries stay in the tab row on a phone; the
// rest move into the "More" menu.
const phoneTabs = 2

func navItemClass(i int, item NavItem) string {
	c := ""
	if item.FirstAdmin {
		c = "nav-admin-start"
	}
	if i >= phoneTabs {
		c += " nav-extra"
	}
	return c
}

func undoLabel(u *Undo) string {
	if u.Label != "" {
		return u.Label
	}
	return "Undo"
}

// containerClass keeps the header as wide as a wide page's content, so
// the board's edges line up with the header's.
func containerClass(p Page) string {
	if p.Wide {
		return "container container-wide"
	}
	return "container"
}

// activeInMore reports whether the current page is one of the "More"
// menu's (only then is "More" marked as where the reader is).
func activeInMore(p Page) bool {
	if p.Active == "me" {
		return true
	}
	for i, item := range NavItems(p.User) {
		if i >= phoneTabs && item.Key == p.Active {
			return true
		}
	}
	return false
}

func mainClass(p Page) string {
	if p.Wide {
		return "container container-wide main"
	}
	return "container main"
}

// NavItem is one entry of the main navigation.
type NavItem struct {
	Key, Label, Href string
	Admin            bool
	FirstAdmin       bool // first admin entry: drawn after a divider
}

// NavItems lists the main navigation a user may see, in order.
func NavItems(u *User) []NavItem {
	items := []NavItem{
		{Key: "leads", Label: "Inbox", Href: "/leads"},
		{Key: "board", Label: "Board", Href: "/leads/board"},
	}
	if u.IsAdmin() {
		items = append(items,
			NavItem{Key: "sources", Label: "Sources", Href: "/sources", Admin: true, FirstAdmin: true},
			NavItem{Key: "forms", Label: "Web forms", Href: "/forms", Admin: true},
			NavItem{Key: "imports", Label: "Imports", Href: "/imports", Admin: true},
			NavItem{Key: "monitor", Label: "Monitoring", Href: "/monitor", Admin: true},
			NavItem{Key: "alerts", Label: "Alerts", Href: "/alerts", Admin: true},
			NavItem{Key: "users", Label: "Users", Href: "/settings/users", Admin: true},
			NavItem{Key: "tokens", Label: "API tokens", Href: "/settings/tokens", Admin: true},
			NavItem{Key: "endpoints", Label: "Endpoints", Href: "/settings/endpoints", Admin: true},
			NavItem{Key: "audit", Label: "Audit log", Href: "/settings/audit", Admin: true},
			NavItem{Key: "retention", Label: "Retention", Href: "/settings/retention", Admin: true},
			NavItem{Key: "assignment", Label: "Assignment", Href: "/settings/assignment", Admin: true},
			NavItem{Key: "mail", Label: "E-mail", Href: "/settings/mail", Admin: true},
		)
	}
	return items
}

func documentTitle(title string) string {
	if title == "" {
		return "Leadpipe"
	}
	return title + " · Leadpipe"
}

// needsWord agrees with openAlertsText: "1 open alert needs", "2 … need".
func needsWord(n int) string {
	if n == 1 {
		return "needs"
	}
	return "need"
}

func openAlertsText(n int) string {
	if n == 1 {
		return "1 open alert"
	}
	return strconv.Itoa(n) + " open alerts"
}

// initials gives the avatar letters: "Dana Scully" → "DS", "dana@x" → "D".
func initials(name, email string) string {
	src := name
	if src == "" {
		src = email
	}
	var out []rune
	word := true
	for _, r := range src {
		switch {
		case r == ' ' || r == '.' || r == '-' || r == '_':
			word = true
		case r == '@':
			word = false
			if len(out) > 0 {
				return string(out)
			}
		case word:
			out = append(out, unicode.ToUpper(r))
			word = false
		}
		if len(out) == 2 {
			break
		}
	}
	return string(out)
}

func displayName(u *User) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}

func roleLabel(role string) string {
	switch role {
	case RoleAdmin:
		return "Admin"
	case RoleStaff:
		return "Staff"
	}
	return role
}
