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
	in, ok := decodeBody[tenants.ProvisionInput](s, w, r)
	if !ok {
		return
	}
	p, err := s.Tenants.Provision(r.Context(), in)
	if err == nil {
		s.Log.InfoContext(r.Context(), "tenant provisioned", "tenant_id", p.Tenant.ID, "slug", p.Tenant.Slug)
	}
	s.writeCreated(w, r, "/api/admin/v1/tenants/"+p.Tenant.ID, false, provisionResponse{ID: p.Tenant.ID, Slug: p.Tenant.Slug,
		Name: p.Tenant.Name, AdminEmail: p.Admin.Email, APIToken: p.APIToken}, err)
}

func (s *Server) adminListTenants(w http.ResponseWriter, r *http.Request) {
	ts, err := s.Tenants.Tenants(r.Context())
	s.writeResult(w, r, http.StatusOK, listBody(ts), err)
}
