package forms

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clip"
	"leadpipe/internal/monitor"
	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// Rejection reasons (the rejected-request inspector's "reason").
const (
	ReasonHoneypot    = "spam_honeypot"
	ReasonTooFast     = "too_fast"
	ReasonRateLimited = "rate_limited"
	ReasonCaptcha     = "captcha_failed"
	ReasonBadToken    = "bad_token"
)

// Refusal is a submission refused by a spam rule or its token: nothing is
// stored, and the request is listed with its reason.
type Refusal struct {
	Reason     string
	Message    string        // for the person
	RetryAfter time.Duration // rate_limited
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// Page is a form ready to render: its tenant's name and a fresh token.
type Page struct {
	TenantID, TenantSlug, TenantName string
	Form                             Form
	Token                            string
	secrets                          []string
	captchaSecret                    string
}

type cachedPage struct {
	p  Page
	at time.Time
}

// pageTTL: a changed form shows within this long on every server.
const pageTTL = 2 * time.Second

// Page finds a form by its public slugs (NotFound alike for an unknown
// tenant and form) with a freshly signed token.
func (s *Service) Page(ctx context.Context, tenantSlug, formSlug string) (Page, error) {
	p, err := s.page(ctx, tenantSlug, formSlug)
	if err != nil {
		return Page{}, err
	}
	p.Token = NewToken(p.secrets[0], p.Form.ID, s.now())
	return p, nil
}

// Lookup finds a form by its public slugs as Page does, without signing a
// token (a POST or a preflight needs none: the submission brings its own).
func (s *Service) Lookup(ctx context.Context, tenantSlug, formSlug string) (Page, error) {
	return s.page(ctx, tenantSlug, formSlug)
}

func (s *Service) page(ctx context.Context, tenantSlug, formSlug string) (Page, error) {
	key := tenantSlug + "/" + formSlug
	now := time.Now()
	s.cacheMu.Lock()
	c, ok := s.cache[key]
	gen := s.gen
	s.cacheMu.Unlock()
	if ok && now.Sub(c.at) < pageTTL {
		return c.p, nil
	}
	// When the cached page ages, every POST in flight for the form would
	// load it at once (three queries and a decryption each): one loads,
	// the others wait for its answer.
	v, err, _ := s.loads.Do(strconv.FormatUint(gen, 10)+"/"+key, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pageLoadTimeout)
		defer cancel()
		return s.load(lctx, tenantSlug, formSlug, key, now, gen)
	})
	if err != nil {
		return Page{}, err
	}
	return v.(Page), nil
}

// pageLoadTimeout bounds a shared page load (it outlives the request
// that began it while others wait for it).
const pageLoadTimeout = 5 * time.Second

// load reads a form's page from the database and caches it, unless the
// forms changed (invalidate) while it read.
func (s *Service) load(ctx context.Context, tenantSlug, formSlug, key string, now time.Time, gen uint64) (Page, error) {
	notFound := apperr.New(apperr.NotFound, "no such form")
	if !slugRE.MatchString(formSlug) {
		return Page{}, notFound
	}
	res, err := s.Sources.Resolve(ctx, tenantSlug, sources.FormSourceSlug(formSlug))
	if err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return Page{}, notFound
		}
		return Page{}, err
	}
	if res.Source.Kind != sources.KindForm || len(res.Secrets) == 0 {
		return Page{}, notFound
	}
	r, err := getFormBySlug(ctx, s.DB, res.TenantID, formSlug)
	if err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return Page{}, notFound
		}
		return Page{}, err
	}
	t, err := s.Tenants.Tenant(ctx, res.TenantID)
	if err != nil {
		return Page{}, err
	}
	p := Page{TenantID: res.TenantID, TenantSlug: tenantSlug, TenantName: t.Name, Form: s.withURLs(tenantSlug, r.form()),
		secrets: res.Secrets}
	if len(r.SecretEnc) > 0 {
		pt, err := s.Box.Open(r.SecretEnc, captchaAAD(res.TenantID, r.ID))
		if err != nil {
			return Page{}, err
		}
		p.captchaSecret = string(pt)
	}
	s.cacheMu.Lock()
	if s.gen == gen {
		if s.cache == nil || len(s.cache) > 10000 {
			s.cache = map[string]cachedPage{}
		}
		s.cache[key] = cachedPage{p: p, at: now}
	}
	s.cacheMu.Unlock()
	return p, nil
}

func (s *Service) invalidate() {
	s.cacheMu.Lock()
	s.cache = nil
	s.gen++
	s.cacheMu.Unlock()
}

