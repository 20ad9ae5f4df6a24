package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/forms"
	"leadpipe/views/webforms"
)

// The public side of web forms (docs/FORMS.md): the hosted page
// GET|POST /f/{tenant}/{form}, its success page and embed.js. No session,
// no CSRF token: a submission is proven by its signed token, and its
// answer is CORS-readable only by the form's allowed origins.

// firstTouchCookie keeps a visitor's first touch on the hosted page's
// path for 90 days (embed.js keeps its own on the embedding site).
const firstTouchCookie = "lp_ft"

// maxSubmissionFields bounds how many name=value pairs a body may carry.
const maxSubmissionFields = 200

func formPath(tenant, form string) string { return "/f/" + tenant + "/" + form }

func (s *Server) formPage(w http.ResponseWriter, r *http.Request) {
	tenant, form := chi.URLParam(r, "tenant"), chi.URLParam(r, "form")
	p, err := s.Forms.Page(r.Context(), tenant, form)
	if err != nil {
		s.formError(w, r, err)
		return
	}
	now := time.Now().UTC()
	touch := forms.TouchOf(r.URL.Query(), s.publicURL(r), r.Referer(), now)
	if c, err := r.Cookie(firstTouchCookie); err != nil || forms.ParseTouch(decodeCookie(c.Value)) == nil {
		b, _ := json.Marshal(touch)
		http.SetCookie(w, &http.Cookie{Name: firstTouchCookie, Value: base64.RawURLEncoding.EncodeToString(b),
			Path: "/f/" + tenant + "/", MaxAge: int(forms.FirstTouchCookieAge / time.Second), HttpOnly: true,
			Secure: r.TLS != nil || secureRequest(s, r), SameSite: http.SameSiteLaxMode})
	}
	view := pageView(p, url.Values{}, nil, "", touch)
	w.Header().Set("Cache-Control", "no-store")
	s.renderForm(w, r, http.StatusOK, p.Form, webforms.PageView(view))
}

func (s *Server) formThanks(w http.ResponseWriter, r *http.Request) {
	p, err := s.Forms.Page(r.Context(), chi.URLParam(r, "tenant"), chi.URLParam(r, "form"))
	if err != nil {
		s.formError(w, r, err)
		return
	}
	s.renderForm(w, r, http.StatusOK, p.Form, webforms.SuccessView(webforms.Success{TenantName: p.TenantName, FormName: p.Form.Name,
		Message: p.Form.SuccessMessage()}))
}

