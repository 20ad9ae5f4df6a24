package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/forms"
)

// formEmbed serves GET /f/{tenant}/{form}/embed.js: a script that renders
// the form where it is included (or into the element named by its
// data-target) on a page of one of the form's allowed origins, keeps the
// visitor's first touch in a first-party cookie of that site for 90 days,
// and submits with fetch (JSON, answered 201 {"status"}). Each load
// carries a fresh submission token, so a double click or a retry is one
// lead.
func (s *Server) formEmbed(w http.ResponseWriter, r *http.Request) {
	tenant, form := chi.URLParam(r, "tenant"), chi.URLParam(r, "form")
	p, err := s.Forms.Page(r.Context(), tenant, form)
	if err != nil {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("/* no such form */\n"))
		return
	}
	f := p.Form
	type field struct {
		Name     string   `json:"name"`
		Label    string   `json:"label"`
		Type     string   `json:"type"`
		Required bool     `json:"required"`
		Options  []string `json:"options,omitempty"`
	}
	cfg := map[string]any{
		"action": s.absoluteBase(r) + formPath(tenant, form), "token": p.Token, "tenant": p.TenantName, "name": f.Name,
		"success": f.SuccessMessage(), "redirect": f.Success.RedirectURL, "touchParams": forms.TouchParams,
		"cookie": "lp_ft_" + strings.ReplaceAll(tenant+"_"+form, "-", "_"), "cookieDays": int(forms.FirstTouchCookieAge.Hours() / 24),
	}
	fields := make([]field, 0, len(f.Fields))
	for _, fd := range f.Fields {
		fields = append(fields, field{Name: fd.Name, Label: fd.Label, Type: fd.Type, Required: fd.Required, Options: fd.Options})
	}
	cfg["fields"] = fields
	if f.Consent != nil {
		cfg["consent"] = map[string]any{"text": f.Consent.Text, "required": f.Consent.Required}
	}
	if f.Captcha != nil {
		cfg["captcha"] = map[string]string{"provider": f.Captcha.Provider, "siteKey": f.Captcha.SiteKey,
			"param": forms.ResponseParam[f.Captcha.Provider]}
	}
	b, err := json.Marshal(cfg) // escapes <, > and &: safe inside a script
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte("(function(cfg){" + embedJS + "})(" + string(b) + ");\n"))
}

