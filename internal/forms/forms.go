// Package forms holds a tenant's hosted web forms (docs/FORMS.md): their
// definition (fields, consent, success, allowed origins, captcha, limits),
// the signed submission token, the spam rules, and the submission itself,
// which is stored as a delivery of the form's own source of kind `form`
// through the webhook ingest's claim (webhooks.Ingest.ReceiveForm), so a
// double click, a reload-and-resubmit or a retry is one lead.
package forms

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Field types.
const (
	TypeText     = "text"
	TypeEmail    = "email"
	TypeTel      = "tel"
	TypeTextarea = "textarea"
	TypeSelect   = "select"
	TypeCheckbox = "checkbox"
	TypeHidden   = "hidden"
)

var fieldTypes = []string{TypeText, TypeEmail, TypeTel, TypeTextarea, TypeSelect, TypeCheckbox, TypeHidden}

// Captcha providers.
const (
	Turnstile = "turnstile"
	HCaptcha  = "hcaptcha"
)

// Limits and defaults (docs/FORMS.md, "Spam").
const (
	MaxBody             = 64 << 10 // bytes of a submission (413 beyond)
	MaxFields           = 50       // fields of a form
	MaxValueLen         = 500      // characters of a one-line value
	MaxTextareaLen      = 10000    // characters of a textarea
	MinFillTime         = 2 * time.Second
	TokenMaxAge         = 24 * time.Hour
	DefaultPerIP        = 10  // submissions a minute per address per form
	DefaultPerForm      = 600 // submissions a minute per form
	DefaultSuccess      = "Thank you. We received your details."
	FirstTouchCookieAge = 90 * 24 * time.Hour
)

// Names the hosted page posts besides the form's own fields.
const (
	ParamToken      = "_token"
	ParamFirstTouch = "_ft"
	ParamHoneypot   = "website"
	ParamConsent    = "consent"
)

// TouchParams are the attribution values a page posts as hidden fields
// (the last touch; "at" is the submission's time).
var TouchParams = []string{"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content",
	"gclid", "fbclid", "li_fat_id", "referrer", "landing_page"}

// Field is one input of a form.
type Field struct {
	Name     string   `json:"name"`
	Label    string   `json:"label"`
	Type     string   `json:"type"`
	Required bool     `json:"required"`
	Options  []string `json:"options,omitempty"`
}

// ConsentDef is a form's consent checkbox.
type ConsentDef struct {
	Text     string `json:"text"`
	Required bool   `json:"required"`
}

// Success is what a person sees after submitting: a message, or a
// redirect to a page on one of the allowed origins.
type Success struct {
	Message     string `json:"message,omitempty"`
	RedirectURL string `json:"redirect_url,omitempty"`
}

// Captcha is a form's captcha; the secret is only ever written.
type Captcha struct {
	Provider  string `json:"provider"`
	SiteKey   string `json:"site_key"`
	Secret    string `json:"secret,omitempty"`
	HasSecret bool   `json:"has_secret"`
}

// Limits are the form's rate limits, per minute.
type Limits struct {
	PerIP   int `json:"per_ip_per_minute"`
	PerForm int `json:"per_form_per_minute"`
}

