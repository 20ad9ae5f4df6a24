package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
)

// etag is a lead's entity tag: its version, which counts human edits only.
func etag(version int) string { return `"` + strconv.Itoa(version) + `"` }

// jsonResponse renders v the way WriteJSON does, for handlers whose
// response is stored (idempotency) before it is sent.
func jsonResponse(status int, v any, header http.Header) (idempotency.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return idempotency.Response{}, err
	}
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/json")
	return idempotency.Response{Status: status, Header: header, Body: append(b, '\n')}, nil
}

// answerOnce is an idempotent write's answer: its error, or respond's
// answer for v (the Respond a first attempt stored its answer with).
func answerOnce[T any](v T, err error, respond func(T) (idempotency.Response, error)) (idempotency.Response, error) {
	if err != nil {
		return idempotency.Response{}, err
	}
	return respond(v)
}

func leadCreated(l leads.Lead) (idempotency.Response, error) {
	h := http.Header{}
	h.Set("Location", "/api/v1/leads/"+l.ID)
	h.Set("ETag", etag(l.Version))
	return jsonResponse(http.StatusCreated, l, h)
}

func noteCreated(n leads.Note) (idempotency.Response, error) {
	return jsonResponse(http.StatusCreated, n, nil)
}

func (s *Server) apiCreateLead(ctx context.Context, r *http.Request, body []byte, key *idempotency.Key) (idempotency.Response, error) {
	in, err := leads.ParseCreate(body)
	if err != nil {
		return idempotency.Response{}, err
	}
	p, _ := PrincipalFrom(ctx)
	l, err := s.Leads.Create(ctx, p.TenantID, p, in, idempotency.Once[leads.Lead]{Key: key, Respond: leadCreated})
	return answerOnce(l, err, leadCreated)
}

func (s *Server) apiAddNote(ctx context.Context, r *http.Request, body []byte, key *idempotency.Key) (idempotency.Response, error) {
	leadID := chi.URLParam(r, "id")
	if !ids.Valid(leadID) {
		return idempotency.Response{}, apperr.New(apperr.NotFound, "lead not found")
	}
	text, err := leads.ParseNote(body)
	if err != nil {
		return idempotency.Response{}, err
	}
	p, _ := PrincipalFrom(ctx)
	n, err := s.Leads.AddNote(ctx, p.TenantID, leadID, p, text, idempotency.Once[leads.Note]{Key: key, Respond: noteCreated})
	return answerOnce(n, err, noteCreated)
}

func (s *Server) apiGetLead(w http.ResponseWriter, r *http.Request) {
	l, err := s.Leads.Get(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	tag := etag(l.Version)
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "private, no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagListHas(inm, l.Version) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	// Where the lead came from and its consents (docs/FORMS.md).
	ex, err := s.Leads.Extras(r.Context(), Tenant(r), l.ID)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	WriteJSON(w, http.StatusOK, struct {
		leads.Lead
		leads.Extras
	}{l, ex})
}

// parseETags reads an If-Match / If-None-Match list: "*" (wildcard) or
// strong entity tags whose value is a version. Weak tags never match a
// strong comparison and are skipped; a bare number is accepted from
// sloppy clients. ok is false for a malformed header.
func parseETags(h string) (versions []int, wildcard bool, ok bool) {
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
			continue
		case part == "*":
			wildcard = true
			continue
		case strings.HasPrefix(part, "W/"):
			continue
		}
		part = strings.TrimSuffix(strings.TrimPrefix(part, `"`), `"`)
		v, err := strconv.Atoi(part)
		if err != nil || v < 1 {
			// Not one of our tags: it can never match, but it is well formed
			// if it was quoted; only garbage is rejected.
			if strings.ContainsAny(part, "\" \t") {
				return nil, false, false
			}
			continue
		}
		versions = append(versions, v)
	}
	return versions, wildcard, true
}

func etagListHas(h string, version int) bool {
	vs, wildcard, ok := parseETags(h)
	if !ok {
		return false
	}
	if wildcard {
		return true
	}
	for _, v := range vs {
		if v == version {
			return true
		}
	}
	return false
}

