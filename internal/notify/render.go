package notify

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
	"time"
)

// The messages' templates: for each kind a plain-text and an HTML part,
// each defining "subject" (docs/NOTIFICATIONS.md).
//
//go:embed templates/*.txt templates/*.html
var templateFS embed.FS

// LeadBrief is what a message shows of a lead (read at send time from the
// leads area, so an erased lead is never mailed about).
type LeadBrief struct {
	ID, Name, Email, Phone, Company string
	NextStep                        string
	DueAt                           *time.Time
	FirstResponseDue                *time.Time
	OwnerID                         string
}

// Title is the lead as a person names it.
func (l LeadBrief) Title() string {
	for _, s := range []string{l.Name, l.Company, l.Email, l.Phone} {
		if s != "" {
			return s
		}
	}
	return "a lead without a name"
}

// View is a template's data.
type View struct {
	Name    string // the recipient's
	Zone    string // the recipient's zone name
	BaseURL string
	Tenant  string
	Lead    LeadBrief
	Rule    string
	Owner   string
	Link    string
	Expires time.Time
	Inviter string
	Due     []LeadBrief
	Overdue []LeadBrief
}

type kindTemplates struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

// templates parses every kind's parts once, with times shown in loc.
func parseTemplates(loc *time.Location) (map[string]kindTemplates, error) {
	when := func(t any) string {
		var v time.Time
		switch x := t.(type) {
		case time.Time:
			v = x
		case *time.Time:
			if x == nil {
				return ""
			}
			v = *x
		default:
			return ""
		}
		return v.In(loc).Format("Mon 2 Jan 2006, 15:04 MST")
	}
	out := map[string]kindTemplates{}
	for _, k := range Kinds {
		tt, err := texttemplate.New(k+".txt").Funcs(texttemplate.FuncMap{"when": when}).ParseFS(templateFS, "templates/"+k+".txt", "templates/footer.txt")
		if err != nil {
			return nil, err
		}
		ht, err := htmltemplate.New(k+".html").Funcs(htmltemplate.FuncMap{"when": when}).ParseFS(templateFS, "templates/"+k+".html", "templates/layout.html")
		if err != nil {
			return nil, err
		}
		out[k] = kindTemplates{text: tt, html: ht}
	}
	return out, nil
}

// Render makes a kind's subject, text and HTML for v, with times in loc.
func Render(kind string, v View, loc *time.Location) (subject, text, html string, err error) {
	if loc == nil {
		loc = time.UTC
	}
	if v.Zone == "" {
		v.Zone = loc.String()
	}
	// Parsed per message: the zone is the recipient's, and a send is
	// dominated by the SMTP round trips, not by this.
	ts, err := parseTemplates(loc)
	if err != nil {
		return "", "", "", err
	}
	t, ok := ts[kind]
	if !ok {
		return "", "", "", fmt.Errorf("notify: no template for %q", kind)
	}
	var sb, tb, hb bytes.Buffer
	if err := t.text.ExecuteTemplate(&sb, "subject", v); err != nil {
		return "", "", "", err
	}
	if err := t.text.Execute(&tb, v); err != nil {
		return "", "", "", err
	}
	if err := t.html.Execute(&hb, v); err != nil {
		return "", "", "", err
	}
	subject = strings.Join(strings.Fields(sb.String()), " ")
	if len(subject) > 250 {
		subject = subject[:250]
	}
	return subject, tb.String(), hb.String(), nil
}