// Submission is one POST to a form as the HTTP layer read it.
type Submission struct {
	TenantSlug, FormSlug string
	Values               url.Values // the posted fields (form-encoded, or a JSON object's members)
	Body                 []byte     // the raw body: its hash dedupes a submission without a token
	Header               http.Header
	IP                   string
	ContentLength        int64
	FirstTouch           string // the first-touch cookie's value (JSON), when the page set one
}

// Result is what became of an accepted submission.
type Result struct {
	Status string // accepted | duplicate
	Page   Page
}

// Submit checks a submission (token, rate limits, honeypot, fill time,
// fields, captcha) and stores it through the ingest's claim. Errors: a
// *Refusal (nothing stored, listed as a rejection), apperr Invalid with
// fields (the page re-renders them), NotFound, or the claim's error
// (unavailable).
func (s *Service) Submit(ctx context.Context, sub Submission) (Result, error) {
	p, err := s.page(ctx, sub.TenantSlug, sub.FormSlug)
	if err != nil {
		return Result{}, err
	}
	f := p.Form
	now := s.now()
	refuse := func(reason, msg string, retry time.Duration) (Result, error) {
		s.Stats.Add(p.TenantID, f.SourceID, monitor.Rejected, 1, now)
		if s.Rejections != nil {
			s.Rejections.Offer(p.TenantID, f.SourceID, rejections.Request{At: now, Reason: reason, Header: sub.Header,
				RemoteAddr: sub.IP, ContentLength: sub.ContentLength, Body: sub.Body, Secrets: p.secrets})
		}
		return Result{Page: p}, &Refusal{Reason: reason, Message: msg, RetryAfter: retry}
	}
	// The delivery id: the token, else the body's hash in a 24-hour window.
	var rendered time.Time
	tok := strings.TrimSpace(sub.Values.Get(ParamToken))
	deliveryID := tok
	if tok != "" {
		if rendered, err = CheckToken(tok, p.secrets, f.ID, now); err != nil {
			return refuse(ReasonBadToken, "This form has expired. Please submit it again.", 0)
		}
	} else {
		sum := sha256.Sum256(canonical(sub.Values))
		deliveryID = fmt.Sprintf("body:%d:%s", now.Unix()/86400, hex.EncodeToString(sum[:]))
	}
	if ok, retry := s.limits.allow(ctx, f.ID, sub.IP, deliveryID, f.Limits.PerIP, f.Limits.PerForm, now); !ok {
		return refuse(ReasonRateLimited, "Too many submissions. Please try again in a minute.", retry)
	}
	if sub.Values.Get(ParamHoneypot) != "" {
		return refuse(ReasonHoneypot, "The submission was refused.", 0)
	}
	if !rendered.IsZero() && now.Sub(rendered) < MinFillTime {
		return refuse(ReasonTooFast, "That was quicker than a person types. Please check the form and submit it again.", 0)
	}
	values, problems := checkFields(f, sub.Values)
	if len(problems) > 0 {
		return Result{Page: p}, apperr.InvalidFields(problems)
	}
	hold := ""
	if c := f.Captcha; c != nil {
		err := s.captcha.verify(ctx, c.Provider, p.captchaSecret, sub.Values.Get(ResponseParam[c.Provider]), sub.IP)
		switch {
		case errors.Is(err, errCaptchaRejected):
			return refuse(ReasonCaptcha, "Please confirm you are not a robot.", 0)
		case err != nil:
			// Kept, never lost and never accepted unchecked: an admin
			// reprocesses it from the form's source.
			hold = "held: the captcha could not be checked (" + err.Error() + "); reprocess to accept it"
			s.Log.WarnContext(ctx, "form captcha check failed", "tenant_id", p.TenantID, "form", f.ID, "err", err)
		}
	}
	rec := kinds.FormRecord{FormID: f.ID, FormName: f.Name, SubmissionID: kinds.NormalizeID(deliveryID), SubmittedAt: now,
		Fields: values, Attribution: touches(sub, now), IP: sub.IP, UserAgent: clip.Bytes(sub.Header.Get("User-Agent"), 500, "")}
	if c := f.Consent; c != nil {
		sum := sha256.Sum256([]byte(c.Text))
		rec.Consent = &kinds.Consent{Purpose: f.Name, Text: c.Text, TextSHA256: hex.EncodeToString(sum[:]),
			Granted: checked(sub.Values.Get(ParamConsent)), At: now, IP: sub.IP, FormID: f.ID}
	}
	payload, err := json.Marshal(rec)
	if err != nil {
		return Result{}, err
	}
	ack, err := s.In.ReceiveForm(ctx, webhooks.FormSubmission{TenantID: p.TenantID, SourceID: f.SourceID,
		DeliveryID: kinds.NormalizeID(deliveryID), Payload: payload, Hold: hold})
	if err != nil {
		return Result{}, err
	}
	return Result{Status: ack.Status, Page: p}, nil
}

