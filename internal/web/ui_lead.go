package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/views/components"
	"leadpipe/views/layouts"
	leadviews "leadpipe/views/leads"
)

// The lead page and its forms (status, owner, next step, note) and the
// form that creates a lead by hand.

// leadPageOpts are what a POST that failed brings to the re-rendered page.
type leadPageOpts struct {
	conflict *leadviews.Conflict // attempted change; By/At are filled in
	note     leadviews.NoteForm
	problem  string
}

func (s *Server) uiLead(w http.ResponseWriter, r *http.Request) {
	s.renderLead(w, r, http.StatusOK, chi.URLParam(r, "id"), leadPageOpts{})
}

func (s *Server) renderLead(w http.ResponseWriter, r *http.Request, status int, id string, o leadPageOpts) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	l, err := s.Leads.Get(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	tl, err := s.Leads.Timeline(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	dir, ok := s.sessionDirectory(w, r)
	if !ok {
		return
	}
	v := leadviews.LeadView{Lead: dir.leadView(l), Note: o.note, Error: o.problem, IsAdmin: sess.User.IsAdmin(),
		MeID: sess.User.ID, Now: time.Now()}
	one := []leadviews.Lead{v.Lead}
	if err := s.addRepeats(ctx, sess.Tenant.ID, one); err != nil {
		s.uiError(w, r, err)
		return
	}
	v.Lead = one[0]
	v.Lead.AssignedByRule, _ = assignedBy(tl, v.Lead.OwnerID)
	v.Payload, v.PayloadCut = leadviews.PayloadTokens(l.Payload)
	v.Note.Key = keepFormKey(v.Note.Key)
	v.Owners = []components.Option{{Value: "", Label: "Unassigned"}}
	for _, u := range dir.users {
		if u.DisabledAt != nil && u.ID != v.Lead.OwnerID {
			continue
		}
		label := u.Name
		if u.ID == sess.User.ID {
			label += " (me)"
		}
		v.Owners = append(v.Owners, components.Option{Value: u.ID, Label: label})
	}
	evs := make([]leadviews.Event, len(tl))
	for i, e := range tl {
		evs[i] = timelineEvent(e, dir)
	}
	evs = leadviews.MarkFirstDelivery(leadviews.CollapseDuplicates(withArrival(evs, v.Lead)))
	if len(evs) > timelineShown {
		v.MoreEvents = len(evs) - timelineShown
		evs = evs[:timelineShown]
	}
	v.Timeline = evs
	if v.Origin, err = s.leadOrigin(ctx, sess.Tenant.ID, l.ID); err != nil {
		s.uiError(w, r, err)
		return
	}
	if v.Merge, err = s.mergePanels(ctx, sess.Tenant.ID, l, dir); err != nil {
		s.uiError(w, r, err)
		return
	}
	if o.conflict != nil {
		c := *o.conflict
		c.By, c.At = lastEditor(l, tl)
		v.Conflict = &c
	}
	v.Page = s.page(w, r, v.Lead.Title(), "leads")
	s.render(w, r, status, leadviews.Page(v))
}

// withArrival ends the timeline (oldest last) with how the lead arrived
// when no entry says so, e.g. a Meta lead stored by its webhook before the
// deliveries were linked: a timeline never claims nothing happened.
func withArrival(evs []leadviews.Event, l leadviews.Lead) []leadviews.Event {
	for _, e := range evs {
		switch e.Kind {
		case leads.EventCreated, leads.EventDelivery, leads.EventReconcile, leads.EventStale:
			return evs
		}
	}
	if l.SourceID == "" {
		return append(evs, leadviews.Event{Kind: leads.EventCreated, At: l.CreatedAt})
	}
	return append(evs, leadviews.Event{Kind: leadviews.EventArrived, Actor: l.SourceName, At: l.CreatedAt})
}

// lastEditor is who made the lead's current version and when: the newest
// change that made a new version ("someone" when none is on record).
func lastEditor(l leads.Lead, tl []leads.TimelineEntry) (string, time.Time) {
	for _, e := range tl {
		switch e.Kind {
		case leads.EventStatusChanged, leads.EventOwnerChanged, leads.EventTagsChanged, leads.EventNextStepChanged:
			return e.ActorName, e.At
		}
	}
	return "someone", l.UpdatedAt
}

func timelineEvent(e leads.TimelineEntry, dir directory) leadviews.Event {
	ev := leadviews.Event{Kind: e.Kind, Actor: e.ActorName, At: e.At}
	var d map[string]any
	_ = json.Unmarshal(e.Detail, &d)
	str := func(k string) string { s, _ := d[k].(string); return s }
	switch e.Kind {
	case leads.EventStatusChanged:
		ev.From, ev.To = str("from"), str("to")
	case leads.EventOwnerChanged:
		if to := str("to"); to != "" {
			ev.To = str("to_name")
			if ev.To == "" {
				ev.To = dir.userName(to)
			}
			if ev.To == "" {
				ev.To = "a former user"
			}
		}
	case leads.EventAssigned:
		ev.To, ev.Detail = str("owner_name"), str("rule_name")
	case leads.EventTagsChanged:
		ev.Detail = tagsText(d["added"], d["removed"])
	case leads.EventNoteAdded:
		ev.Body = str("body")
	case leads.EventNextStepChanged:
		ev.Detail = str("next_step")
		if t, err := time.Parse(time.RFC3339, str("due_at")); err == nil {
			ev.Due = t
		}
	case leads.EventDuplicate:
		ev.Detail = e.SenderDeliveryID
		ev.Count = e.Count
		if e.FirstAt != nil && e.LastAt != nil {
			ev.FirstAt, ev.LastAt = *e.FirstAt, *e.LastAt
		}
	case leads.EventReconcile:
		// "Found by reconcile" for a new lead; the changed fields otherwise.
		if isNew, _ := d["new"].(bool); !isNew {
			if ch, ok := d["changed"].([]any); ok {
				for _, f := range ch {
					if s, ok := f.(string); ok {
						ev.Changed = append(ev.Changed, s)
					}
				}
			}
		}
		ev.Detail = e.SenderDeliveryID
	case leads.EventDelivery, leads.EventStale:
		ev.Detail = e.SenderDeliveryID
	case leads.EventMerged:
		others, _ := d["others"].([]any)
		ev.Count = len(others)
	}
	return ev
}

func tagsText(added, removed any) string {
	list := func(v any) string {
		xs, _ := v.([]any)
		var out []string
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	}
	var parts []string
	if a := list(added); a != "" {
		parts = append(parts, "added "+a)
	}
	if r := list(removed); r != "" {
		parts = append(parts, "removed "+r)
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// formVersion reads the hidden version field; an edit without one must not
// become an unconditional overwrite (leads.AnyVersion).
func formVersion(r *http.Request) (int, bool) {
	v, err := strconv.Atoi(r.PostFormValue("version"))
	return v, err == nil && v > 0
}

// backTo is where a lead form returns after saving: the board or the lead.
func backTo(r *http.Request, id string) string {
	if r.PostFormValue("back") == "/leads/board" {
		return "/leads/board"
	}
	return "/leads/" + id
}

func (s *Server) uiLeadStatus(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	status := r.PostFormValue("status")
	if !leads.ValidStatus(status) {
		s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "Pick one of the statuses in the list."})
		return
	}
	label := components.StatusLabel(status)
	if backTo(r, id) == "/leads/board" {
		if ok := s.boardConflict(w, r, id, status); ok {
			return
		}
	}
	in := leads.PatchInput{Status: &status}
	if r.PostFormValue("assign_me") == "1" {
		// "and assign to me": offered on an unassigned lead; the version
		// check refuses it if someone took the lead meanwhile.
		me := sessionFrom(r.Context()).User.ID
		in.OwnerSet, in.OwnerID = true, &me
	}
	l, ok := s.patchLead(w, r, id, "status", status, label, in)
	if !ok {
		return
	}
	if backTo(r, id) != "/leads/board" {
		if in.OwnerSet {
			s.setFlash(w, r, "Status set to "+label+", and the lead is yours.")
		} else {
			s.setFlash(w, r, "Status set to "+label+".")
		}
		seeOther(w, r, backTo(r, id))
		return
	}
	// A board move names the lead and offers to move it back.
	name := leadviews.Lead{Name: l.Name, Email: l.Email, Phone: l.Phone}.Title()
	from := r.PostFormValue("from")
	if r.PostFormValue("undo") != "" || !leads.ValidStatus(from) || from == status {
		s.setFlash(w, r, "Moved "+name+" back to "+label+".")
	} else {
		s.setFlashUndo(w, r, "Moved "+name+" to "+label+".", &layouts.Undo{
			Action: "/leads/" + l.ID + "/status", Label: "Undo",
			Fields: []layouts.Field{{Name: "status", Value: from}, {Name: "from", Value: status},
				{Name: "version", Value: strconv.Itoa(l.Version)}, {Name: "back", Value: "/leads/board"}, {Name: "undo", Value: "1"}},
		})
	}
	seeOther(w, r, "/leads/board")
}

func (s *Server) uiLeadOwner(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	id := chi.URLParam(r, "id")
	owner := strings.TrimSpace(r.PostFormValue("owner"))
	in := leads.PatchInput{OwnerSet: true}
	label, flash := "unassigned", "Owner removed."
	if owner != "" {
		in.OwnerID = &owner
		u, err := s.Tenants.User(ctx, sess.Tenant.ID, owner)
		if err != nil || u.DisabledAt != nil {
			s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "Pick an active user from the list."})
			return
		}
		label, flash = u.Name, "Assigned to "+u.Name+"."
	}
	if _, ok := s.patchLead(w, r, id, "owner", owner, label, in); ok {
		s.setFlash(w, r, flash)
		seeOther(w, r, backTo(r, id))
	}
}

