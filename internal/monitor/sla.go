package monitor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
)

// RuleSLABreach fires when a tenant's leads wait too long for their first
// response (docs/ARCHITECTURE.md, "Assignment and first response"). It is about the tenant, not a source: its
// alerts have an empty source_id (one open per tenant).
const RuleSLABreach = "sla_breach"

// FirstResponses is what the sla_breach rule asks the leads area (which
// owns the leads table): how many unanswered leads were due before a time.
// *leads.Service implements it; internal/app wires it.
type FirstResponses interface {
	OverdueCount(ctx context.Context, tenantID string, dueBefore time.Time) (leads.Overdue, error)
}

// NoFirstResponses is the FirstResponses of a monitor that counts no leads
// (tests of the per-source rules): nothing is ever overdue.
type NoFirstResponses struct{}

// OverdueCount answers that no lead is overdue.
func (NoFirstResponses) OverdueCount(context.Context, string, time.Time) (leads.Overdue, error) {
	return leads.Overdue{}, nil
}

// SLARules are a tenant's sla_breach settings: the rule fires when at least
// MinOverdue leads have been overdue for their first response for
// ForSeconds or more, and resolves as soon as fewer are (a person answered,
// or the lead got a new owner and clock).
type SLARules struct {
	Enabled    bool       `json:"enabled"`
	MinOverdue int        `json:"min_overdue"`
	ForSeconds int        `json:"for_seconds"`
	Default    bool       `json:"default"` // true when nothing was saved for the tenant
	UpdatedAt  *time.Time `json:"updated_at"`
	UpdatedBy  *string    `json:"updated_by"`
}

// DefaultSLARules: on, one lead overdue for 30 minutes (docs/ARCHITECTURE.md, "Assignment and first response").
func DefaultSLARules() SLARules {
	return SLARules{Enabled: true, MinOverdue: 1, ForSeconds: 1800, Default: true}
}

// Validate returns the offending fields (nil when valid).
func (r SLARules) Validate() map[string]string {
	f := map[string]string{}
	if r.MinOverdue < 1 || r.MinOverdue > 1_000_000 {
		f["min_overdue"] = "must be between 1 and 1000000"
	}
	if r.ForSeconds < 0 || r.ForSeconds > 7*86400 || r.ForSeconds%60 != 0 {
		f["for_seconds"] = "must be a whole number of minutes between 0 and 604800"
	}
	if len(f) == 0 {
		return nil
	}
	return f
}

// Sentence describes the rule in words (the monitor page).
func (r SLARules) Sentence() string {
	s := fmt.Sprintf("First response overdue: %s overdue for %s or more.", count(int64(r.MinOverdue), "lead", "leads"),
		human(time.Duration(r.ForSeconds)*time.Second))
	if r.ForSeconds == 0 {
		s = fmt.Sprintf("First response overdue: %s overdue.", count(int64(r.MinOverdue), "lead", "leads"))
	}
	if !r.Enabled {
		s += " (off)"
	}
	return s
}

// SLARules returns the tenant's sla_breach settings (the defaults when
// none were saved).
func (s *Service) SLARules(ctx context.Context, tenantID string) (SLARules, error) {
	return getSLARules(ctx, s.DB, tenantID)
}

// SetSLARules validates and saves the tenant's sla_breach settings; by
// names who (user or token). A change is recorded in the audit log
// (alert_rule.changed, old and new values) in the same transaction.
func (s *Service) SetSLARules(ctx context.Context, tenantID string, r SLARules, by string) (SLARules, error) {
	if f := r.Validate(); f != nil {
		return SLARules{}, apperr.InvalidFields(f)
	}
	at := s.now().Truncate(time.Microsecond)
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		old, err := getSLARules(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO alert_tenant_rules (tenant_id, sla_enabled, sla_min_overdue, sla_for_s, updated_at, updated_by)
VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE sla_enabled = VALUES(sla_enabled), sla_min_overdue = VALUES(sla_min_overdue),
 sla_for_s = VALUES(sla_for_s), updated_at = VALUES(updated_at), updated_by = VALUES(updated_by)`,
			tenantID, r.Enabled, r.MinOverdue, r.ForSeconds, at, nullString(by)); err != nil {
			return err
		}
		return recordSLAChange(ctx, tx, tenantID, old, r)
	})
	if err != nil {
		return SLARules{}, err
	}
	return getSLARules(ctx, s.DB, tenantID)
}

// ResetSLARules forgets the tenant's saved settings (back to the
// defaults), recorded in the audit log when something was saved.
func (s *Service) ResetSLARules(ctx context.Context, tenantID string) (SLARules, error) {
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		old, err := getSLARules(ctx, tx, tenantID)
		if err != nil || old.Default {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM alert_tenant_rules WHERE tenant_id = ?`, tenantID); err != nil {
			return err
		}
		return recordSLAChange(ctx, tx, tenantID, old, DefaultSLARules())
	})
	if err != nil {
		return SLARules{}, err
	}
	return DefaultSLARules(), nil
}

