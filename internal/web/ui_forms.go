package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/forms"
	"leadpipe/views/webforms"
)

// The web form builder (admin): GET|POST /forms, GET|POST /forms/{id},
// GET|POST /forms/{id}/preview, POST /forms/{id}/delete.
func (s *Server) formUIRoutes(r chi.Router) {
	r.Get("/forms", s.uiForms)
	r.Post("/forms", s.withForm(s.uiCreateForm))
	r.Get("/forms/{id}", s.uiFormBuilder)
	r.Post("/forms/{id}", s.withForm(s.uiSaveForm))
	r.Get("/forms/{id}/preview", s.uiFormPreview)
	r.Post("/forms/{id}/preview", s.uiFormPreview)
}

func (s *Server) uiForms(w http.ResponseWriter, r *http.Request) {
	s.renderFormList(w, r, http.StatusOK, "", "", nil)
}

func (s *Server) renderFormList(w http.ResponseWriter, r *http.Request, status int, name, slug string, errs map[string]string) {
	sess := sessionFrom(r.Context())
	list, err := s.Forms.List(r.Context(), sess.Tenant.ID, sess.Tenant.Slug)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := webforms.ListView{Page: s.page(w, r, "Web forms", "forms"), Name: name, Slug: slug, Errors: errs}
	for _, f := range list {
		v.Forms = append(v.Forms, webforms.ListItem{ID: f.ID, Name: f.Name, Slug: f.Slug, URL: f.URL, Fields: len(f.Fields)})
	}
	s.render(w, r, status, webforms.List(v))
}

func (s *Server) uiCreateForm(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	name, slug := strings.TrimSpace(r.PostFormValue("name")), strings.TrimSpace(r.PostFormValue("slug"))
	fields := []forms.Field{{Name: "name", Label: "Your name", Type: forms.TypeText, Required: true},
		{Name: "email", Label: "E-mail", Type: forms.TypeEmail, Required: true}}
	f, err := s.Forms.Create(r.Context(), sess.Tenant.ID, sess.Tenant.Slug, forms.Input{Name: &name, Slug: &slug, Fields: &fields})
	switch {
	case apperr.Is(err, apperr.Invalid):
		s.renderFormList(w, r, http.StatusUnprocessableEntity, name, slug, fieldErrors(err))
		return
	case apperr.Is(err, apperr.Conflict):
		s.renderFormList(w, r, http.StatusConflict, name, slug, map[string]string{"slug": "Another form or source uses this address."})
		return
	case err != nil:
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Form created. Add its fields, then share its page or embed it.")
	seeOther(w, r, "/forms/"+f.ID)
}

// urlForm reads the signed-in tenant's form the URL's {id} names.
func (s *Server) urlForm(r *http.Request) (forms.Form, error) {
	sess := sessionFrom(r.Context())
	return s.Forms.Get(r.Context(), sess.Tenant.ID, sess.Tenant.Slug, chi.URLParam(r, "id"))
}

func (s *Server) uiFormBuilder(w http.ResponseWriter, r *http.Request) {
	f, err := s.urlForm(r)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, webforms.BuilderView(s.builderView(w, r, f, nil)))
}

func (s *Server) builderView(w http.ResponseWriter, r *http.Request, f forms.Form, errs map[string]string) webforms.Builder {
	v := webforms.Builder{Page: s.page(w, r, f.Name, "forms"), ID: f.ID, Slug: f.Slug, URL: f.URL, EmbedURL: f.EmbedURL,
		SourceID: f.SourceID, Name: f.Name, SuccessMessage: f.Success.Message, RedirectURL: f.Success.RedirectURL,
		AllowedOrigins: strings.Join(f.AllowedOrigins, "\n"), PerIP: strconv.Itoa(f.Limits.PerIP),
		PerForm: strconv.Itoa(f.Limits.PerForm), Errors: errs}
	for _, fd := range f.Fields {
		v.Fields = append(v.Fields, webforms.BuilderField{Name: fd.Name, Label: fd.Label, Type: fd.Type,
			Options: strings.Join(fd.Options, "\n"), Required: fd.Required})
	}
	// Two empty rows to add fields without JavaScript.
	v.Fields = append(v.Fields, webforms.BuilderField{Type: forms.TypeText}, webforms.BuilderField{Type: forms.TypeText})
	if c := f.Consent; c != nil {
		v.ConsentText, v.ConsentRequired = c.Text, c.Required
	}
	if c := f.Captcha; c != nil {
		v.CaptchaProvider, v.CaptchaSiteKey, v.CaptchaHasSecret = c.Provider, c.SiteKey, c.HasSecret
	}
	return v
}