// Form is one web form as the API shows it.
type Form struct {
	TenantID       string      `json:"-"`
	ID             string      `json:"id"`
	Slug           string      `json:"slug"`
	Name           string      `json:"name"`
	SourceID       string      `json:"source_id"`
	Fields         []Field     `json:"fields"`
	Consent        *ConsentDef `json:"consent"`
	Success        Success     `json:"success"`
	AllowedOrigins []string    `json:"allowed_origins"`
	Captcha        *Captcha    `json:"captcha"`
	Limits         Limits      `json:"limits"`
	URL            string      `json:"url,omitempty"`       // the hosted page
	EmbedURL       string      `json:"embed_url,omitempty"` // embed.js
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// definition is what the forms table's definition column holds.
type definition struct {
	Fields         []Field     `json:"fields"`
	Consent        *ConsentDef `json:"consent,omitempty"`
	Success        Success     `json:"success"`
	AllowedOrigins []string    `json:"allowed_origins"`
	Captcha        *Captcha    `json:"captcha,omitempty"` // without the secret
	Limits         Limits      `json:"limits"`
}

// Input is POST /api/v1/forms and, with absent members kept,
// PATCH /api/v1/forms/{id}.
type Input struct {
	Slug           *string         `json:"slug"`
	Name           *string         `json:"name"`
	Fields         *[]Field        `json:"fields"`
	Consent        json.RawMessage `json:"consent"` // null removes it
	Success        *Success        `json:"success"`
	AllowedOrigins *[]string       `json:"allowed_origins"`
	Captcha        json.RawMessage `json:"captcha"` // null removes it
	Limits         *Limits         `json:"limits"`
}

var (
	slugRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,57}$`)
	fieldNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
)

// reserved are the names the hosted page posts itself.
func reserved(name string) bool {
	return name == ParamHoneypot || name == ParamConsent || slices.Contains(TouchParams, name)
}

// validate checks a whole form (after a patch was applied) and returns
// field → message problems.
func validate(f *Form) map[string]string {
	p := map[string]string{}
	if !slugRE.MatchString(f.Slug) {
		p["slug"] = "must match ^[a-z0-9][a-z0-9-]{1,57}$"
	}
	f.Name = strings.TrimSpace(f.Name)
	if f.Name == "" || len(f.Name) > 200 {
		p["name"] = "is required (at most 200 characters)"
	}
	if len(f.Fields) == 0 || len(f.Fields) > MaxFields {
		p["fields"] = fmt.Sprintf("between 1 and %d fields", MaxFields)
	}
	seen := map[string]bool{}
	for i, fd := range f.Fields {
		at := fmt.Sprintf("fields[%d]", i)
		switch {
		case !fieldNameRE.MatchString(fd.Name):
			p[at+".name"] = "must match ^[a-z][a-z0-9_]{0,62}$"
		case reserved(fd.Name):
			p[at+".name"] = "is a name the page uses itself"
		case seen[fd.Name]:
			p[at+".name"] = "is used by another field"
		}
		seen[fd.Name] = true
		if !slices.Contains(fieldTypes, fd.Type) {
			p[at+".type"] = "must be one of " + strings.Join(fieldTypes, ", ")
		}
		f.Fields[i].Label = strings.TrimSpace(fd.Label)
		if (f.Fields[i].Label == "" && fd.Type != TypeHidden) || len(fd.Label) > 200 {
			p[at+".label"] = "is required (at most 200 characters)"
		}
		if fd.Type == TypeSelect {
			if len(fd.Options) == 0 || len(fd.Options) > 100 {
				p[at+".options"] = "a select needs 1 to 100 options"
			}
			for _, o := range fd.Options {
				if strings.TrimSpace(o) == "" || len(o) > 200 {
					p[at+".options"] = "each option is 1 to 200 characters"
				}
			}
		} else if len(fd.Options) > 0 {
			p[at+".options"] = "only a select has options"
		}
	}
	if c := f.Consent; c != nil {
		c.Text = strings.TrimSpace(c.Text)
		if c.Text == "" || len(c.Text) > 2000 {
			p["consent.text"] = "is required (at most 2000 characters)"
		}
	}
	if len(f.AllowedOrigins) > 20 {
		p["allowed_origins"] = "at most 20 origins"
	}
	for i, o := range f.AllowedOrigins {
		if norm, ok := origin(o); !ok || norm != o {
			p[fmt.Sprintf("allowed_origins[%d]", i)] = "must be an origin such as https://www.example.com (scheme, host, optional port; nothing else)"
		}
	}
	s := &f.Success
	if len(s.Message) > 2000 {
		p["success.message"] = "at most 2000 characters"
	}
	if s.RedirectURL != "" {
		if s.Message != "" {
			p["success"] = "a message or a redirect_url, not both"
		}
		if !RedirectAllowed(s.RedirectURL, f.AllowedOrigins) {
			p["success.redirect_url"] = "must be an http(s) URL on one of allowed_origins"
		}
	}
	if c := f.Captcha; c != nil {
		if c.Provider != Turnstile && c.Provider != HCaptcha {
			p["captcha.provider"] = "must be turnstile or hcaptcha"
		}
		if c.SiteKey == "" || len(c.SiteKey) > 200 {
			p["captcha.site_key"] = "is required (at most 200 characters)"
		}
	}
	if f.Limits.PerIP == 0 {
		f.Limits.PerIP = DefaultPerIP
	}
	if f.Limits.PerForm == 0 {
		f.Limits.PerForm = DefaultPerForm
	}
	if f.Limits.PerIP < 1 || f.Limits.PerIP > 10000 {
		p["limits.per_ip_per_minute"] = "between 1 and 10000"
	}
	if f.Limits.PerForm < 1 || f.Limits.PerForm > 100000 {
		p["limits.per_form_per_minute"] = "between 1 and 100000"
	}
	return p
}

// origin returns the origin of an absolute http(s) URL, lower-case.
func origin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// OriginAllowed reports whether an Origin header names one of the form's
// allowed origins.
func (f Form) OriginAllowed(o string) bool {
	norm, ok := origin(o)
	return ok && norm == o && slices.Contains(f.AllowedOrigins, norm)
}

// RedirectAllowed reports whether a redirect URL is on an allowed origin.
func RedirectAllowed(raw string, allowed []string) bool {
	o, ok := origin(raw)
	return ok && slices.Contains(allowed, o)
}

// SuccessMessage is the message of the success page.
func (f Form) SuccessMessage() string {
	if f.Success.Message != "" {
		return f.Success.Message
	}
	return DefaultSuccess
}
