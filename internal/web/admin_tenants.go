package web

import (
	"net/http"

	"leadpipe/internal/tenants"
)

type provisionResponse struct {
	ID         string `json:"id"`
	Slug       string `json:"slug"`
	Name       string `json:"name"`
	AdminEmail string `json:"admin_email"`
	APIToken   string `json:"api_token"`
}

func (s *Server) adminCreateTenant(w http.ResponseWriter, r *http.Request) {
	var in tenants.ProvisionInput
	if err := DecodeJSON(w, r, &in); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	p, err := s.Tenants.Provision(r.Context(), in)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	s.Log.InfoContext(r.Context(), "tenant provisioned", "tenant_id", p.Tenant.ID, "slug", p.Tenant.Slug)
	w.Header().Set("Location", "/api/admin/v1/tenants/"+p.Tenant.ID)
	WriteJSON(w, http.StatusCreated, provisionResponse{ID: p.Tenant.ID, Slug: p.Tenant.Slug, Name: p.Tenant.Name,
		AdminEmail: p.Admin.Email, APIToken: p.APIToken})
}

func (s *Server) adminListTenants(w http.ResponseWriter, r *http.Request) {
	ts, err := s.Tenants.Tenants(r.Context())
	s.writeResult(w, r, http.StatusOK, listBody(ts), err)
}
