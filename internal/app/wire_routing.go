package app

import (
	"time"

	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
)

// registerRoutingTasks gives the worker the escalation sweep (docs/ARCHITECTURE.md
// §5a): every minute, for every tenant; each lead is escalated once even
// when two sweeps overlap (leads.Service.Escalate).
func (a *App) registerRoutingTasks(ls *leads.Service) {
	a.Jobs.Handle(leads.TypeEscalate, ls.HandleEscalate(a.tenantIDs))
	a.Jobs.Every(jobs.Periodic{Type: leads.TypeEscalate, Every: time.Minute, Queue: jobs.QueueDefault})
}
