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
	a.Jobs.HandleEvery(leads.TypeEscalate, ls.HandleEscalate(a.tenantIDs), time.Minute, jobs.QueueDefault)
}
