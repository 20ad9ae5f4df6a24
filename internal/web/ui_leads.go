package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/leads"
	"leadpipe/internal/reconcile"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
	"leadpipe/views/components"
	leadviews "leadpipe/views/leads"
)

const (
	inboxPageSize = 50
	boardPerCol   = 20
	countCap      = 1_000 // status counts above this read "1,000+" (bounded cost at any size)
	timelineShown = 200
)

// leadUIRoutes are the inbox's, board's and settings' routes: a person's own settings (time zone), the ids behind "Select
// all N matching" with the bulk change they feed (the API's handler, on
// the session: same Idempotency-Key rules, same-origin only), and a board
// column's next cards.
func (s *Server) leadUIRoutes(r chi.Router) {
	r.Get("/settings/me", s.uiProfile)
	r.Post("/settings/me", s.withForm(s.uiSaveProfile))
	r.Post("/settings/me/away", s.withForm(s.uiSaveAway))
	r.Get("/leads/ids", s.uiLeadIDs)
	r.Post("/leads/bulk.json", s.Idem.Wrap(s.apiBulkLeads))
	r.Get("/leads/board/more", s.uiBoardMore)
}

// directory is the tenant's users and sources by id, for names on pages.
type directory struct {
	users   []tenants.User
	sources map[string]string
	srcOpts []components.Option
	// meta maps each meta source to whether it can fetch a lead's details
	// from the Graph API (it has an access token).
	meta map[string]bool
}

// sessionDirectory is loadDirectory for the signed-in tenant; false when
// it has answered with the error page.
func (s *Server) sessionDirectory(w http.ResponseWriter, r *http.Request) (directory, bool) {
	dir, err := s.loadDirectory(r.Context(), sessionFrom(r.Context()).Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return directory{}, false
	}
	return dir, true
}

func (s *Server) loadDirectory(ctx context.Context, tenantID string) (directory, error) {
	us, err := s.Tenants.Users(ctx, tenantID)
	if err != nil {
		return directory{}, err
	}
	srcs, err := s.Sources.List(ctx, tenantID)
	if err != nil {
		return directory{}, err
	}
	d := directory{users: us, sources: make(map[string]string, len(srcs)), meta: map[string]bool{}}
	for _, src := range srcs {
		d.sources[src.ID] = src.Name
		d.srcOpts = append(d.srcOpts, components.Option{Value: src.ID, Label: src.Name})
		if src.Kind == kinds.Meta || src.Kind == kinds.LinkedIn {
			d.meta[src.ID] = reconcile.CanEnrich(src)
		}
	}
	return d, nil
}

func (d directory) userName(id string) string {
	for _, u := range d.users {
		if u.ID == id {
			return u.Name
		}
	}
	return ""
}

func (d directory) leadView(l leads.Lead) leadviews.Lead {
	v := leadviews.Lead{ID: l.ID, Name: l.Name, Email: l.Email, Phone: l.Phone, Company: l.Company,
		SourceID: l.SourceID, SourceName: d.sources[l.SourceID], SourceRef: l.SourceRef, Status: l.Status,
		Tags: l.Tags, Version: l.Version, TimesSeen: l.TimesSeen, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt,
		LastSeenAt: l.LastSeenAt}
	if l.OwnerID != nil {
		v.OwnerID = *l.OwnerID
		v.OwnerName = d.userName(*l.OwnerID)
	}
	v.SourceCreatedAt, v.NextStep, v.DueAt = deref(l.SourceCreatedAt), l.NextStep, deref(l.DueAt)
	v.AssignedAt, v.FirstResponseDueAt, v.FirstRespondedAt = deref(l.AssignedAt), deref(l.FirstResponseDueAt), deref(l.FirstRespondedAt)
	if canFetch, ok := d.meta[l.SourceID]; ok && l.Name == "" && l.Email == "" && l.Phone == "" {
		// A Meta or LinkedIn webhook carries only ids; the fields come from the sender's API.
		v.Pending = leadviews.PendingToken
		if canFetch {
			v.Pending = leadviews.PendingMeta
		}
		v.FormID = metaFormID(l.Payload)
	}
	return v
}

// metaFormID reads form_id (a string or a number) from a Meta change value.
func metaFormID(payload []byte) string {
	var p struct {
		FormID json.RawMessage `json:"form_id"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	if id := strings.Trim(string(p.FormID), `"`); id != "null" {
		return id
	}
	return ""
}

// counts returns "All" and every status, each capped at countCap. "All"
// is the sum, capped when any part is.
func (s *Server) counts(ctx context.Context, tenantID string) ([]leadviews.StatusCount, error) {
	return s.countsFor(ctx, tenantID, leads.Filter{})
}

