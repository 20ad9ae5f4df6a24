package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/views/components"
	leadviews "leadpipe/views/leads"
)

// The lead page's possible duplicates, the merge picker and unmerge
// (docs/ARCHITECTURE.md, "Merged leads" and "Staff pages": an admin merges
// any leads, staff the leads they own). The rules are in
// internal/leads/merge.go; these handlers parse, call and render.

// mergeUIRoutes are mounted for every signed-in user: an admin merges any
// leads, staff the leads they own (leads.MayMerge, checked again by Merge).
func (s *Server) mergeUIRoutes(r chi.Router) {
	r.Get("/leads/{id}/merge", s.uiMergePage)
	r.Post("/leads/{id}/merge", s.withForm(s.uiMerge))
	r.Post("/leads/{id}/unmerge", s.withForm(s.uiUnmerge))
}

// mergePanels reads what the lead page shows about merges and duplicates.
func (s *Server) mergePanels(ctx context.Context, tenantID string, l leads.Lead, dir directory) (leadviews.MergePanels, error) {
	who, _ := PrincipalFrom(ctx)
	p := leadviews.MergePanels{CanMerge: leads.MayMerge(who, l)}
	if l.MergedInto != nil {
		p.MergedInto = *l.MergedInto
		sv, err := s.Leads.Get(ctx, tenantID, *l.MergedInto)
		if err != nil {
			return p, err
		}
		p.MergedIntoTitle = dir.leadView(sv).Title()
		return p, nil
	}
	merged, err := s.Leads.Merged(ctx, tenantID, l.ID)
	if err != nil {
		return p, err
	}
	for _, m := range merged {
		p.Merged = append(p.Merged, dir.leadView(m))
	}
	dups, err := s.Leads.Duplicates(ctx, tenantID, l.ID)
	if err != nil {
		return p, err
	}
	for _, d := range dups {
		p.Duplicates = append(p.Duplicates, leadviews.DuplicateLead{Lead: dir.leadView(d.Lead), Reasons: d.Reasons,
			CanMerge: leads.MayMerge(who, l, d.Lead)})
	}
	return p, nil
}

// mergeFieldLabels are the picker's rows, in leads.MergeFields order.
var mergeFieldLabels = map[string]string{"email": "Email", "name": "Name", "phone": "Phone", "company": "Company",
	"status": "Status", "owner_id": "Owner", "next_step": "Next step", "due_at": "Follow-up due"}

// mergeValue is how the picker shows one lead's value of a field.
func mergeValue(ctx context.Context, l leadviews.Lead, field string) string {
	switch field {
	case "email":
		return l.Email
	case "name":
		return l.Name
	case "phone":
		return l.Phone
	case "company":
		return l.Company
	case "status":
		return components.StatusLabel(l.Status)
	case "owner_id":
		return l.OwnerName
	case "next_step":
		return l.NextStep
	case "due_at":
		if l.DueAt.IsZero() {
			return ""
		}
		return l.DueAt.In(components.Zone(ctx)).Format("2 Jan 2006 15:04")
	}
	return ""
}

// sameMergeValue reports whether two leads' values of a field are the same
// to a person: an email in another case, a phone written another way.
func sameMergeValue(field, a, b string) bool {
	switch field {
	case "email":
		return leads.NormalizeEmail(a) == leads.NormalizeEmail(b)
	case "phone":
		return leads.NormalizePhone(a) == leads.NormalizePhone(b)
	}
	return a == b
}

func (s *Server) uiMergePage(w http.ResponseWriter, r *http.Request) {
	s.renderMerge(w, r, http.StatusOK, chi.URLParam(r, "id"), r.URL.Query()["with"], nil, "")
}