// formPreflight answers a CORS preflight: only for an allowed origin.
func (s *Server) formPreflight(w http.ResponseWriter, r *http.Request) {
	p, err := s.Forms.Lookup(r.Context(), chi.URLParam(r, "tenant"), chi.URLParam(r, "form"))
	if err != nil {
		s.formError(w, r, err)
		return
	}
	origin := r.Header.Get("Origin")
	w.Header().Add("Vary", "Origin")
	if !p.Form.OriginAllowed(origin) {
		WriteProblem(w, r, http.StatusForbidden, "this origin may not post to the form", nil)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) formSubmit(w http.ResponseWriter, r *http.Request) {
	tenant, form := chi.URLParam(r, "tenant"), chi.URLParam(r, "form")
	origin := r.Header.Get("Origin")
	values, body, asJSON, err := readSubmission(w, r)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	p, err := s.Forms.Lookup(r.Context(), tenant, form)
	if err != nil {
		s.formError(w, r, err)
		return
	}
	cors := origin != "" && p.Form.OriginAllowed(origin)
	if cors {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
	if asJSON && origin != "" && !cors && !s.sameOrigin(r, origin) {
		// A browser never sends this without a preflight we refused.
		WriteProblem(w, r, http.StatusForbidden, "this origin may not post to the form", nil)
		return
	}
	sub := forms.Submission{TenantSlug: tenant, FormSlug: form, Values: values, Body: body, Header: r.Header,
		IP: s.clientIP(r), ContentLength: r.ContentLength}
	if c, err := r.Cookie(firstTouchCookie); err == nil {
		sub.FirstTouch = decodeCookie(c.Value)
	}
	res, err := s.Forms.Submit(r.Context(), sub)
	if err != nil {
		s.formRefused(w, r, res.Page, values, err, asJSON)
		return
	}
	if asJSON {
		WriteJSON(w, http.StatusCreated, map[string]string{"status": res.Status})
		return
	}
	to := formPath(tenant, form) + "/thanks"
	if ru := res.Page.Form.Success.RedirectURL; ru != "" && forms.RedirectAllowed(ru, res.Page.Form.AllowedOrigins) {
		to = ru
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// formRefused answers a submission that stored nothing: JSON problems
// for fetch, the page again (values kept, the error next to its field)
// for a browser's post.
func (s *Server) formRefused(w http.ResponseWriter, r *http.Request, p forms.Page, values url.Values, err error, asJSON bool) {
	var ref *forms.Refusal
	status, notice := http.StatusUnprocessableEntity, ""
	var fields map[string]string
	switch {
	case errors.As(err, &ref):
		notice = ref.Message
		switch ref.Reason {
		case forms.ReasonRateLimited:
			status = http.StatusTooManyRequests
			secs := int(ref.RetryAfter / time.Second)
			if secs < 1 {
				secs = 1
			}
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		case forms.ReasonBadToken:
			status = http.StatusBadRequest
		case forms.ReasonCaptcha:
			fields = map[string]string{"captcha": ref.Message}
			notice = ""
		}
		if asJSON {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status,
				"detail": ref.Message, "reason": ref.Reason, "errors": fields})
			return
		}
	case apperr.Is(err, apperr.Invalid):
		var e *apperr.Error
		errors.As(err, &e)
		fields = e.Fields
		if asJSON {
			WriteError(w, r, s.Log, err)
			return
		}
	default:
		if asJSON || p.Form.ID == "" {
			s.formError(w, r, err)
			return
		}
		status, notice = http.StatusServiceUnavailable, "We could not save your details just now. Please submit again in a moment."
		w.Header().Set("Retry-After", "5")
	}
	if p.Form.ID == "" {
		s.formError(w, r, err)
		return
	}
	// The same token unless it was the problem: a resubmission is still
	// the same submission (and too_fast keeps its render time).
	if ref == nil || ref.Reason != forms.ReasonBadToken {
		if t := values.Get(forms.ParamToken); t != "" {
			p.Token = t
		}
	} else if fresh, err := s.Forms.Page(r.Context(), chi.URLParam(r, "tenant"), chi.URLParam(r, "form")); err == nil {
		p.Token = fresh.Token
	}
	touch := map[string]string{}
	for _, k := range forms.TouchParams {
		if v := values.Get(k); v != "" {
			touch[k] = v
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	s.renderForm(w, r, status, p.Form, webforms.PageView(pageView(p, values, fields, notice, touch)))
}

// formError answers an unknown form or an outage.
func (s *Server) formError(w http.ResponseWriter, r *http.Request, err error) {
	if apperr.Is(err, apperr.NotFound) {
		WriteProblem(w, r, http.StatusNotFound, "no such form", nil)
		return
	}
	WriteError(w, r, s.Log, err)
}

// pageView builds the page: the form's fields with the posted values and
// their errors, the first error focused.
func pageView(p forms.Page, values url.Values, errs map[string]string, notice string, touch map[string]string) webforms.Page {
	f := p.Form
	v := webforms.Page{TenantName: p.TenantName, FormName: f.Name, Action: formPath(p.TenantSlug, f.Slug), Notice: notice}
	v.Hidden = append(v.Hidden, webforms.Hidden{Name: forms.ParamToken, Value: p.Token})
	for _, k := range forms.TouchParams {
		if val := touch[k]; val != "" {
			v.Hidden = append(v.Hidden, webforms.Hidden{Name: k, Value: val})
		}
	}
	if ft := values.Get(forms.ParamFirstTouch); ft != "" {
		v.Hidden = append(v.Hidden, webforms.Hidden{Name: forms.ParamFirstTouch, Value: ft})
	}
	for _, fd := range f.Fields {
		fv := webforms.Field{Name: fd.Name, Label: fd.Label, Type: fd.Type, Value: values.Get(fd.Name), Required: fd.Required,
			Options: fd.Options, Error: errs[fd.Name]}
		if fv.Error != "" {
			fv.Autofocus = len(v.Errors) == 0
			v.Errors = append(v.Errors, fv)
		}
		v.Fields = append(v.Fields, fv)
	}
	if c := f.Consent; c != nil {
		v.Consent = &webforms.Consent{Text: c.Text, Required: c.Required, Checked: values.Get(forms.ParamConsent) != "",
			Error: errs[forms.ParamConsent]}
		if v.Consent.Error != "" {
			v.Errors = append(v.Errors, webforms.Field{Name: forms.ParamConsent, Label: "Consent", Error: v.Consent.Error})
		}
	}
	if c := f.Captcha; c != nil {
		v.Captcha = &webforms.Captcha{Provider: c.Provider, SiteKey: c.SiteKey, Error: errs["captcha"]}
	}
	return v
}

// readSubmission reads a form-encoded or JSON body of at most
// forms.MaxBody bytes and maxSubmissionFields pairs.
func readSubmission(w http.ResponseWriter, r *http.Request) (url.Values, []byte, bool, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	asJSON := mt == "application/json"
	if !asJSON && mt != "application/x-www-form-urlencoded" {
		return nil, nil, false, apperr.New(apperr.UnsupportedMediaType, "post the form as application/x-www-form-urlencoded or application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, forms.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, nil, asJSON, apperr.New(apperr.TooLarge, "a submission is at most 64 KiB")
		}
		return nil, nil, asJSON, apperr.New(apperr.BadRequest, "could not read the request body")
	}
	tooMany := apperr.New(apperr.TooLarge, "a submission has at most 200 fields")
	if !asJSON {
		if strings.Count(string(body), "&") >= maxSubmissionFields {
			return nil, nil, false, tooMany
		}
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, nil, false, apperr.New(apperr.BadRequest, "the form body is not valid form encoding")
		}
		return v, body, false, nil
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, nil, true, apperr.New(apperr.BadRequest, "the body is not a JSON object")
	}
	if len(m) > maxSubmissionFields {
		return nil, nil, true, tooMany
	}
	v := url.Values{}
	for k, x := range m {
		switch x := x.(type) {
		case string:
			v.Set(k, x)
		case bool:
			if x {
				v.Set(k, "yes")
			}
		case float64:
			v.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
		case nil:
		default:
			return nil, nil, true, apperr.InvalidFields(map[string]string{k: "must be a string, a number or true/false"})
		}
	}
	return v, body, true, nil
}

func decodeCookie(v string) string {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// publicURL is the request's URL as the visitor saw it.
func (s *Server) publicURL(r *http.Request) string {
	base := ""
	if s.Cfg != nil {
		base = strings.TrimRight(s.Cfg.BaseURL, "/")
	}
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + r.URL.RequestURI()
}

// sameOrigin reports whether origin is Leadpipe's own (the hosted page).
func (s *Server) sameOrigin(r *http.Request, origin string) bool {
	if s.Cfg != nil && s.Cfg.BaseURL != "" && strings.EqualFold(strings.TrimRight(s.Cfg.BaseURL, "/"), origin) {
		return true
	}
	return strings.EqualFold(origin, "http://"+r.Host) || strings.EqualFold(origin, "https://"+r.Host)
}

func secureRequest(s *Server, r *http.Request) bool {
	return s.Cfg != nil && strings.HasPrefix(s.Cfg.BaseURL, "https://")
}

// formStyle is the CSP source of the pages' inline stylesheet.
var formStyle = func() string {
	sum := sha256.Sum256([]byte(webforms.CSS))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// captchaOrigins are what a provider's widget loads and frames.
var captchaOrigins = map[string]string{
	forms.Turnstile: "https://challenges.cloudflare.com",
	forms.HCaptcha:  "https://hcaptcha.com https://*.hcaptcha.com",
}

// renderForm writes a public form page under a CSP of its own: the
// inline stylesheet by its hash, scripts and frames only from the form's
// captcha provider, posts to Leadpipe (and redirects to the allowed
// origins), framed only by the allowed origins.
func (s *Server) renderForm(w http.ResponseWriter, r *http.Request, status int, f forms.Form, c templ.Component) {
	ancestors := "'none'"
	if len(f.AllowedOrigins) > 0 {
		ancestors = strings.Join(f.AllowedOrigins, " ")
	}
	s.renderFormCSP(w, r, status, f, c, ancestors, strings.TrimSpace("'self' "+strings.Join(f.AllowedOrigins, " ")))
}

// renderFormCSP is renderForm with the frame ancestors and form targets
// given (the builder's preview: framed by Leadpipe, posting nowhere).
func (s *Server) renderFormCSP(w http.ResponseWriter, r *http.Request, status int, f forms.Form, c templ.Component, ancestors, formAction string) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	script, frames := "'none'", "'none'"
	if f.Captcha != nil {
		script, frames = captchaOrigins[f.Captcha.Provider], captchaOrigins[f.Captcha.Provider]
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+formStyle+"; script-src "+script+"; frame-src "+frames+
		"; connect-src "+script+"; img-src 'self' data:; form-action "+formAction+"; frame-ancestors "+ancestors+"; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
