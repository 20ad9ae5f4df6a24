package kinds

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// formKind: a submission of one of the tenant's own web forms
// (docs/FORMS.md). Forms are posted to /f/{tenant}/{form}, where
// internal/forms checks the submission token and the spam rules and
// stores the FormRecord below as the delivery: nothing is ever accepted
// for a form source on /hooks, so Verify always refuses.
type formKind struct{}

var _ Kind = formKind{}

// TouchKeys are the attribution keys a touch holds, in the order the
// lead page shows them.
var TouchKeys = []string{"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content",
	"gclid", "fbclid", "li_fat_id", "referrer", "landing_page", "at"}

// Touch is one visit's attribution: TouchKeys → value ("" keys left out).
type Touch map[string]string

// Touches is what a record says of the lead's first and last touch.
type Touches struct {
	First Touch `json:"first,omitempty"`
	Last  Touch `json:"last,omitempty"`
}

// Consent is one consent record (docs/FORMS.md, "Consent").
type Consent struct {
	Purpose    string    `json:"purpose"`
	Text       string    `json:"text"`
	TextSHA256 string    `json:"text_sha256"`
	Granted    bool      `json:"granted"`
	At         time.Time `json:"at"`
	IP         string    `json:"ip"`
	FormID     string    `json:"form_id"`
}

// FormRecord is a stored form submission (a form source's delivery).
type FormRecord struct {
	FormID       string            `json:"form_id"`
	FormName     string            `json:"form_name"`
	SubmissionID string            `json:"submission_id"` // the token, or the body's hash
	SubmittedAt  time.Time         `json:"submitted_at"`
	Fields       map[string]string `json:"fields"`
	Attribution  *Touches          `json:"attribution,omitempty"`
	Consent      *Consent          `json:"consent,omitempty"`
	IP           string            `json:"ip,omitempty"`
	UserAgent    string            `json:"user_agent,omitempty"`
}

func (formKind) Name() string { return Form }

func (formKind) Verify(http.Header, []byte, []string, time.Time) error {
	return &sigError{msg: fmt.Sprintf("%v: form submissions are posted to /f/{tenant}/{form}", ErrSignature), reason: ErrMissingSignature}
}

func (formKind) Parse(http.Header, []byte) ([]Record, error) {
	return nil, fmt.Errorf("%w: form submissions are posted to /f/{tenant}/{form}", ErrUnparseable)
}

// Map: the natural key is the e-mail address (lower-case), so a person
// who fills the form twice is one lead with a first and a last touch;
// without one, the submission itself. Fields email, name (or first_name +
// last_name), phone and company; the lead's payload is the fields.
func (formKind) Map(raw json.RawMessage) (Lead, error) {
	var rec FormRecord
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Fields == nil {
		return Lead{}, fmt.Errorf("%w: not a form submission", ErrUnparseable)
	}
	f := func(name string) string { return strings.TrimSpace(rec.Fields[name]) }
	email := f("email")
	ref := strings.ToLower(email)
	if ref == "" {
		ref = rec.SubmissionID
	}
	ref = cleanID(ref)
	if ref == "" {
		return Lead{}, fmt.Errorf("%w: no e-mail and no submission id", ErrNoNaturalKey)
	}
	payload, err := json.Marshal(rec.Fields)
	if err != nil {
		return Lead{}, fmt.Errorf("%w: %v", ErrUnparseable, err)
	}
	l := Lead{SourceRef: ref, Email: email, Name: firstNonEmpty(f("name"), joinName(f("first_name"), f("last_name"))),
		Phone: f("phone"), Company: f("company"), Payload: payload, Touch: rec.Attribution, Consent: rec.Consent}
	if !rec.SubmittedAt.IsZero() {
		t := rec.SubmittedAt.UTC()
		l.EventTime, l.CreatedAt = &t, &t
	}
	return l, nil
}
