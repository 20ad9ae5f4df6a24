package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/forms"
)

// The forms admin API (docs/FORMS.md): POST|GET /api/v1/forms,
// GET|PATCH|DELETE /api/v1/forms/{id}.

func (s *Server) apiCreateForm(w http.ResponseWriter, r *http.Request) {
	var in forms.Input
	slug, ok := s.decodeWithSlug(w, r, &in)
	if !ok {
		return
	}
	f, err := s.Forms.Create(r.Context(), Tenant(r), slug, in)
	s.writeCreated(w, r, "/api/v1/forms/"+f.ID, false, f, err)
}

func (s *Server) apiListForms(w http.ResponseWriter, r *http.Request) {
	slug, err := s.tenantSlug(r)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	list, err := s.Forms.List(r.Context(), Tenant(r), slug)
	s.writeResult(w, r, http.StatusOK, listBody(list), err)
}

func (s *Server) apiGetForm(w http.ResponseWriter, r *http.Request) {
	slug, err := s.tenantSlug(r)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	f, err := s.Forms.Get(r.Context(), Tenant(r), slug, chi.URLParam(r, "id"))
	s.writeResult(w, r, http.StatusOK, f, err)
}

func (s *Server) apiPatchForm(w http.ResponseWriter, r *http.Request) {
	var in forms.Input
	slug, ok := s.decodeWithSlug(w, r, &in)
	if !ok {
		return
	}
	f, err := s.Forms.Patch(r.Context(), Tenant(r), slug, chi.URLParam(r, "id"), in)
	s.writeResult(w, r, http.StatusOK, f, err)
}

func (s *Server) apiDeleteForm(w http.ResponseWriter, r *http.Request) {
	s.writeNoContent(w, r, s.Forms.Delete(r.Context(), Tenant(r), chi.URLParam(r, "id")))
}
