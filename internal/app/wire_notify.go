package app

import (
	"context"
	"time"

	"leadpipe/internal/config"
	"leadpipe/internal/db"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/notify"
	"leadpipe/internal/tenants"
	"leadpipe/internal/web"
)

// buildNotify makes the e-mail outbox's sender (docs/NOTIFICATIONS.md):
// over LEADPIPE_SMTP_URL, or into the mail preview without it.
func (a *App) buildNotify(ls *leads.Service) (*notify.Service, error) {
	var mailer notify.Mailer // nil: the mail preview
	if a.Cfg.SMTPURL != "" {
		m, err := notify.ParseSMTPURL(a.Cfg.SMTPURL)
		if err != nil {
			return nil, err
		}
		mailer = m
	}
	n := &notify.Service{DB: a.DB, Queue: a.Queue, From: a.Cfg.MailFrom, BaseURL: a.Cfg.BaseURL,
		People: notifyPeople{a.Tenants}, Leads: notifyLeads{ls}, Tenants: a.tenantIDs,
		Log: a.Log.With("component", "notify"), Now: a.now, Mailer: mailer,
		Links: notifyLinks{t: a.Tenants, cfg: a.Cfg}}
	return n, nil
}

func (a *App) tenantIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := a.Tenants.ForEach(ctx, func(id string) error { ids = append(ids, id); return nil })
	return ids, err
}

// registerNotifyTasks gives the worker the sender, its pump and the scan
// of overdue leads and digests.
func (a *App) registerNotifyTasks(n *notify.Service) {
	j := a.Jobs
	j.Handle(notify.TypeSend, n.HandleSend)
	j.HandleEvery(notify.TypePump, n.HandlePump, 2*time.Second, jobs.QueueDefault)
	j.HandleEvery(notify.TypeScan, n.HandleScan, time.Minute, jobs.QueueDefault)
}

// notifyAssigned writes "a lead was assigned to you" in the assignment's
// transaction.
type notifyAssigned struct{ now func() time.Time }

func (n notifyAssigned) Assigned(ctx context.Context, x db.Ext, tenantID string, as []leads.Handover) error {
	ns := make([]notify.Notification, len(as))
	for i, h := range as {
		ns[i] = notify.Notification{Kind: notify.KindAssigned, UserID: h.OwnerID, LeadID: h.LeadID, Subject: h.LeadID,
			Cause: h.Cause, Data: map[string]string{"rule": h.Rule}}
	}
	now := time.Now
	if n.now != nil {
		now = n.now
	}
	_, err := notify.Write(ctx, x, tenantID, now(), ns)
	return err
}

// notifyLinkIssued writes the invitation or reset message in the
// transaction that makes its link. The key names the link: one link, one
// message.
type notifyLinkIssued struct{ now func() time.Time }

func (n notifyLinkIssued) LinkIssued(ctx context.Context, x db.Ext, tenantID string, l tenants.IssuedLink) error {
	kind := notify.KindInvitation
	if l.Kind == tenants.LinkPasswordReset {
		kind = notify.KindPasswordReset
	}
	now := time.Now
	if n.now != nil {
		now = n.now
	}
	_, err := notify.Write(ctx, x, tenantID, now(), []notify.Notification{{Kind: kind, UserID: l.UserID, Subject: l.UserID,
		Cause: l.ID, Data: map[string]string{"cause": l.ID, "inviter": l.Inviter}}})
	return err
}

// notifyLinks hands the outbox the link of a message at send time (the
// tenants area keeps only its hash).
type notifyLinks struct {
	t   *tenants.Service
	cfg *config.Config // BaseURL read at send time
}

func (n notifyLinks) Link(ctx context.Context, tenantID, kind, causeID string) (string, time.Time, error) {
	token, exp, err := n.t.LinkToken(ctx, tenantID, kind, causeID)
	if err != nil {
		return "", time.Time{}, err
	}
	return web.LinkURL(n.cfg.BaseURL, kind, token), exp, nil
}

// notifyPeople is the tenants area as notify's directory.
type notifyPeople struct{ t *tenants.Service }

func person(u tenants.User) notify.Person {
	return notify.Person{ID: u.ID, Email: u.Email, Name: u.Name, TimeZone: u.TimeZone, Admin: u.IsAdmin(), Active: u.DisabledAt == nil}
}

func (p notifyPeople) Person(ctx context.Context, tenantID, userID string) (notify.Person, error) {
	u, err := p.t.User(ctx, tenantID, userID)
	if err != nil {
		return notify.Person{}, err
	}
	return person(u), nil
}

func (p notifyPeople) Members(ctx context.Context, tenantID string) ([]notify.Person, error) {
	us, err := p.t.Users(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]notify.Person, len(us))
	for i, u := range us {
		out[i] = person(u)
	}
	return out, nil
}

func (p notifyPeople) TenantName(ctx context.Context, tenantID string) (string, error) {
	t, err := p.t.Tenant(ctx, tenantID)
	return t.Name, err
}

// notifyLeads is the leads area as notify's reader.
type notifyLeads struct{ s *leads.Service }

func brief(l leads.Lead) notify.LeadBrief {
	owner := ""
	if l.OwnerID != nil {
		owner = *l.OwnerID
	}
	return notify.LeadBrief{ID: l.ID, Name: l.Name, Email: l.Email, Phone: l.Phone, Company: l.Company, NextStep: l.NextStep,
		DueAt: l.DueAt, FirstResponseDue: l.FirstResponseDueAt, OwnerID: owner}
}

func briefs(ls []leads.Lead) []notify.LeadBrief {
	out := make([]notify.LeadBrief, len(ls))
	for i, l := range ls {
		out[i] = brief(l)
	}
	return out
}

func (n notifyLeads) Brief(ctx context.Context, tenantID, leadID string) (notify.LeadBrief, error) {
	l, err := n.s.Get(ctx, tenantID, leadID)
	if err != nil {
		return notify.LeadBrief{}, err
	}
	return brief(l), nil
}

func (n notifyLeads) Agenda(ctx context.Context, tenantID, userID string, before, now time.Time) ([]notify.LeadBrief, []notify.LeadBrief, error) {
	due, overdue, err := n.s.Agenda(ctx, tenantID, userID, before, now)
	return briefs(due), briefs(overdue), err
}

func (n notifyLeads) OverdueSince(ctx context.Context, tenantID string, from, now time.Time, limit int) ([]notify.LeadBrief, error) {
	ls, err := n.s.OverdueSince(ctx, tenantID, from, now, limit)
	return briefs(ls), err
}