// patchLead applies an edit under the version the form was rendered with.
// A stale version re-renders the page with the conflict and the current
// values: nothing is overwritten. It reports false when it answered the
// request itself; on success the caller sets the flash and redirects.
func (s *Server) patchLead(w http.ResponseWriter, r *http.Request, id, field, value, label string, in leads.PatchInput) (leads.Lead, bool) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	version, ok := formVersion(r)
	if !ok {
		s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "The form was missing the lead's version; reload the page and try again."})
		return leads.Lead{}, false
	}
	p, _ := PrincipalFrom(ctx)
	l, err := s.Leads.Patch(ctx, sess.Tenant.ID, id, p, version, in)
	switch {
	case err == nil:
		return l, true
	case apperr.Is(err, apperr.PreconditionFailed), apperr.Is(err, apperr.Conflict):
		s.renderLead(w, r, http.StatusConflict, id, leadPageOpts{conflict: &leadviews.Conflict{Field: field, Attempted: label, Value: value}})
	case apperr.Is(err, apperr.Invalid):
		s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: problemText(err)})
	default:
		s.uiError(w, r, err)
	}
	return leads.Lead{}, false
}

// uiLeadNextStep saves the next step and its due date ("datetime-local"
// input, read in the user's own time zone; empty clears it) under the
// form's version.
func (s *Server) uiLeadNextStep(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	step, msg := leads.ParseNextStep(r.PostFormValue("next_step"))
	if msg != "" {
		s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "The next step " + msg + "."})
		return
	}
	in := leads.PatchInput{NextStep: &step, DueSet: true}
	if q := r.PostFormValue("due_quick"); q != "" {
		t, ok := leadviews.QuickDue(q, time.Now().In(sessionFrom(r.Context()).User.Location()))
		if !ok {
			s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "Pick one of the quick dates, or a date and time."})
			return
		}
		t = t.UTC()
		in.DueAt = &t
	} else if d := strings.TrimSpace(r.PostFormValue("due_at")); d != "" {
		t, err := parseDue(d, sessionFrom(r.Context()).User.Location())
		if err != nil {
			s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "The due date was not understood; pick a date and time."})
			return
		}
		in.DueAt = &t
	}
	label := step
	if label == "" {
		label = "no next step"
	}
	if _, ok := s.patchLead(w, r, id, "next-step", "", label, in); ok {
		s.setFlash(w, r, "Next step saved.")
		seeOther(w, r, "/leads/"+id)
	}
}