// countsFor is counts of the leads a view and search show (the status
// tabs follow them).
func (s *Server) countsFor(ctx context.Context, tenantID string, f leads.Filter) ([]leadviews.StatusCount, error) {
	cs, err := s.Leads.CappedCountsFor(ctx, tenantID, f, countCap)
	if err != nil {
		return nil, err
	}
	out := make([]leadviews.StatusCount, 0, len(cs)+1)
	all := leadviews.StatusCount{}
	for _, c := range cs { // a view of open leads counts no Won/Lost tab
		all.N += c.N
		all.Capped = all.Capped || c.Capped
		out = append(out, leadviews.StatusCount{Status: c.Status, N: c.N, Capped: c.Capped})
	}
	return append([]leadviews.StatusCount{all}, out...), nil
}

// openStatuses are the statuses a salesperson still works.
var openStatuses = []string{"new", "contacted", "qualified", "unqualified"}

// inboxQuery is the inbox's URL read into the one filter model: the view
// (its defaults) and the sheet's values, as shown and as a leads.Filter.
type inboxQuery struct {
	shown  leadviews.Filters // from the URL; shown.Effective() is the sheet
	filter leads.Filter
	bad    map[string]string // values that were not understood (dropped)
}

// readInboxQuery turns /leads?view=&status=&owner=&source=&due=&q= into a
// filter. Values in the URL win over the view's; an unknown view is the
// default one (all leads for admins, "My open leads" for staff).
func readInboxQuery(q url.Values, me string, admin bool, loc *time.Location, now time.Time) inboxQuery {
	f := leadviews.Filters{View: q.Get("view"), Status: q.Get("status"), Source: q.Get("source"), Owner: q.Get("owner"),
		Due: q.Get("due"), Q: strings.TrimSpace(q.Get("q"))}
	view, ok := leadviews.ViewFor(f.View)
	if !ok {
		f.View = leadviews.ViewMine
		if admin {
			f.View = leadviews.ViewAll // admins oversee everything; staff land on their own leads
		}
		view, _ = leadviews.ViewFor(f.View)
	}
	out := inboxQuery{shown: f, bad: map[string]string{}}
	e := f.Effective()
	lf := leads.Filter{Q: f.Q, ByDue: view.ByDue, SLA: view.SLA}
	lf.Duplicates = view.Duplicates
	switch e.Status {
	case leadviews.FilterAny:
	case leadviews.StatusOpen:
		lf.AnyStatus = openStatuses
	default:
		lf.Status = e.Status
	}
	switch e.Owner {
	case leadviews.FilterAny:
	case leadviews.OwnerMe:
		lf.OwnerID = me
	default:
		lf.OwnerID = e.Owner
	}
	if e.Source != leadviews.FilterAny {
		lf.SourceID = e.Source
	}
	switch e.Due {
	case leadviews.FilterAny:
	case leadviews.DueOverdue:
		lf.DueBefore = &now
	case leadviews.DueToday:
		end := endOfDay(now, loc)
		lf.DueBefore = &end
	case leadviews.DueWeek:
		end := endOfDay(now.AddDate(0, 0, 6), loc)
		lf.DueBefore = &end
	default:
		out.bad["due"] = "must be overdue, today or week"
		out.shown.Due = ""
	}
	out.filter = lf
	return out
}

// drop forgets the URL's value of one parameter the list refused.
func (iq *inboxQuery) drop(param string) {
	switch param {
	case "status":
		iq.filter.Status, iq.filter.AnyStatus, iq.shown.Status = "", nil, leadviews.FilterAny
	case "source":
		iq.filter.SourceID, iq.shown.Source = "", leadviews.FilterAny
	case "owner":
		iq.filter.OwnerID, iq.shown.Owner = "", leadviews.FilterAny
	case "q":
		iq.filter.Q, iq.shown.Q = "", ""
	case "cursor":
		iq.filter.Cursor = ""
	}
}

// endOfDay is the start of the reader's next day: "due today" means
// today or earlier in their own time zone.
func endOfDay(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
}

// listInbox lists one page of the query, dropping (and naming) what the
// list did not understand, such as a stale bookmark's source.
func (s *Server) listInbox(ctx context.Context, tenantID string, iq *inboxQuery) (leads.Page, error) {
	page, err := s.Leads.List(ctx, tenantID, iq.filter)
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code == apperr.Invalid {
		for k := range ae.Fields {
			iq.bad[k] = ae.Fields[k]
			iq.drop(k)
		}
		page, err = s.Leads.List(ctx, tenantID, iq.filter)
	}
	return page, err
}