// checkFields validates the posted values against the form: required,
// e-mail syntax, select options, lengths. It returns the values of the
// form's fields (nothing else is kept) and field → message problems.
func checkFields(f Form, in url.Values) (map[string]string, map[string]string) {
	out := map[string]string{}
	p := map[string]string{}
	for _, fd := range f.Fields {
		v := strings.TrimSpace(in.Get(fd.Name))
		if !utf8.ValidString(v) {
			p[fd.Name] = "contains characters we cannot read"
			continue
		}
		max := MaxValueLen
		if fd.Type == TypeTextarea {
			max = MaxTextareaLen
		}
		switch {
		case fd.Type == TypeCheckbox:
			if checked(v) {
				v = "yes"
			} else {
				v = ""
			}
			if fd.Required && v == "" {
				p[fd.Name] = "Please tick this box."
			}
		case v == "":
			if fd.Required {
				p[fd.Name] = "Please fill this in."
			}
		case utf8.RuneCountInString(v) > max:
			p[fd.Name] = fmt.Sprintf("Please shorten this to %d characters.", max)
		case fd.Type == TypeEmail && !validEmail(v):
			p[fd.Name] = "Please enter an e-mail address such as name@example.com."
		case fd.Type == TypeSelect && !slices.Contains(fd.Options, v):
			p[fd.Name] = "Please choose one of the options."
		}
		if v != "" {
			out[fd.Name] = v
		}
	}
	if c := f.Consent; c != nil && c.Required && !checked(in.Get(ParamConsent)) {
		p[ParamConsent] = "Please agree to continue."
	}
	return out, p
}

func checked(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "yes", "true", "1":
		return true
	}
	return false
}

func validEmail(v string) bool {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != v || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(v, '@')
	return at > 0 && strings.Contains(v[at+1:], ".") && !strings.ContainsAny(v, " <>")
}

// touches is the submission's attribution: the last touch from the page's
// hidden fields (this visit), the first from the page's first-touch value
// (the embed's cookie on the site, posted as _ft) or our own cookie.
func touches(sub Submission, now time.Time) *kinds.Touches {
	last := kinds.Touch{}
	for _, k := range TouchParams {
		if v := clip.Bytes(strings.TrimSpace(sub.Values.Get(k)), 2000, ""); v != "" {
			last[k] = v
		}
	}
	first := ParseTouch(sub.Values.Get(ParamFirstTouch))
	if first == nil {
		first = ParseTouch(sub.FirstTouch)
	}
	if len(last) == 0 && first == nil {
		return nil
	}
	t := &kinds.Touches{First: first}
	if len(last) > 0 {
		last["at"] = now.Format(time.RFC3339Nano)
		t.Last = last
	}
	return t
}

// ParseTouch reads a touch kept as JSON (the first-touch cookie); only
// the known keys, each at most 2000 characters. Nil when there is none.
func ParseTouch(raw string) kinds.Touch {
	if raw == "" || len(raw) > 8000 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	t := kinds.Touch{}
	for _, k := range kinds.TouchKeys {
		if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
			t[k] = clip.Bytes(strings.TrimSpace(v), 2000, "")
		}
	}
	if len(t) == 0 {
		return nil
	}
	return t
}

// TouchOf is this visit's touch from the landing URL's query and the
// referrer (the hosted page's hidden fields, and its first-touch cookie).
func TouchOf(q url.Values, landing, referrer string, now time.Time) kinds.Touch {
	t := kinds.Touch{}
	for _, k := range TouchParams {
		if v := clip.Bytes(strings.TrimSpace(q.Get(k)), 2000, ""); v != "" && k != "referrer" && k != "landing_page" {
			t[k] = v
		}
	}
	if referrer != "" {
		t["referrer"] = clip.Bytes(referrer, 2000, "")
	}
	if landing != "" {
		t["landing_page"] = clip.Bytes(landing, 2000, "")
	}
	t["at"] = now.Format(time.RFC3339)
	return t
}

// canonical is the values in a stable order (a submission without a token
// is deduplicated by it).
func canonical(v url.Values) []byte {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, x := range v[k] {
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(x) + "&")
		}
	}
	return []byte(b.String())
}
