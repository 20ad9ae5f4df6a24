package leads

import (
	"context"
	"time"

	"leadpipe/internal/db"
)

// Notifier hears, in the transaction of an assignment, whom leads were
// given to (the notifications outbox: "a lead was assigned to you",
// docs/NOTIFICATIONS.md). nil: nobody is told.
type Notifier interface {
	Assigned(ctx context.Context, x db.Ext, tenantID string, as []Handover) error
}

// Handover is one lead given to an owner: by a rule when the lead was
// created (Cause "new"), or later (Cause the change's own id).
type Handover struct {
	LeadID, OwnerID, Rule, Cause string
}

// CauseNew is the cause of a new lead's assignment by a rule: a lead is
// created once, so its key is unique.
const CauseNew = "new"

// notifyAssigned tells the notifier about the created leads the outcomes
// gave an owner.
func (s *Service) notifyAssigned(ctx context.Context, x db.Ext, tenantID string, outcomes []UpsertOutcome) error {
	if s.notify == nil {
		return nil
	}
	var as []Handover
	for _, o := range outcomes {
		if o.Kind == OutcomeCreated && o.OwnerID != "" {
			as = append(as, Handover{LeadID: o.LeadID, OwnerID: o.OwnerID, Rule: o.Rule, Cause: CauseNew})
		}
	}
	if len(as) == 0 {
		return nil
	}
	return s.notify.Assigned(ctx, x, tenantID, as)
}

// Messages read leads at send time (an erased lead is gone, so nobody is
// mailed about it).

// agendaLimit bounds each list of a digest.
const agendaLimit = 50

// Agenda is a user's daily digest: their open leads with a follow-up due
// before before (next step due date), and their leads whose first
// response is overdue at now.
func (s *Service) Agenda(ctx context.Context, tenantID, userID string, before, now time.Time) (due, overdue []Lead, err error) {
	if err = s.DB.SelectContext(ctx, &due, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND owner_id = ?
		AND due_at < ? AND status NOT IN ('won', 'lost', 'unqualified', '`+StatusMerged+`') ORDER BY due_at, id LIMIT ?`,
		tenantID, userID, before.UTC(), agendaLimit); err != nil {
		return nil, nil, err
	}
	err = s.DB.SelectContext(ctx, &overdue, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND owner_id = ?
		AND first_responded_at IS NULL AND first_response_due_at < ? AND status <> '`+StatusMerged+`'
		ORDER BY first_response_due_at, id LIMIT ?`, tenantID, userID, now.UTC(), agendaLimit)
	return due, overdue, err
}

// OverdueSince returns up to limit of the tenant's leads whose first
// response fell overdue in [from, now), oldest due first (ix_leads_sla).
func (s *Service) OverdueSince(ctx context.Context, tenantID string, from, now time.Time, limit int) ([]Lead, error) {
	var out []Lead
	err := s.DB.SelectContext(ctx, &out, `SELECT `+LeadCols+` FROM leads FORCE INDEX (ix_leads_sla) WHERE tenant_id = ?
		AND first_responded_at IS NULL AND first_response_due_at >= ? AND first_response_due_at < ? AND status <> '`+StatusMerged+`'
		ORDER BY first_response_due_at, id LIMIT ?`, tenantID, from.UTC(), now.UTC(), limit)
	return out, err
}
