package app

import (
	"cmp"

	"leadpipe/internal/leads"
	"leadpipe/internal/live"
	"leadpipe/internal/webhooks"
)

// startLive starts the live inbox's publisher (both processes: whichever
// commits a change publishes it) and hub (it subscribes only when a
// browser first opens a stream, so a worker never does).
func (a *App) startLive() (*live.Publisher, *live.Hub) {
	log := a.Log.With("component", "live")
	pub, hub := live.NewPublisher(a.RDB, log), live.NewHub(a.RDB, log)
	a.closers = append(a.closers, func() { hub.Close(); pub.Close() })
	return pub, hub
}

// liveLeads tells the publisher of leads people create or reassign.
func (a *App) liveLeads() leads.Option {
	pub := a.Live
	return leads.WithChanged(func(tenantID, change string, l leads.Lead, by string) {
		typ, owner := live.Created, ""
		if change == leads.ChangeReassigned {
			typ = live.Reassigned
		}
		if l.OwnerID != nil {
			owner = *l.OwnerID
		}
		pub.Publish(tenantID, live.Event{Type: typ, LeadID: l.ID, OwnerID: owner, By: by, Name: cmp.Or(l.Name, l.Email, l.Company, l.Phone)})
	})
}

// liveIngest tells the publisher of the leads a webhook batch created.
func (a *App) liveIngest() func(string, webhooks.Result) {
	pub := a.Live
	return func(tenantID string, r webhooks.Result) {
		if !r.New {
			return
		}
		pub.Publish(tenantID, live.Event{Type: live.Created, LeadID: r.LeadID, OwnerID: r.OwnerID,
			Name: cmp.Or(r.Lead.Name, r.Lead.Email, r.Lead.Company, r.Lead.Phone)})
	}
}