// parseDue reads a datetime-local value (2026-03-02T15:04), a date, or
// RFC 3339; values without an offset are in the reader's zone.
func parseDue(v string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			if layout == "2006-01-02" {
				t = t.Add(17 * time.Hour) // a date alone: due by the end of the working day
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("bad due date")
}

func problemText(err error) string {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return ""
	}
	var parts []string
	for k, v := range e.Fields {
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+" "+v)
	}
	if len(parts) == 0 {
		return sentence("", e.Message)
	}
	return sentence("", strings.Join(parts, "; "))
}

func (s *Server) uiLeadNote(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	id := chi.URLParam(r, "id")
	if _, err := s.Leads.Get(ctx, sess.Tenant.ID, id); err != nil {
		s.uiError(w, r, err) // another tenant's lead is a 404 before anything else
		return
	}
	form := leadviews.NoteForm{Key: r.PostFormValue("key"), Body: r.PostFormValue("body")}
	body := strings.TrimSpace(form.Body)
	switch {
	case body == "":
		form.Error = "Write something first."
	case len([]rune(body)) > 10000:
		form.Error = "A note is at most 10,000 characters; split it in two."
	}
	if form.Error != "" {
		s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{note: form})
		return
	}
	p, _ := PrincipalFrom(ctx)
	loc, err := s.uiOnce(ctx, sess.Tenant.ID, form.Key, "note:"+id, func(k *idempotency.Key) (string, error) {
		loc := "/leads/" + id + "#timeline"
		_, err := s.Leads.AddNote(ctx, sess.Tenant.ID, id, p, body, idempotency.Once[leads.Note]{Key: k,
			Respond: func(leads.Note) (idempotency.Response, error) { return idempotency.SeeOther(loc), nil }})
		return loc, err
	})
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			form.Error = problemText(err)
			s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{note: form})
			return
		}
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Note added.")
	seeOther(w, r, loc)
}

