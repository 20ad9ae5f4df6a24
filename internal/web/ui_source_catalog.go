package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"leadpipe/internal/webhooks/kinds"
	srcviews "leadpipe/views/sources"
)

// uiSourceCatalog is the "Add a source" page (GET /sources/add): the
// catalog of GET /api/v1/source-kinds; ?entry=kind[:preset] picks one and
// shows its webhook URL, its vendor's steps and the form that creates it.
func (s *Server) uiSourceCatalog(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	v := srcviews.CatalogView{Page: s.page(w, r, "Add a source", "sources")}
	pick := r.URL.Query().Get("entry")
	for _, e := range kinds.Catalog() {
		entry := catalogKey(e)
		v.Items = append(v.Items, srcviews.CatalogItem{Entry: entry, Name: e.Name, Vendor: e.Vendor, Signs: e.Signs, SecretURL: e.SecretURL})
		if entry != pick {
			continue
		}
		var sample strings.Builder
		enc := json.NewEncoder(&sample)
		enc.SetIndent("", "  ")
		_ = enc.Encode(json.RawMessage(e.Sample))
		v.Choice = &srcviews.CatalogChoice{Entry: entry, Kind: e.Kind, Name: e.Name, Vendor: e.Vendor, Docs: e.Docs,
			Config: string(e.Config), Signs: e.Signs, SecretURL: e.SecretURL, SecretFromVendor: e.SecretFrom == "vendor",
			Setup: e.Setup, Sample: sample.String(), ContentType: e.ContentType,
			URLPrefix: s.Sources.WebhookURL(sess.Tenant.Slug, ""),
			Form:      srcviews.Form{Name: e.Name, Key: newFormKey()}}
	}
	s.render(w, r, http.StatusOK, srcviews.Catalog(v))
}

// catalogKey names a catalog entry in a URL: kind, or kind:preset.
func catalogKey(e kinds.CatalogEntry) string {
	if e.Preset != "" {
		return e.Kind + ":" + e.Preset
	}
	return e.Kind
}