func (s *Server) uiInbox(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	now := time.Now()
	iq := readInboxQuery(r.URL.Query(), sess.User.ID, sess.User.IsAdmin(), sess.User.Location(), now)
	iq.filter.Limit, iq.filter.Cursor = inboxPageSize, r.URL.Query().Get("cursor")
	dir, ok := s.sessionDirectory(w, r)
	if !ok {
		return
	}
	v := leadviews.InboxView{IsFirst: iq.filter.Cursor == "", Now: now, MeID: sess.User.ID, Views: leadviews.Views}
	page, err := s.listInbox(ctx, sess.Tenant.ID, &iq)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	if iq.filter.Cursor == "" {
		v.IsFirst = true
	}
	if len(iq.bad) > 0 {
		var bad []string
		for k := range iq.bad {
			bad = append(bad, k)
		}
		sort.Strings(bad)
		v.Problem = "Ignored: " + strings.Join(bad, ", ") + ". Showing the leads for the remaining filters."
	}
	v.Filters = iq.shown
	// The sheet's status list counts every status under the other filters.
	cf := iq.filter
	cf.Status, cf.AnyStatus, cf.Cursor = "", nil, ""
	if v.Counts, err = s.countsFor(ctx, sess.Tenant.ID, cf); err != nil {
		s.uiError(w, r, err)
		return
	}
	v.Matching = v.MatchingFor(v.Filters.Effective().Status)
	v.HasAny = v.Counts[0].N > 0 || v.Filters.Active()
	if !v.HasAny {
		all, err := s.counts(ctx, sess.Tenant.ID)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		v.HasAny = all[0].N > 0
	}
	v.Sources = []components.Option{{Value: leadviews.FilterAny, Label: "All sources"}, {Value: leads.SourceManual, Label: "Added by hand"}}
	for _, o := range dir.srcOpts {
		v.Sources = append(v.Sources, components.Option{Value: o.Value, Label: leadviews.SourceName(o.Label)})
	}
	v.Owners = []components.Option{{Value: leadviews.FilterAny, Label: "Anyone"}, {Value: leadviews.OwnerMe, Label: "Me (" + sess.User.Name + ")"}, {Value: leads.OwnerNone, Label: "Unassigned"}}
	v.Assignees = []components.Option{{Value: "", Label: "Assign to…"}, {Value: sess.User.ID, Label: "Me (" + sess.User.Name + ")"}}
	for _, u := range dir.users {
		if u.DisabledAt == nil && u.ID != sess.User.ID {
			v.Owners = append(v.Owners, components.Option{Value: u.ID, Label: u.Name})
			v.Assignees = append(v.Assignees, components.Option{Value: u.ID, Label: u.Name})
		}
	}
	v.Assignees = append(v.Assignees, components.Option{Value: leads.OwnerNone, Label: "Nobody (unassign)"})
	items, next, nextParam := page.Items, page.NextCursor, "cursor"
	if v.SLA = iq.filter.SLA; v.SLA != "" {
		mc := r.URL.Query().Get("mine_cursor")
		if items, v.Mine, next, nextParam, err = s.mineFirst(ctx, sess.Tenant.ID, sess.User.ID, iq.filter, page, mc); err != nil {
			s.uiError(w, r, err)
			return
		}
		v.IsFirst = v.IsFirst && mc == ""
	}
	for _, l := range items {
		v.Leads = append(v.Leads, dir.leadView(l))
	}
	if err := s.addRepeats(ctx, sess.Tenant.ID, v.Leads); err != nil {
		s.uiError(w, r, err)
		return
	}
	if iq.filter.Duplicates {
		if v.Groups, err = s.duplicateGroups(ctx, sess.Tenant.ID, dir, items, v.IsFirst); err != nil {
			s.uiError(w, r, err)
			return
		}
	}
	if next != "" {
		href := v.Filters.Href(v.Filters.Status)
		sep := "?"
		if strings.Contains(href, "?") {
			sep = "&"
		}
		v.NextHref = href + sep + nextParam + "=" + next
	}
	v.BulkKey = newFormKey()
	v.Back = r.URL.RequestURI()
	v.Page = s.page(w, r, "Inbox", "leads")
	s.render(w, r, http.StatusOK, leadviews.Inbox(v))
}

// idsPage is how many lead ids GET /leads/ids answers at once: one bulk
// request's worth (leads.MaxBulk).
const idsPage = leads.MaxBulk

