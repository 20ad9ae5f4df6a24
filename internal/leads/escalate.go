package leads

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/tenants"
)

// Escalation (docs/ARCHITECTURE.md): a rule's "after N minutes overdue,
// reassign to the next member or a named user", run by a periodic task
// (TypeEscalate) for every tenant. Each lead is escalated once: the
// UPDATE that changes its owner holds on escalated_at IS NULL (and on the
// owner and the missing first response it read), so of two workers
// sweeping at once exactly one changes it, and only that one writes the
// timeline entry, lead.updated and the new owner's notification, in the
// same transaction.

// TypeEscalate is the periodic escalation sweep over every tenant.
const TypeEscalate = "leads:escalate"

// EventEscalated is the timeline entry of an escalation.
const EventEscalated = "escalated"

// CauseEscalated is the notification cause of an escalation: once per lead.
const CauseEscalated = "escalated"

// escalateLookback bounds how long after its due time an unanswered lead
// is still escalated (a sweep missed for a while catches up; older leads
// are for people to sort out).
const escalateLookback = 7 * 24 * time.Hour

// escalateBatch bounds the leads one rule escalates per sweep.
const escalateBatch = 500

// HandleEscalate runs Escalate for each tenant tenantIDs lists.
func (s *Service) HandleEscalate(tenantIDs func(context.Context) ([]string, error)) func(context.Context, *asynq.Task) error {
	return func(ctx context.Context, _ *asynq.Task) error {
		ts, err := tenantIDs(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if _, err := s.Escalate(ctx, t); err != nil {
				return fmt.Errorf("escalate tenant %s: %w", t, err)
			}
		}
		return nil
	}
}

// escalation is one lead a sweep reassigned.
type escalation struct {
	lead     Lead
	from, to string
}

// Escalate reassigns the tenant's leads whose first response is overdue
// by their rule's escalate.after_minutes (the rule that assigned the
// lead, by id, or by name for a lead assigned before the rules were last
// saved), and returns how many it reassigned. A lead whose rule finds
// nobody to hand it to (everyone else away or disabled) is tried again at
// the next sweep.
func (s *Service) Escalate(ctx context.Context, tenantID string) (int, error) {
	rules, err := assignmentRules(ctx, s.DB, tenantID)
	if err != nil {
		return 0, err
	}
	now := s.now()
	done := map[string]bool{}
	n := 0
	for _, r := range rules {
		e := r.Escalate
		if e == nil {
			continue
		}
		cutoff := now.Add(-time.Duration(e.AfterMinutes) * time.Minute)
		var cands []struct {
			ID    string  `db:"id"`
			Owner *string `db:"owner_id"`
		}
		if err := s.DB.SelectContext(ctx, &cands, `SELECT id, owner_id FROM leads FORCE INDEX (ix_leads_sla)
			WHERE tenant_id = ? AND first_responded_at IS NULL AND first_response_due_at >= ? AND first_response_due_at < ?
			AND escalated_at IS NULL AND status <> '`+StatusMerged+`' AND (assigned_rule_id = ? OR assigned_rule_name = ?)
			ORDER BY first_response_due_at, id LIMIT ?`,
			tenantID, cutoff.Add(-escalateLookback).UTC(), cutoff.UTC(), r.ID, r.Name, escalateBatch); err != nil {
			return n, err
		}
		if len(cands) == 0 {
			continue
		}
		users, err := activeUsers(ctx, s.DB, tenantID, append(slices.Clone(r.Members), e.To))
		if err != nil {
			return n, err
		}
		for _, c := range cands {
			if done[c.ID] {
				continue
			}
			done[c.ID] = true
			from := ""
			if c.Owner != nil {
				from = *c.Owner
			}
			to := escalationTarget(r, from, users, now)
			if to == "" || to == from {
				continue
			}
			var got *escalation
			err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
				got = nil
				g, err := s.escalateOne(ctx, tx, tenantID, c.ID, from, to, r, users, now)
				got = g
				return err
			})
			if err != nil {
				return n, err
			}
			if got != nil {
				n++
				s.announce(tenantID, ChangeReassigned, got.lead, tenants.Principal{})
			}
		}
	}
	return n, nil
}

// escalationTarget is whom the rule escalates a lead of from to: the
// named user (if not disabled), or the first member after from in the
// rule's order who is neither disabled nor away (from not a member: the
// first such member). "" is nobody.
func escalationTarget(r ruleRow, from string, users map[string]userState, now time.Time) string {
	e := r.Escalate
	if e.To != EscalateNextMember {
		if u, ok := users[e.To]; ok && !u.disabled {
			return e.To
		}
		return ""
	}
	ms := r.Members
	i := slices.Index(ms, from)
	for k := 1; k <= len(ms); k++ {
		m := ms[(i+k+len(ms))%len(ms)]
		if i < 0 {
			m = ms[k-1]
		}
		if u, ok := users[m]; ok && !u.disabled && !u.away(now) && m != from {
			return m
		}
	}
	return ""
}

// escalateOne hands one lead from from to to, if it is still unanswered,
// not escalated and from's: nil when another sweep (or a person) got
// there first.
func (s *Service) escalateOne(ctx context.Context, tx *sqlx.Tx, tenantID, leadID, from, to string, r ruleRow, users map[string]userState, now time.Time) (*escalation, error) {
	var fromArg any
	if from != "" {
		fromArg = from
	}
	res, err := tx.ExecContext(ctx, `UPDATE leads SET owner_id = ?, escalated_at = ?, version = version + 1, updated_at = ?
		WHERE tenant_id = ? AND id = ? AND escalated_at IS NULL AND first_responded_at IS NULL AND owner_id <=> ?`,
		to, now, now, tenantID, leadID, fromArg)
	if err != nil {
		return nil, err
	}
	if k, err := res.RowsAffected(); err != nil || k != 1 {
		return nil, err
	}
	toName, fromName := nameOr(users[to].name, "a former user"), nameOr(users[from].name, "nobody")
	detail := map[string]any{"from": fromArg, "from_name": fromName, "to": to, "to_name": toName, "rule_id": r.ID, "rule_name": r.Name,
		"after_minutes": r.Escalate.AfterMinutes,
		"message":       fmt.Sprintf("escalated to %s by rule %s (no first reply %d minutes after it was due)", toName, r.Name, r.Escalate.AfterMinutes)}
	if err := AddEvent(ctx, tx, tenantID, leadID, EventEscalated, "", "rule "+r.Name, detail, now); err != nil {
		return nil, err
	}
	if s.notify != nil {
		if err := s.notify.Assigned(ctx, tx, tenantID, []Handover{{LeadID: leadID, OwnerID: to, Rule: r.Name, Cause: CauseEscalated}}); err != nil {
			return nil, err
		}
	}
	l, err := Get(ctx, tx, tenantID, leadID)
	if err != nil {
		return nil, err
	}
	if err := s.emitter(tx, tenantID).emit(ctx, OutboundUpdated, l); err != nil {
		return nil, err
	}
	return &escalation{lead: l, from: from, to: to}, nil
}