func recordSLAChange(ctx context.Context, x db.Ext, tenantID string, old, next SLARules) error {
	type values struct {
		Enabled    bool `json:"enabled"`
		MinOverdue int  `json:"min_overdue"`
		ForSeconds int  `json:"for_seconds"`
	}
	o, n := values{old.Enabled, old.MinOverdue, old.ForSeconds}, values{next.Enabled, next.MinOverdue, next.ForSeconds}
	if o == n {
		return nil // nothing changed: no audit row
	}
	return audit.Record(ctx, x, tenantID, audit.Entry{Action: "alert_rule.changed", TargetType: "alert_rule", TargetID: RuleSLABreach,
		Detail: map[string]any{"old": o, "new": n}})
}

func getSLARules(ctx context.Context, x db.Ext, tenantID string) (SLARules, error) {
	var row struct {
		Enabled    bool      `db:"sla_enabled"`
		MinOverdue int       `db:"sla_min_overdue"`
		ForS       int       `db:"sla_for_s"`
		UpdatedAt  time.Time `db:"updated_at"`
		UpdatedBy  *string   `db:"updated_by"`
	}
	err := x.GetContext(ctx, &row, `SELECT sla_enabled, sla_min_overdue, sla_for_s, updated_at, updated_by FROM alert_tenant_rules WHERE tenant_id = ?`, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return DefaultSLARules(), nil
	}
	if err != nil {
		return SLARules{}, err
	}
	at := row.UpdatedAt
	return SLARules{Enabled: row.Enabled, MinOverdue: row.MinOverdue, ForSeconds: row.ForS, UpdatedAt: &at, UpdatedBy: row.UpdatedBy}, nil
}

// checkSLA is the sla_breach rule's decision on the overdue count.
func (r SLARules) checkSLA(od leads.Overdue) (bool, map[string]any) {
	fire := r.Enabled && od.Count >= int64(r.MinOverdue)
	d := map[string]any{"overdue": od.Count, "threshold": r.MinOverdue, "for_seconds": r.ForSeconds}
	if od.OldestDue != nil {
		d["oldest_due_at"] = od.OldestDue.UTC().Format(time.RFC3339)
	}
	what := count(od.Count, "lead waits", "leads wait")
	if r.ForSeconds > 0 {
		d["summary"] = fmt.Sprintf("%s for a first response %s or more past due", what, human(time.Duration(r.ForSeconds)*time.Second))
	} else {
		d["summary"] = fmt.Sprintf("%s for a first response past due", what)
	}
	return fire, d
}

// evaluateSLA checks the tenant's sla_breach rule at now: it fires once
// when enough leads are overdue and resolves at the first evaluation that
// finds fewer.
func (s *Service) evaluateSLA(ctx context.Context, tenantID string, now time.Time, open map[openKey]Alert) error {
	r, err := getSLARules(ctx, s.DB, tenantID)
	if err != nil {
		return err
	}
	a, isOpen := open[openKey{"", RuleSLABreach}]
	if !r.Enabled && !isOpen {
		return nil // off: not even a count
	}
	if s.leads == nil {
		return errors.New("sla_breach: the monitor was built without a count of overdue leads")
	}
	od, err := s.leads.OverdueCount(ctx, tenantID, now.Add(-time.Duration(r.ForSeconds)*time.Second))
	if err != nil {
		return err
	}
	fire, detail := r.checkSLA(od)
	switch {
	case fire && !isOpen:
		return s.fire(ctx, tenantID, "", RuleSLABreach, now, detail)
	case fire && isOpen:
		return s.stillFiring(ctx, a, RuleSLABreach, detail)
	case !fire && isOpen:
		return s.resolve(ctx, a, now, detail)
	}
	return nil
}