func (s *Server) apiPatchLead(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		WriteError(w, r, s.Log, apperr.New(apperr.NotFound, "lead not found"))
		return
	}
	im := r.Header.Get("If-Match")
	if strings.TrimSpace(im) == "" {
		WriteError(w, r, s.Log, apperr.New(apperr.PreconditionNeeded,
			`PATCH needs If-Match with the lead's ETag (e.g. If-Match: "3") so concurrent edits cannot overwrite each other`))
		return
	}
	versions, wildcard, ok := parseETags(im)
	if !ok {
		WriteError(w, r, s.Log, apperr.New(apperr.BadRequest, `malformed If-Match: send the ETag you got, e.g. "3"`))
		return
	}
	var body json.RawMessage
	if err := DecodeJSON(w, r, &body); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	in, err := leads.ParsePatch(body)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	ifMatch := leads.AnyVersion
	if !wildcard {
		ifMatch, err = s.pickVersion(r, id, versions)
		if err != nil {
			WriteError(w, r, s.Log, err)
			return
		}
	}
	p, _ := PrincipalFrom(r.Context())
	l, err := s.Leads.Patch(r.Context(), p.TenantID, id, p, ifMatch, in)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	w.Header().Set("ETag", etag(l.Version))
	WriteJSON(w, http.StatusOK, l)
}

// pickVersion turns an If-Match list into the one version the conditional
// update checks. A list of several tags is rare; the current version is
// read to pick the one that matches (the update still re-checks it).
func (s *Server) pickVersion(r *http.Request, id string, versions []int) (int, error) {
	stale := apperr.New(apperr.PreconditionFailed, "the lead was changed by someone else: GET it again and reapply your change")
	switch len(versions) {
	case 0:
		return 0, stale
	case 1:
		return versions[0], nil
	}
	cur, err := s.Leads.Get(r.Context(), Tenant(r), id)
	if err != nil {
		return 0, err
	}
	for _, v := range versions {
		if v == cur.Version {
			return v, nil
		}
	}
	return 0, stale
}

func (s *Server) apiListLeads(w http.ResponseWriter, r *http.Request) {
	f, err := leadFilter(r.URL.Query())
	serveList(s, w, r, err, func() ([]leads.Lead, string, error) {
		page, err := s.Leads.List(r.Context(), Tenant(r), f)
		return page.Items, page.NextCursor, err
	})
}

// leadFilter reads the filters of GET /api/v1/leads (and of its CSV
// export) from the query string.
func leadFilter(q url.Values) (leads.Filter, error) {
	f := leads.Filter{Status: q.Get("status"), SourceID: q.Get("source"), OwnerID: q.Get("owner"), Q: q.Get("q"), Cursor: q.Get("cursor"),
		SLA: q.Get("sla"), Duplicates: q.Get("duplicates") == "true" || q.Get("duplicates") == "1"}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return f, apperr.InvalidFields(map[string]string{"limit": "must be between 1 and 200"})
		}
		f.Limit = n
	}
	if v := q.Get("due_before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, apperr.InvalidFields(map[string]string{"due_before": "must be an RFC 3339 time"})
		}
		t = t.UTC()
		f.DueBefore = &t
	}
	return f, nil
}

func bulkDone(res leads.BulkResult) (idempotency.Response, error) {
	return jsonResponse(http.StatusOK, res, nil)
}

// apiBulkLeads is POST /api/v1/leads/bulk: one change to up to 500 leads
// in one transaction, the result per id (another tenant's id: not_found).
func (s *Server) apiBulkLeads(ctx context.Context, r *http.Request, body []byte, key *idempotency.Key) (idempotency.Response, error) {
	in, err := leads.ParseBulk(body)
	if err != nil {
		return idempotency.Response{}, err
	}
	p, _ := PrincipalFrom(ctx)
	res, err := s.Leads.Bulk(ctx, p.TenantID, p, in, idempotency.Once[leads.BulkResult]{Key: key, Respond: bulkDone})
	return answerOnce(res, err, bulkDone)
}

func (s *Server) apiListNotes(w http.ResponseWriter, r *http.Request) {
	notes, err := s.Leads.Notes(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	s.writeResult(w, r, http.StatusOK, listBody(notes), err)
}

func (s *Server) apiLeadTimeline(w http.ResponseWriter, r *http.Request) {
	items, err := s.Leads.Timeline(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	s.writeResult(w, r, http.StatusOK, listBody(items), err)
}