// renderMerge renders the picker for survivor id and the others; picks
// (field → lead id) are a failed submit's choices.
func (s *Server) renderMerge(w http.ResponseWriter, r *http.Request, status int, id string, others []string, picks map[string]string, problem string) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	sv, err := s.Leads.Get(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	if len(others) == 0 || len(others) > leads.MaxMergeOthers {
		s.uiError(w, r, apperr.New(apperr.NotFound, "pick the lead to merge from the lead page"))
		return
	}
	dir, ok := s.sessionDirectory(w, r)
	if !ok {
		return
	}
	v := leadviews.MergeView{Survivor: dir.leadView(sv), Version: sv.Version, Key: newFormKey(), Error: problem}
	all := []leads.Lead{sv}
	for _, o := range others {
		ol, err := s.Leads.Get(ctx, sess.Tenant.ID, o)
		if err != nil {
			s.uiError(w, r, err) // another tenant's (or no) lead: 404
			return
		}
		v.Others = append(v.Others, dir.leadView(ol))
		all = append(all, ol)
	}
	if who, _ := PrincipalFrom(ctx); !leads.MayMerge(who, all...) {
		s.uiError(w, r, apperr.New(apperr.Forbidden, "You can merge only leads you own. Ask an admin, or the owner of the other lead, to merge them."))
		return
	}
	zctx := readerZone(ctx) // a follow-up time in the reader's own zone
	loc := components.Zone(zctx)
	for _, l := range v.Leads() {
		v.Captions = append(v.Captions, leadviews.SourceLabel(l)+" · "+l.CreatedAt.In(loc).Format("2 Jan 2006, 15:04"))
	}
	for _, f := range leads.MergeFields {
		mf := leadviews.MergeField{Name: f, Label: mergeFieldLabels[f], Pick: sv.ID}
		if p := picks[f]; p != "" {
			mf.Pick = p
		}
		same := true
		for _, l := range v.Leads() {
			mf.Values = append(mf.Values, mergeValue(zctx, l, f))
			same = same && sameMergeValue(f, mf.Values[len(mf.Values)-1], mf.Values[0])
		}
		if same { // nothing to choose: the survivor keeps its value
			v.Same = append(v.Same, mf.Label)
			continue
		}
		// An empty survivor value with one to take: take it by default.
		if picks == nil && mf.Values[0] == "" {
			for i, val := range mf.Values[1:] {
				if val != "" {
					mf.Pick = v.Others[i].ID
					break
				}
			}
		}
		v.Fields = append(v.Fields, mf)
	}
	v.Page = s.page(w, r, "Merge leads", "leads")
	s.render(w, r, status, leadviews.MergePage(v))
}

func (s *Server) uiMerge(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		s.uiError(w, r, apperr.New(apperr.NotFound, "lead not found"))
		return
	}
	in := leads.MergeInput{Others: r.PostForm["others"], Fields: map[string]string{}}
	for _, f := range leads.MergeFields {
		if p := r.PostFormValue("pick_" + f); p != "" && p != id {
			in.Fields[f] = p
		}
	}
	version, ok := formVersion(r)
	if !ok {
		s.renderMerge(w, r, http.StatusUnprocessableEntity, id, in.Others, in.Fields, "The form is out of date: check the values and merge again.")
		return
	}
	p, _ := PrincipalFrom(ctx)
	loc, err := s.uiOnce(ctx, sess.Tenant.ID, r.PostFormValue("key"), "merge:"+id, func(k *idempotency.Key) (string, error) {
		loc := "/leads/" + id
		_, err := s.Leads.Merge(ctx, sess.Tenant.ID, id, p, version, in, idempotency.Once[leads.Lead]{Key: k,
			Respond: func(leads.Lead) (idempotency.Response, error) { return idempotency.SeeOther(loc), nil }})
		return loc, err
	})
	switch {
	case apperr.Is(err, apperr.PreconditionFailed):
		s.renderMerge(w, r, http.StatusConflict, id, in.Others, in.Fields,
			"Someone changed this lead while you were choosing. The values below are the current ones: check them and merge again.")
		return
	case apperr.Is(err, apperr.Conflict), apperr.Is(err, apperr.Invalid):
		s.renderMerge(w, r, http.StatusConflict, id, in.Others, in.Fields, problemText(err))
		return
	case err != nil:
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Merged "+plural(len(in.Others), "lead", "leads")+" into this one. Unmerge it from this page if that was a mistake.")
	seeOther(w, r, loc)
}

func (s *Server) uiUnmerge(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	id, other := chi.URLParam(r, "id"), strings.TrimSpace(r.PostFormValue("lead_id"))
	p, _ := PrincipalFrom(ctx)
	_, err := s.Leads.Unmerge(ctx, sess.Tenant.ID, id, p, other)
	switch {
	case apperr.Is(err, apperr.Conflict):
		// Already unmerged (a double click): the lead is back either way.
		s.setFlash(w, r, problemText(err))
		seeOther(w, r, "/leads/"+id)
		return
	case err != nil:
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Unmerged: the lead is back with its own fields, history and notes.")
	seeOther(w, r, "/leads/"+other)
}