// builderInput reads the builder's posted settings into an API input.
func builderInput(pf url.Values) forms.Input {
	name := strings.TrimSpace(pf.Get("name"))
	in := forms.Input{Name: &name}
	var fields []forms.Field
	for i := 0; i < forms.MaxFields+2; i++ {
		n := strings.TrimSpace(pf.Get("field_name_" + strconv.Itoa(i)))
		if n == "" {
			if _, ok := pf["field_name_"+strconv.Itoa(i)]; !ok {
				break
			}
			continue
		}
		fd := forms.Field{Name: n, Label: pf.Get("field_label_" + strconv.Itoa(i)), Type: pf.Get("field_type_" + strconv.Itoa(i)),
			Required: pf.Get("field_required_"+strconv.Itoa(i)) != ""}
		if fd.Type == forms.TypeSelect {
			for _, o := range strings.Split(pf.Get("field_options_"+strconv.Itoa(i)), "\n") {
				if o = strings.TrimSpace(o); o != "" {
					fd.Options = append(fd.Options, o)
				}
			}
		}
		fields = append(fields, fd)
	}
	in.Fields = &fields
	if t := strings.TrimSpace(pf.Get("consent_text")); t != "" {
		in.Consent, _ = json.Marshal(forms.ConsentDef{Text: t, Required: pf.Get("consent_required") != ""})
	} else {
		in.Consent = json.RawMessage("null")
	}
	in.Success = &forms.Success{Message: strings.TrimSpace(pf.Get("success_message")), RedirectURL: strings.TrimSpace(pf.Get("redirect_url"))}
	origins := []string{}
	for _, o := range strings.Split(pf.Get("allowed_origins"), "\n") {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			origins = append(origins, o)
		}
	}
	in.AllowedOrigins = &origins
	if p := pf.Get("captcha_provider"); p != "" {
		in.Captcha, _ = json.Marshal(forms.Captcha{Provider: p, SiteKey: strings.TrimSpace(pf.Get("captcha_site_key")),
			Secret: strings.TrimSpace(pf.Get("captcha_secret"))})
	} else {
		in.Captcha = json.RawMessage("null")
	}
	perIP, _ := strconv.Atoi(strings.TrimSpace(pf.Get("per_ip")))
	perForm, _ := strconv.Atoi(strings.TrimSpace(pf.Get("per_form")))
	in.Limits = &forms.Limits{PerIP: perIP, PerForm: perForm}
	return in
}

func (s *Server) uiSaveForm(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := chi.URLParam(r, "id")
	if r.PostFormValue("delete") != "" {
		if err := s.Forms.Delete(r.Context(), sess.Tenant.ID, id); err != nil {
			s.uiError(w, r, err)
			return
		}
		s.setFlash(w, r, "Form deleted. Its page no longer takes submissions; its leads stay.")
		seeOther(w, r, "/forms")
		return
	}
	in := builderInput(r.PostForm)
	f, err := s.Forms.Patch(r.Context(), sess.Tenant.ID, sess.Tenant.Slug, id, in)
	if apperr.Is(err, apperr.Invalid) {
		cur, gerr := s.Forms.Get(r.Context(), sess.Tenant.ID, sess.Tenant.Slug, id)
		if gerr != nil {
			s.uiError(w, r, gerr)
			return
		}
		v := s.builderView(nil, r, typedForm(cur, in), fieldErrors(err))
		v.Page = s.page(nil, r, cur.Name, "forms")
		s.render(w, r, http.StatusUnprocessableEntity, webforms.BuilderView(v))
		return
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Form saved. Its page shows the changes within a few seconds.")
	seeOther(w, r, "/forms/"+f.ID)
}

// typedJSON is the builder's raw JSON value as a T; nil when it is absent,
// null or not a T.
func typedJSON[T any](raw json.RawMessage) *T {
	var v T
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return &v
}

// typedForm is the saved form with the builder's unsaved input over it
// (to re-render what was typed, or to preview it).
func typedForm(f forms.Form, in forms.Input) forms.Form {
	if in.Name != nil {
		f.Name = *in.Name
	}
	if in.Fields != nil {
		f.Fields = *in.Fields
	}
	f.Consent = typedJSON[forms.ConsentDef](in.Consent)
	if in.Success != nil {
		f.Success = *in.Success
	}
	if in.AllowedOrigins != nil {
		f.AllowedOrigins = *in.AllowedOrigins
	}
	if f.Captcha = typedJSON[forms.Captcha](in.Captcha); f.Captcha != nil {
		f.Captcha.Secret = ""
	}
	if in.Limits != nil {
		f.Limits = *in.Limits
	}
	return f
}

// uiFormPreview renders the hosted page inside the builder's frame: the
// saved form (GET) or the settings as typed (POST), nothing submittable.
func (s *Server) uiFormPreview(w http.ResponseWriter, r *http.Request) {
	f, err := s.urlForm(r)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	if r.Method == http.MethodPost {
		if err := parseForm(w, r); err != nil {
			s.uiError(w, r, err)
			return
		}
		f = typedForm(f, builderInput(r.PostForm))
	}
	sess := sessionFrom(r.Context())
	p := forms.Page{TenantName: sess.Tenant.Name, TenantSlug: sess.Tenant.Slug, Form: f, Token: "preview"}
	v := pageView(p, url.Values{}, nil, "", nil)
	v.Preview = true
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	// The builder frames it; the widget of a captcha is not loaded.
	f.Captcha, f.AllowedOrigins = nil, nil
	s.renderFormCSP(w, r, http.StatusOK, f, webforms.PageView(v), "'self'", "'none'")
}