// uiLeadIDs is GET /leads/ids with the inbox's query: the ids of every
// lead the filters match, up to 500 per page, for "Select all N matching"
// (app.js then changes them through POST /leads/bulk.json in chunks).
func (s *Server) uiLeadIDs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	iq := readInboxQuery(r.URL.Query(), sess.User.ID, sess.User.IsAdmin(), sess.User.Location(), time.Now())
	if len(iq.bad) > 0 {
		WriteError(w, r, s.Log, apperr.InvalidFields(iq.bad))
		return
	}
	iq.filter.Cursor = r.URL.Query().Get("cursor")
	out := struct {
		IDs        []string `json:"ids"`
		NextCursor string   `json:"next_cursor"`
	}{IDs: []string{}}
	for len(out.IDs) < idsPage {
		iq.filter.Limit = min(200, idsPage-len(out.IDs))
		page, err := s.Leads.List(ctx, sess.Tenant.ID, iq.filter)
		if err != nil {
			WriteError(w, r, s.Log, err)
			return
		}
		for _, l := range page.Items {
			out.IDs = append(out.IDs, l.ID)
		}
		out.NextCursor = page.NextCursor
		if page.NextCursor == "" {
			break
		}
		iq.filter.Cursor = page.NextCursor
	}
	WriteJSON(w, http.StatusOK, out)
}

// uiBulk applies the inbox's bulk form: one action (assign, status, tag)
// to the checked leads, once per rendered form (a double click applies
// once), through the same service as POST /api/v1/leads/bulk.
func (s *Server) uiBulk(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, "/leads") || strings.HasPrefix(back, "//") {
		back = "/leads"
	}
	ids := r.PostForm["ids"]
	var in leads.BulkInput
	var what string
	switch r.PostFormValue("action") {
	case "assign":
		o := r.PostFormValue("owner")
		in.Set.OwnerSet = true
		switch o {
		case "":
			s.setFlashError(w, r, "Pick who to assign the leads to.")
			seeOther(w, r, back)
			return
		case leads.OwnerNone:
			what = "unassigned"
		default:
			in.Set.OwnerID = &o
			u, err := s.Tenants.User(ctx, sess.Tenant.ID, o)
			if err != nil || u.DisabledAt != nil {
				s.setFlashError(w, r, "Pick an active user from the list.")
				seeOther(w, r, back)
				return
			}
			what = "assigned to " + u.Name
		}
	case "status":
		st := r.PostFormValue("status")
		if !leads.ValidStatus(st) {
			s.setFlashError(w, r, "Pick a status to set.")
			seeOther(w, r, back)
			return
		}
		in.Set.Status = &st
		what = "set to " + components.StatusLabel(st)
	case "tag":
		t, msg := leads.NormalizeTags([]string{r.PostFormValue("tag")})
		if msg != "" || len(t) == 0 {
			s.setFlashError(w, r, "Type a tag of at most 64 characters.")
			seeOther(w, r, back)
			return
		}
		in.Set.AddTags = t
		what = "tagged " + t[0]
	default:
		s.setFlashError(w, r, "Pick an action: assign, set status or add a tag.")
		seeOther(w, r, back)
		return
	}
	if len(ids) == 0 {
		s.setFlashError(w, r, "Select at least one lead first.")
		seeOther(w, r, back)
		return
	}
	if len(ids) > leads.MaxBulk {
		ids = ids[:leads.MaxBulk]
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" && !seen[id] {
			seen[id] = true
			in.IDs = append(in.IDs, id)
		}
	}
	p, _ := PrincipalFrom(ctx)
	var res leads.BulkResult
	_, err := s.uiOnce(ctx, sess.Tenant.ID, r.PostFormValue("key"), "bulk", func(k *idempotency.Key) (string, error) {
		var err error
		res, err = s.Leads.Bulk(ctx, sess.Tenant.ID, p, in, idempotency.Once[leads.BulkResult]{Key: k, Respond: func(leads.BulkResult) (idempotency.Response, error) {
			return idempotency.Response{Status: http.StatusSeeOther, Header: http.Header{"Location": {back}}}, nil
		}})
		return back, err
	})
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			s.setFlashError(w, r, problemText(err))
			seeOther(w, r, back)
			return
		}
		s.uiError(w, r, err)
		return
	}
	updated, missing := 0, 0
	for _, it := range res.Items {
		switch it.Status {
		case leads.BulkUpdated:
			updated++
		case leads.BulkNotFound:
			missing++
		}
	}
	msg := leadviews.Plural(updated, "lead", "leads") + " " + what + "."
	if res.Items == nil {
		msg = "Already done: this form was sent before."
	} else if n := len(res.Items) - updated - missing; n > 0 {
		msg += " " + leadviews.Plural(n, "was", "were") + " already so."
	}
	if missing > 0 {
		msg += " " + leadviews.Plural(missing, "lead is", "leads are") + " gone."
	}
	s.setFlash(w, r, msg)
	seeOther(w, r, back)
}
