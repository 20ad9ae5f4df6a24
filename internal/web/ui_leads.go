package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
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
	"leadpipe/views/layouts"
	leadviews "leadpipe/views/leads"
)

const (
	inboxPageSize = 50
	boardPerCol   = 20
	countCap      = 1_000 // status counts above this read "1,000+" (bounded cost at any size)
	timelineShown = 200
)

// leadUIRoutes are the inbox's, board's and settings' routes added for
// issue #28: a person's own settings (time zone), the ids behind "Select
// all N matching" with the bulk change they feed (the API's handler, on
// the session: same Idempotency-Key rules, same-origin only), and a board
// column's next cards.
func (s *Server) leadUIRoutes(r chi.Router) {
	r.Get("/settings/me", s.uiProfile)
	r.Post("/settings/me", s.uiSaveProfile)
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
		if src.Kind == kinds.Meta {
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
	if l.SourceCreatedAt != nil {
		v.SourceCreatedAt = *l.SourceCreatedAt
	}
	v.NextStep = l.NextStep
	if l.DueAt != nil {
		v.DueAt = *l.DueAt
	}
	v.AssignedAt, v.FirstResponseDueAt, v.FirstRespondedAt = timeOr0(l.AssignedAt), timeOr0(l.FirstResponseDueAt), timeOr0(l.FirstRespondedAt)
	if canFetch, ok := d.meta[l.SourceID]; ok && l.Name == "" && l.Email == "" && l.Phone == "" {
		// A Meta webhook carries only ids; the fields come from Graph.
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
	dir, err := s.loadDirectory(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
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
	v.Sources = append([]components.Option{{Value: leadviews.FilterAny, Label: "All sources"}, {Value: leads.SourceManual, Label: "Added by hand"}}, dir.srcOpts...)
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
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
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

func (s *Server) uiBoard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	dir, err := s.loadDirectory(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	counts, err := s.counts(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := leadviews.BoardView{PerCol: boardPerCol, HasAny: counts[0].N > 0, Now: time.Now()}
	for i, st := range leads.Statuses {
		col, err := s.boardColumn(ctx, sess.Tenant.ID, dir, st, "")
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		col.Count = counts[i+1]
		v.Columns = append(v.Columns, col)
	}
	v.Page = s.page(w, r, "Board", "board")
	v.Page.Wide = true
	s.render(w, r, http.StatusOK, leadviews.Board(v))
}

// boardColumn is one page of a status's newest leads (keyset, like the
// inbox: a card moved meanwhile is neither repeated nor skipped).
func (s *Server) boardColumn(ctx context.Context, tenantID string, dir directory, status, cursor string) (leadviews.Column, error) {
	page, err := s.Leads.List(ctx, tenantID, leads.Filter{Status: status, Limit: boardPerCol, Cursor: cursor})
	if err != nil {
		return leadviews.Column{}, err
	}
	col := leadviews.Column{Status: status, NextCursor: page.NextCursor}
	for _, l := range page.Items {
		col.Leads = append(col.Leads, dir.leadView(l))
	}
	if err := s.addRepeats(ctx, tenantID, col.Leads); err != nil {
		return leadviews.Column{}, err
	}
	return col, nil
}

// addRepeats splits each lead's times_seen into deliveries and repeats
// (leadviews.Lead.Sightings), one query for the whole page.
func (s *Server) addRepeats(ctx context.Context, tenantID string, ls []leadviews.Lead) error {
	if s.Deliveries == nil || len(ls) == 0 {
		return nil
	}
	ids := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.TimesSeen > 1 {
			ids = append(ids, l.ID)
		}
	}
	reps, err := s.Deliveries.RepeatsByLead(ctx, tenantID, ids)
	if err != nil {
		return err
	}
	for i := range ls {
		ls[i].Repeats = reps[ls[i].ID]
	}
	return nil
}

// uiBoardMore is GET /leads/board/more?status=&cursor=: a column's next
// cards, the fragment htmx puts in place of its "Load more".
func (s *Server) uiBoardMore(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	q := r.URL.Query()
	if !leads.ValidStatus(q.Get("status")) || q.Get("cursor") == "" {
		s.uiError(w, r, apperr.New(apperr.BadRequest, "a status and a cursor are needed"))
		return
	}
	dir, err := s.loadDirectory(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	col, err := s.boardColumn(ctx, sess.Tenant.ID, dir, q.Get("status"), q.Get("cursor"))
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			err = apperr.New(apperr.BadRequest, "that cursor is not one this board made")
		}
		s.uiError(w, r, err)
		return
	}
	cs, err := s.counts(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	for _, c := range cs[1:] {
		if c.Status == col.Status {
			col.Count = c
		}
	}
	s.render(w, r, http.StatusOK, leadviews.BoardMore(col, time.Now()))
}

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
	dir, err := s.loadDirectory(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
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
	if v.Note.Key == "" {
		v.Note.Key = newFormKey()
	}
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
	evs = leadviews.CollapseDuplicates(withArrival(evs, v.Lead))
	if len(evs) > timelineShown {
		v.MoreEvents = len(evs) - timelineShown
		evs = evs[:timelineShown]
	}
	v.Timeline = evs
	if v.Merge, err = s.mergePanels(ctx, sess.Tenant.ID, l, dir, sess.User.IsAdmin()); err != nil {
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
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
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
	l, ok := s.patchLead(w, r, id, "status", status, label, leads.PatchInput{Status: &status})
	if !ok {
		return
	}
	if backTo(r, id) != "/leads/board" {
		s.setFlash(w, r, "Status set to "+label+".")
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

// boardConflict answers a board move whose card is stale (the lead was
// edited since the board was drawn): nothing is written, the board is
// drawn again with the lead where it now is and a flash that says who
// changed it. It reports whether it answered.
func (s *Server) boardConflict(w http.ResponseWriter, r *http.Request, id, status string) bool {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	version, ok := formVersion(r)
	if !ok {
		return false // patchLead explains a missing version
	}
	l, err := s.Leads.Get(ctx, sess.Tenant.ID, id)
	if err != nil || l.Version == version {
		return false
	}
	tl, err := s.Leads.Timeline(ctx, sess.Tenant.ID, id)
	if err != nil {
		s.uiError(w, r, err)
		return true
	}
	by, at := lastEditor(l, tl)
	name := leadviews.Lead{Name: l.Name, Email: l.Email, Phone: l.Phone}.Title()
	s.setFlashError(w, r, "Not moved: "+by+" changed "+name+" at "+components.ExactIn(components.WithZone(ctx, sess.User.Location()), at)+
		" (now "+components.StatusLabel(l.Status)+"). Your move to "+components.StatusLabel(status)+" was not saved, so nothing of theirs was overwritten.")
	seeOther(w, r, "/leads/board")
	return true
}

func (s *Server) uiLeadOwner(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
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
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	step, msg := leads.ParseNextStep(r.PostFormValue("next_step"))
	if msg != "" {
		s.renderLead(w, r, http.StatusUnprocessableEntity, id, leadPageOpts{problem: "The next step " + msg + "."})
		return
	}
	in := leads.PatchInput{NextStep: &step, DueSet: true}
	if d := strings.TrimSpace(r.PostFormValue("due_at")); d != "" {
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
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
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
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
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
