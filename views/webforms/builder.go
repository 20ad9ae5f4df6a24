package webforms

import (
	"leadpipe/views/components"
	"leadpipe/views/layouts"
)

// ListView is GET /forms: the tenant's web forms and "New form".
type ListView struct {
	Page   layouts.Page
	Forms  []ListItem
	Name   string
	Slug   string
	Errors map[string]string
}

// ListItem is one form in the list.
type ListItem struct {
	ID, Name, Slug, URL string
	Fields              int
}

// BuilderField is one row of the builder's field table, as typed.
type BuilderField struct {
	Name, Label, Type, Options string // options one per line
	Required                   bool
}

// Builder is GET /forms/{id}: the form's settings as typed, with errors,
// beside a live preview of the hosted page.
type Builder struct {
	Page                    layouts.Page
	ID, Slug, URL, EmbedURL string
	SourceID                string
	Name                    string
	Fields                  []BuilderField
	ConsentText             string
	ConsentRequired         bool
	SuccessMessage          string
	RedirectURL             string
	AllowedOrigins          string // one per line
	CaptchaProvider         string // "", turnstile, hcaptcha
	CaptchaSiteKey          string
	CaptchaHasSecret        bool
	PerIP, PerForm          string
	Errors                  map[string]string
}

// FieldTypes are the type choices of a field row.
var FieldTypes = []components.Option{{Value: "text", Label: "Text"}, {Value: "email", Label: "E-mail"},
	{Value: "tel", Label: "Phone"}, {Value: "textarea", Label: "Long text"}, {Value: "select", Label: "Choice"},
	{Value: "checkbox", Label: "Tick box"}, {Value: "hidden", Label: "Hidden"}}

var captchaChoices = []components.Option{{Value: "", Label: "None"}, {Value: "turnstile", Label: "Cloudflare Turnstile"},
	{Value: "hcaptcha", Label: "hCaptcha"}}

func rowName(prefix string, i int) string { return prefix + "_" + itoa(i) }

func embedSnippet(u string) string { return `<script src="` + u + `"></script>` }

// fieldError is the first error of field row i.
func (b Builder) fieldError(i int) string {
	for _, k := range []string{"name", "label", "type", "options"} {
		if e := b.Errors["fields["+itoa(i)+"]."+k]; e != "" {
			return k + ": " + e
		}
	}
	return ""
}
