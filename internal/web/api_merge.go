package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
)

// Possible duplicates, merge and unmerge (docs/ARCHITECTURE.md, "Merged leads"); the rules live
// in internal/leads/merge.go.

func (s *Server) apiLeadDuplicates(w http.ResponseWriter, r *http.Request) {
	items, err := s.Leads.Duplicates(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	s.writeResult(w, r, http.StatusOK, listBody(items), err)
}

func leadMerged(l leads.Lead) (idempotency.Response, error) {
	h := http.Header{}
	h.Set("ETag", etag(l.Version))
	return jsonResponse(http.StatusOK, l, h)
}

// ifMatchVersion reads a write's If-Match for lead id: 428 without one, 400
// for garbage, AnyVersion for "*".
func (s *Server) ifMatchVersion(r *http.Request, id string) (int, error) {
	im := r.Header.Get("If-Match")
	if strings.TrimSpace(im) == "" {
		return 0, apperr.New(apperr.PreconditionNeeded,
			`this needs If-Match with the lead's ETag (e.g. If-Match: "3") so a concurrent edit cannot be overwritten`)
	}
	versions, wildcard, ok := parseETags(im)
	if !ok {
		return 0, apperr.New(apperr.BadRequest, `malformed If-Match: send the ETag you got, e.g. "3"`)
	}
	if wildcard {
		return leads.AnyVersion, nil
	}
	return s.pickVersion(r, id, versions)
}

// apiMergeLeads is POST /api/v1/leads/{id}/merge (Idempotency-Key and
// If-Match): the others fold into the lead {id}.
func (s *Server) apiMergeLeads(ctx context.Context, r *http.Request, body []byte, key *idempotency.Key) (idempotency.Response, error) {
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		return idempotency.Response{}, apperr.New(apperr.NotFound, "lead not found")
	}
	in, err := leads.ParseMerge(body)
	if err != nil {
		return idempotency.Response{}, err
	}
	ifMatch, err := s.ifMatchVersion(r, id)
	if err != nil {
		return idempotency.Response{}, err
	}
	p, _ := PrincipalFrom(ctx)
	l, err := s.Leads.Merge(ctx, p.TenantID, id, p, ifMatch, in, idempotency.Once[leads.Lead]{Key: key, Respond: leadMerged})
	return answerOnce(l, err, leadMerged)
}

// apiUnmergeLead is POST /api/v1/leads/{id}/unmerge {"lead_id"}: restores
// that lead. Running it twice restores once (the second answers 409: the
// lead is no longer merged).
func (s *Server) apiUnmergeLead(w http.ResponseWriter, r *http.Request) {
	var in struct {
		LeadID string `json:"lead_id"`
	}
	var raw json.RawMessage
	if err := DecodeJSON(w, r, &raw); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	if err := json.Unmarshal(raw, &in); err != nil || strings.TrimSpace(in.LeadID) == "" {
		WriteError(w, r, s.Log, apperr.InvalidFields(map[string]string{"lead_id": "is required: the id of a lead merged into this one"}))
		return
	}
	p, _ := PrincipalFrom(r.Context())
	l, err := s.Leads.Unmerge(r.Context(), p.TenantID, chi.URLParam(r, "id"), p, in.LeadID)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	w.Header().Set("ETag", etag(l.Version))
	WriteJSON(w, http.StatusOK, l)
}