func (s *Server) absoluteBase(r *http.Request) string {
	if s.Cfg != nil && s.Cfg.BaseURL != "" {
		return strings.TrimRight(s.Cfg.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// embedJS is the body of embed.js (cfg is the form). Plain ES2017, no
// dependencies; every text goes in through textContent.
const embedJS = `
var me = document.currentScript;
var host = (me && me.dataset.target && document.querySelector(me.dataset.target)) || null;
if (!host) { host = document.createElement("div"); me.parentNode.insertBefore(host, me.nextSibling); }
function el(tag, attrs, text) { var e = document.createElement(tag); for (var k in attrs || {}) { e.setAttribute(k, attrs[k]); } if (text) { e.textContent = text; } return e; }
function readCookie(name) { var m = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)")); return m ? decodeURIComponent(m[1]) : ""; }
var q = new URLSearchParams(location.search);
var last = {};
cfg.touchParams.forEach(function (k) { var v = q.get(k); if (v && k !== "referrer" && k !== "landing_page") { last[k] = v; } });
if (document.referrer) { last.referrer = document.referrer; }
last.landing_page = location.href;
var first = readCookie(cfg.cookie);
if (!first) {
  var t = Object.assign({}, last, { at: new Date().toISOString() });
  first = JSON.stringify(t);
  document.cookie = cfg.cookie + "=" + encodeURIComponent(first) + "; path=/; max-age=" + (cfg.cookieDays * 86400) + "; samesite=lax";
}
var form = el("form", { "class": "lp-form", novalidate: "", "data-testid": "lp-embed-form" });
var title = el("h2", { "class": "lp-title" }, cfg.name); form.appendChild(title);
var status = el("div", { "class": "lp-status", role: "alert", "data-testid": "lp-embed-status" }); form.appendChild(status);
var hp = el("div", { "aria-hidden": "true", style: "position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden" });
hp.appendChild(el("input", { type: "text", name: "website", tabindex: "-1", autocomplete: "off" })); form.appendChild(hp);
var uid = "lp" + Math.random().toString(36).slice(2, 8);
function fieldBox(f) {
  var box = el("div", { "class": "lp-field", "data-name": f.name });
  var id = uid + "-" + f.name, input;
  if (f.type === "hidden") { return el("input", { type: "hidden", name: f.name }); }
  if (f.type === "textarea") { input = el("textarea", { id: id, name: f.name, maxlength: "10000" }); }
  else if (f.type === "select") {
    input = el("select", { id: id, name: f.name }); input.appendChild(el("option", { value: "" }, "Choose…"));
    (f.options || []).forEach(function (o) { input.appendChild(el("option", { value: o }, o)); });
  } else if (f.type === "checkbox") { input = el("input", { id: id, name: f.name, type: "checkbox", value: "yes" }); }
  else { input = el("input", { id: id, name: f.name, type: f.type, maxlength: "500" }); }
  if (f.required) { input.setAttribute("required", ""); input.setAttribute("aria-required", "true"); }
  var label = el("label", { "for": id }, f.label + (f.required ? " (required)" : ""));
  if (f.type === "checkbox") { box.appendChild(input); box.appendChild(label); } else { box.appendChild(label); box.appendChild(input); }
  var err = el("p", { "class": "lp-error", id: id + "-error", "data-testid": "lp-field-error" }); err.hidden = true; box.appendChild(err);
  return box;
}
cfg.fields.forEach(function (f) { form.appendChild(fieldBox(f)); });
if (cfg.consent) { form.appendChild(fieldBox({ name: "consent", label: cfg.consent.text, type: "checkbox", required: cfg.consent.required })); }
if (cfg.captcha) {
  var cap = el("div", { "class": cfg.captcha.provider === "hcaptcha" ? "h-captcha" : "cf-turnstile", "data-sitekey": cfg.captcha.siteKey });
  form.appendChild(cap);
  var s = el("script", { src: cfg.captcha.provider === "hcaptcha" ? "https://js.hcaptcha.com/1/api.js" : "https://challenges.cloudflare.com/turnstile/v0/api.js", async: "" });
  document.head.appendChild(s);
}
var button = el("button", { type: "submit", "data-testid": "lp-embed-submit" }, "Send"); form.appendChild(button);
host.appendChild(form);
var busy = false;
function showErrors(errs) {
  var firstBad = null;
  form.querySelectorAll(".lp-field").forEach(function (box) {
    var name = box.getAttribute("data-name"), p = box.querySelector(".lp-error"), input = box.querySelector("input,select,textarea");
    var msg = errs && errs[name];
    p.hidden = !msg; p.textContent = msg || "";
    if (msg) { input.setAttribute("aria-invalid", "true"); input.setAttribute("aria-describedby", p.id); if (!firstBad) { firstBad = input; } }
    else { input.removeAttribute("aria-invalid"); input.removeAttribute("aria-describedby"); }
  });
  if (firstBad) { firstBad.focus(); }
}
form.addEventListener("submit", function (ev) {
  ev.preventDefault();
  if (busy) { return; }
  busy = true; button.disabled = true; status.textContent = "";
  var body = { _token: cfg.token, _ft: first };
  Object.keys(last).forEach(function (k) { body[k] = last[k]; });
  new FormData(form).forEach(function (v, k) { body[k] = v; });
  fetch(cfg.action, { method: "POST", mode: "cors", credentials: "omit", headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: JSON.stringify(body) })
    .then(function (res) { return res.json().catch(function () { return {}; }).then(function (j) { return { res: res, j: j }; }); })
    .then(function (x) {
      if (x.res.status === 201) {
        if (cfg.redirect) { location.href = cfg.redirect; return; }
        form.replaceChildren(el("p", { "class": "lp-success", role: "status", "data-testid": "lp-embed-success" }, cfg.success));
        return;
      }
      busy = false; button.disabled = false;
      showErrors(x.j.errors || {});
      status.textContent = x.j.detail || "Something went wrong. Please try again.";
    })
    .catch(function () { busy = false; button.disabled = false; status.textContent = "We could not reach the server. Please try again."; });
});
`
