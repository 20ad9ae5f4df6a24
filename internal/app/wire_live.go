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
func (a *App) startLive() {
	log := a.Log.With("component", "live")
	a.Live = live.NewPublisher(a.RDB, log)
	a.LiveHub = live.NewHub(a.RDB, log)
	hub, pub := a.LiveHub, a.Live
	a.closers = append(a.closers, func() { hub.Close(); pub.Close() })
}

// liveLeads tells the publisher of leads people create or reassign.
func (a *App) liveLeads() leads.Option {
	pub := a.Live
	return func(s *leads.Service) {
		s.Changed = func(tenantID, change string, l leads.Lead, by string) {
			ev := live.Event{Type: live.Created, LeadID: l.ID, By: by, Name: cmp.Or(l.Name, l.Email, l.Company, l.Phone)}
			if change == leads.ChangeReassigned {
				ev.Type = live.Reassigned
			}
			if l.OwnerID != nil {
				ev.OwnerID = *l.OwnerID
			}
			pub.Publish(tenantID, ev)
		}
	}
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
