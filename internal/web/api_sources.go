package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

func (s *Server) tenantSlug(r *http.Request) (string, error) {
	t, err := s.Tenants.Tenant(r.Context(), Tenant(r))
	return t.Slug, err
}

// decodeWithSlug decodes the body into in and reads the tenant's slug (a
// form's and a source's public URLs carry it); false when it has answered
// with the problem.
func (s *Server) decodeWithSlug(w http.ResponseWriter, r *http.Request, in any) (string, bool) {
	err := DecodeJSON(w, r, in)
	slug := ""
	if err == nil {
		slug, err = s.tenantSlug(r)
	}
	if err != nil {
		WriteError(w, r, s.Log, err)
		return "", false
	}
	return slug, true
}

func (s *Server) listSources(w http.ResponseWriter, r *http.Request) {
	slug, err := s.tenantSlug(r)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	list, err := s.Sources.List(r.Context(), Tenant(r))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	items := make([]sources.View, 0, len(list))
	for _, src := range list {
		items = append(items, s.Sources.View(slug, src))
	}
	WriteJSON(w, http.StatusOK, listBody(items))
}

// listSourceKinds is the source catalog (GET /api/v1/source-kinds).
func (s *Server) listSourceKinds(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, listBody(kinds.Catalog()))
}

func (s *Server) createSource(w http.ResponseWriter, r *http.Request) {
	var in sources.CreateInput
	slug, ok := s.decodeWithSlug(w, r, &in)
	if !ok {
		return
	}
	src, secret, err := s.Sources.Create(r.Context(), Tenant(r), in)
	var v sources.View
	if err == nil {
		v = s.Sources.View(slug, src)
		v.Secret = secret
		v.SecretWebhookURL = secretWebhookURL(v, secret)
	}
	s.writeCreated(w, r, "/api/v1/sources/"+src.ID, true, v, err)
}

func (s *Server) getSource(w http.ResponseWriter, r *http.Request) {
	src, ok := s.routeSource(w, r)
	if !ok {
		return
	}
	s.answerSource(w, r, src, "")
}

// secretWebhookURL is a token source's secret webhook URL for its current
// secret (docs/SENDERS.md, "Senders that can neither sign nor set a
// header"); "" for other kinds.
func secretWebhookURL(v sources.View, secret string) string {
	if v.Kind != kinds.Token || secret == "" {
		return ""
	}
	return v.WebhookURL + "/" + kinds.SecretURLToken(secret)
}

func (s *Server) patchSource(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeBody[sources.PatchInput](s, w, r)
	if !ok {
		return
	}
	if _, ok := s.routeSource(w, r); !ok {
		return
	}
	src, err := s.Sources.Patch(r.Context(), Tenant(r), chi.URLParam(r, "id"), in)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	s.answerSource(w, r, src, "")
}

func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) {
	var in sources.RotateInput
	if err := DecodeOptionalJSON(w, r, &in); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	if _, ok := s.routeSource(w, r); !ok {
		return
	}
	src, secret, err := s.Sources.Rotate(r.Context(), Tenant(r), chi.URLParam(r, "id"), in)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	s.answerSource(w, r, src, secret)
}

// routeSource is the tenant's source named by the route's {id}; on an
// error it answers it and reports false.
func (s *Server) routeSource(w http.ResponseWriter, r *http.Request) (sources.Source, bool) {
	src, err := s.Sources.Get(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return sources.Source{}, false
	}
	return src, true
}

// answerSource answers a source as the API shows it (200), with its
// secret when one was just made (then never cached).
func (s *Server) answerSource(w http.ResponseWriter, r *http.Request, src sources.Source, secret string) {
	slug, err := s.tenantSlug(r)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	v := s.Sources.View(slug, src)
	if secret == "" && src.Kind == kinds.Token { // the secret URL is how Unbounce or Jotform is set up later
		secrets, err := s.Sources.Secrets(r.Context(), Tenant(r), src.ID)
		if err != nil {
			WriteError(w, r, s.Log, err)
			return
		}
		if len(secrets) > 0 {
			v.SecretWebhookURL = secretWebhookURL(v, secrets[0])
			w.Header().Set("Cache-Control", "no-store")
		}
	}
	if secret != "" {
		v.Secret = secret
		v.SecretWebhookURL = secretWebhookURL(v, secret)
		w.Header().Set("Cache-Control", "no-store")
	}
	WriteJSON(w, http.StatusOK, v)
}