func (s *Server) uiNewLead(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, leadviews.New(leadviews.NewLeadForm{Page: s.page(w, r, "New lead", "leads"), Key: newFormKey()}))
}

func (s *Server) uiCreateLead(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	f := leadviews.NewLeadForm{Name: r.PostFormValue("name"), Email: r.PostFormValue("email"),
		Phone: r.PostFormValue("phone"), Company: r.PostFormValue("company"), Key: r.PostFormValue("key")}
	// The API's parser holds the rules; the form is the same object.
	body, _ := json.Marshal(map[string]string{"name": f.Name, "email": f.Email, "phone": f.Phone, "company": f.Company})
	in, err := leads.ParseCreate(body)
	if err != nil {
		f.Errors = fieldErrors(err)
		f.Page = s.page(nil, r, "New lead", "leads")
		s.render(w, r, http.StatusUnprocessableEntity, leadviews.New(f))
		return
	}
	p, _ := PrincipalFrom(ctx)
	loc, err := s.uiOnce(ctx, sess.Tenant.ID, f.Key, "lead", func(k *idempotency.Key) (string, error) {
		l, err := s.Leads.Create(ctx, sess.Tenant.ID, p, in, idempotency.Once[leads.Lead]{Key: k,
			Respond: func(l leads.Lead) (idempotency.Response, error) { return idempotency.SeeOther("/leads/" + l.ID), nil }})
		return "/leads/" + l.ID, err
	})
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.setFlash(w, r, "Lead added.")
	seeOther(w, r, loc)
}
