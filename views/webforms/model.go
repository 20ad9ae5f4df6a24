// Package webforms renders a tenant's hosted web form (docs/FORMS.md): the
// public page, its success page and the builder's preview. The pages are
// standalone (no staff layout), in the tenant's name, readable at 390 px
// and usable without JavaScript.
package webforms

// Field is one input as the page shows it.
type Field struct {
	Name, Label, Type string
	Value             string
	Required          bool
	Options           []string
	Error             string
	Autofocus         bool // the first field with an error
}

// Consent is the consent checkbox.
type Consent struct {
	Text     string
	Required bool
	Checked  bool
	Error    string
}

// Captcha is the provider's widget.
type Captcha struct {
	Provider, SiteKey string
	Error             string
}

// Hidden is a hidden input (the token, attribution).
type Hidden struct{ Name, Value string }

// Page is the hosted form.
type Page struct {
	TenantName, FormName string
	Action               string
	Hidden               []Hidden
	Fields               []Field
	Consent              *Consent
	Captcha              *Captcha
	Notice               string // a message about the whole form (expired, too fast)
	Errors               []Field
	Preview              bool // the builder's preview: nothing posts
}

// Success is the page after a submission.
type Success struct {
	TenantName, FormName, Message string
}

// FieldID is the id of a field's input.
func FieldID(name string) string { return "f-" + name }

func errID(name string) string { return "f-" + name + "-error" }

// CaptchaScript is the provider's widget script.
func CaptchaScript(provider string) string {
	if provider == "hcaptcha" {
		return "https://js.hcaptcha.com/1/api.js"
	}
	return "https://challenges.cloudflare.com/turnstile/v0/api.js"
}

func captchaClass(provider string) string {
	if provider == "hcaptcha" {
		return "h-captcha"
	}
	return "cf-turnstile"
}

func errorCount(n int) string {
	if n == 1 {
		return "1 field"
	}
	return itoa(n) + " fields"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func firstErrorIs(p Page, name string) bool {
	return len(p.Errors) > 0 && p.Errors[0].Name == name
}

func autocompleteOf(name, typ string) string {
	switch {
	case typ == "email" || name == "email":
		return "email"
	case typ == "tel" || name == "phone":
		return "tel"
	case name == "name":
		return "name"
	case name == "company":
		return "organization"
	case name == "first_name":
		return "given-name"
	case name == "last_name":
		return "family-name"
	}
	return "on"
}
