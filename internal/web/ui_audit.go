package web

import (
	"cmp"
	"net/http"
	"net/url"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/views/components"
	"leadpipe/views/settings"
)

// uiAudit is GET /settings/audit?action=&actor=&cursor=: the audit log for
// admins, filtered by action and by who acted, an "Older" page at a time.
func (s *Server) uiAudit(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	q := r.URL.Query()
	f := audit.Filter{Action: q.Get("action"), ActorID: q.Get("actor"), Cursor: q.Get("cursor"), Limit: 50}
	page, err := s.Audit.List(r.Context(), sess.Tenant.ID, f)
	if apperr.Is(err, apperr.Invalid) && f.Cursor != "" {
		// A hand-edited or stale link: start from the newest.
		f.Cursor = ""
		page, err = s.Audit.List(r.Context(), sess.Tenant.ID, f)
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := settings.AuditView{Page: s.page(w, r, "Audit log", "audit"), Action: f.Action, Actor: f.ActorID,
		Filtered: f.Action != "" || f.ActorID != "", Now: time.Now()}
	if v.Actions, err = s.auditActionOptions(r, sess.Tenant.ID, f.Action); err == nil {
		v.Actors, err = s.auditActorOptions(r, sess.Tenant.ID, f.ActorID)
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	names := s.auditTargetNames(r, sess.Tenant.ID, page.Items)
	for _, e := range page.Items {
		v.Entries = append(v.Entries, settings.AuditEntry{ID: e.ID, Action: e.Action, ActorKind: e.Actor.Kind,
			ActorID: e.Actor.ID, ActorName: cmp.Or(e.Actor.Name, names[e.Actor.ID]), TargetType: e.TargetType, TargetID: e.TargetID,
			TargetName: names[e.TargetType+":"+e.TargetID], IP: e.IP, At: e.At, Detail: e.Detail})
	}
	if page.NextCursor != "" {
		nq := url.Values{}
		if f.Action != "" {
			nq.Set("action", f.Action)
		}
		if f.ActorID != "" {
			nq.Set("actor", f.ActorID)
		}
		nq.Set("cursor", page.NextCursor)
		v.NextHref = "/settings/audit?" + nq.Encode()
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, settings.Audit(v))
}

// auditTargetNames names the page's targets ("type:id" → name) and
// actors (id → name) where the tenant still has them: users, tokens,
// sources, endpoints and leads (one query each). A failure only leaves
// the ids.
func (s *Server) auditTargetNames(r *http.Request, tenantID string, items []audit.Entry) map[string]string {
	ctx := r.Context()
	out := map[string]string{}
	var leadIDs []string
	for _, e := range items {
		if e.TargetType == "lead" && e.TargetID != "" {
			leadIDs = append(leadIDs, e.TargetID)
		}
	}
	if len(leadIDs) > 0 {
		if ns, err := s.Leads.Names(ctx, tenantID, leadIDs); err == nil {
			for id, n := range ns {
				out["lead:"+id] = n
			}
		}
	}
	if us, err := s.Tenants.Users(ctx, tenantID); err == nil {
		for _, u := range us {
			out["user:"+u.ID], out[u.ID] = u.Name, u.Name
		}
	}
	if ts, err := s.Tenants.Tokens(ctx, tenantID); err == nil {
		for _, t := range ts {
			out["token:"+t.ID], out[t.ID] = "API token "+t.Name, "API token "+t.Name
		}
	}
	if srcs, err := s.Sources.List(ctx, tenantID); err == nil {
		for _, src := range srcs {
			out["source:"+src.ID] = src.Name
		}
	}
	return out
}

// auditActionOptions are the actions the tenant's log holds (and the one
// asked for, even when it holds none of it yet).
func (s *Server) auditActionOptions(r *http.Request, tenantID, current string) ([]components.Option, error) {
	actions, err := s.Audit.Actions(r.Context(), tenantID)
	if err != nil {
		return nil, err
	}
	out := []components.Option{{Value: "", Label: "Every action"}}
	for _, a := range actions {
		out = append(out, components.Option{Value: a, Label: settings.ActionLabel(a)})
	}
	return withCurrent(out, current, settings.ActionLabel(current)), nil
}

// withCurrent is opts with the value asked for, labelled label, added when
// none of them is it.
func withCurrent(opts []components.Option, current, label string) []components.Option {
	for _, o := range opts {
		if o.Value == current {
			return opts
		}
	}
	return append(opts, components.Option{Value: current, Label: label})
}

// auditActorOptions are the tenant's people and API tokens (revoked ones
// too: their past actions stay in the log).
func (s *Server) auditActorOptions(r *http.Request, tenantID, current string) ([]components.Option, error) {
	us, err := s.Tenants.Users(r.Context(), tenantID)
	if err != nil {
		return nil, err
	}
	ts, err := s.Tenants.Tokens(r.Context(), tenantID)
	if err != nil {
		return nil, err
	}
	out := []components.Option{{Value: "", Label: "Everyone"}}
	for _, u := range us {
		out = append(out, components.Option{Value: u.ID, Label: u.Name + " (" + u.Email + ")"})
	}
	for _, t := range ts {
		out = append(out, components.Option{Value: t.ID, Label: "API token: " + t.Name})
	}
	return withCurrent(out, current, current), nil
}
