package web

import (
	_ "embed"
	"net/http"
	"strconv"
)

// OpenAPISpec is the API's OpenAPI 3.1 document.
//
//go:embed openapi.yaml
var OpenAPISpec []byte

// openAPISpec serves GET /api/openapi.yaml (no authentication: it is
// documentation).
func (s *Server) openAPISpec(w http.ResponseWriter, r *http.Request) {
	writeSpec(w, OpenAPISpec)
}

// AsyncAPISpec is the AsyncAPI 3.0 document of the outbound events; its
// lead and alert schemas are references into openapi.yaml.
//
//go:embed asyncapi.yaml
var AsyncAPISpec []byte

// asyncAPISpec serves GET /api/asyncapi.yaml (no authentication).
func (s *Server) asyncAPISpec(w http.ResponseWriter, r *http.Request) {
	writeSpec(w, AsyncAPISpec)
}

// writeSpec writes an embedded YAML document; caches may keep it a while.
func writeSpec(w http.ResponseWriter, doc []byte) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(doc)
}
