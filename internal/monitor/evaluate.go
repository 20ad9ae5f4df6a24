package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// windowSums returns, per source, the counters of its rules' window (the
// complete minutes before now) and of the baseline before that window.
func (s *Service) windowSums(ctx context.Context, tenantID string, ids []string, rules map[string]Rules, now time.Time) (win, base map[string]counts, err error) {
	end := now.UTC().Truncate(time.Minute)
	type span struct{ w, b int }
	groups := map[span][]string{}
	for _, id := range ids {
		r, ok := rules[id]
		if !ok {
			r = DefaultRules(id)
		}
		sp := span{r.WindowSeconds, r.BaselineSeconds}
		groups[sp] = append(groups[sp], id)
	}
	win, base = map[string]counts{}, map[string]counts{}
	for sp, group := range groups { // usually one group: everyone on the defaults
		w, b := time.Duration(sp.w)*time.Second, time.Duration(sp.b)*time.Second
		ws, err := sumRange(ctx, s.DB, tenantID, group, end.Add(-w), end)
		if err != nil {
			return nil, nil, err
		}
		bs, err := sumRange(ctx, s.DB, tenantID, group, end.Add(-w-b), end.Add(-w))
		if err != nil {
			return nil, nil, err
		}
		for k, v := range ws {
			win[k] = v
		}
		for k, v := range bs {
			base[k] = v
		}
	}
	return win, base, nil
}

// silenceSums returns, per source, the deliveries of the last hour (the
// complete minutes before now) and the usual deliveries of that hour of
// the week: the same hour in each of the SilenceWeeks weeks before,
// averaged.
func (s *Service) silenceSums(ctx context.Context, tenantID string, ids []string, now time.Time) (last map[string]int64, usual map[string]float64, err error) {
	end := now.UTC().Truncate(time.Minute)
	cur, err := sumRange(ctx, s.DB, tenantID, ids, end.Add(-time.Hour), end)
	if err != nil {
		return nil, nil, err
	}
	last, usual = make(map[string]int64, len(cur)), map[string]float64{}
	for id, c := range cur {
		last[id] = c[iDeliveries]
	}
	const week = 7 * 24 * time.Hour
	for k := 1; k <= SilenceWeeks; k++ {
		e := end.Add(-time.Duration(k) * week)
		past, err := sumRange(ctx, s.DB, tenantID, ids, e.Add(-time.Hour), e)
		if err != nil {
			return nil, nil, err
		}
		for id, c := range past {
			usual[id] += float64(c[iDeliveries]) / SilenceWeeks
		}
	}
	return last, usual, nil
}

// Evaluate checks every rule of every source of every tenant at now: an
// alert fires once when its condition becomes true (the unique open key
// makes a second evaluator's insert fail harmlessly), and resolves by
// itself once the condition has been false for a whole window. Firing and
// resolving are recorded as alert_events in the same transaction.
func (s *Service) Evaluate(ctx context.Context, now time.Time) error {
	var errs []error
	err := s.Tenants.ForEach(ctx, func(tenantID string) error {
		if err := s.EvaluateTenant(ctx, tenantID, now); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", tenantID, err)) // one tenant's failure does not stop the others
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

type openKey struct{ source, rule string }

// EvaluateTenant is Evaluate for one tenant: the tenant's own rules
// (sla_breach), then its sources'.
func (s *Service) EvaluateTenant(ctx context.Context, tenantID string, now time.Time) error {
	now = now.UTC().Truncate(time.Microsecond)
	openList, err := listOpenAlerts(ctx, s.DB, tenantID)
	if err != nil {
		return err
	}
	open := make(map[openKey]Alert, len(openList))
	for _, a := range openList {
		open[openKey{a.SourceID, a.Rule}] = a
	}
	var slaErr error
	if err := s.evaluateSLA(ctx, tenantID, now, open); err != nil {
		slaErr = fmt.Errorf("%s: %w", RuleSLABreach, err)
	}
	return errors.Join(slaErr, s.evaluateSources(ctx, tenantID, now, open))
}

// evaluateSources checks every rule of every source of the tenant.
func (s *Service) evaluateSources(ctx context.Context, tenantID string, now time.Time, open map[openKey]Alert) error {
	srcs, err := s.Sources.List(ctx, tenantID)
	if err != nil || len(srcs) == 0 {
		return err
	}
	ids := make([]string, len(srcs))
	for i, src := range srcs {
		ids[i] = src.ID
	}
	rules, err := listRules(ctx, s.DB, tenantID)
	if err != nil {
		return err
	}
	win, base, err := s.windowSums(ctx, tenantID, ids, rules, now)
	if err != nil {
		return err
	}
	last, usual, err := s.silenceSums(ctx, tenantID, ids, now)
	if err != nil {
		return err
	}
	end := now.Truncate(time.Minute)
	var errs []error
	for _, id := range ids {
		r, ok := rules[id]
		if !ok {
			r = DefaultRules(id)
		}
		for _, rule := range RuleNames {
			fire, detail := r.check(rule, win[id], base[id])
			if rule == RuleSilence {
				fire, detail = r.checkSilence(last[id], usual[id])
			}
			a, isOpen := open[openKey{id, rule}]
			var err error
			switch {
			case rule == RuleSilence && !fire && isOpen:
				// The last hour already smooths the volume: deliveries
				// coming back resolve it at once.
				err = s.resolve(ctx, a, now, detail)
			case fire && !isOpen:
				err = s.fire(ctx, tenantID, id, rule, now, detail)
			case fire && isOpen:
				err = s.stillFiring(ctx, a, rule, detail)
			case !fire && isOpen && a.ClearSince == nil:
				err = setClearSince(ctx, s.DB, tenantID, a.ID, &end)
			case !fire && isOpen && !end.Before(a.ClearSince.Add(r.Window())):
				err = s.resolve(ctx, a, now, detail)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s on %s: %w", rule, id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// alertDetail is what an alert stores: the values when it fired, and the
// worst values seen while it was open.
type alertDetail map[string]any

// severity orders details of one rule (higher is worse).
func severity(rule string, d map[string]any) float64 {
	key := map[string]string{RuleDuplicateSpike: "rate", RuleSignatureRejections: "rejected",
		RuleDeadLetters: "dead_letters", RuleWebhookLoss: "reconcile_new",
		RuleProcessingFailures: "processing_failures", RuleSLABreach: "overdue", RuleSilence: "missing"}[rule]
	switch v := d[key].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case int:
		return float64(v)
	}
	return 0
}

func (s *Service) fire(ctx context.Context, tenantID, sourceID, rule string, now time.Time, detail map[string]any) error {
	d := alertDetail{}
	for k, v := range detail {
		d[k] = v
	}
	d["peak"] = detail
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	a := Alert{TenantID: tenantID, ID: ids.New(), SourceID: sourceID, Rule: rule, State: StateOpen, FiredAt: now, Detail: b}
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		return s.insertFired(ctx, tx, a)
	})
	if db.IsDuplicate(err) {
		return nil // another evaluator fired it first
	}
	if err == nil {
		s.Log.Info("alert fired", "tenant_id", tenantID, "source_id", sourceID, "rule", rule, "alert_id", a.ID, "summary", detail["summary"])
	}
	return err
}

// stillFiring clears a pending resolution and records a new peak.
func (s *Service) stillFiring(ctx context.Context, a Alert, rule string, detail map[string]any) error {
	var d map[string]any
	if err := json.Unmarshal(a.Detail, &d); err != nil || d == nil {
		d = map[string]any{}
	}
	peak, _ := d["peak"].(map[string]any)
	if peak != nil && severity(rule, detail) <= severity(rule, peak) {
		if a.ClearSince != nil {
			return setClearSince(ctx, s.DB, a.TenantID, a.ID, nil)
		}
		return nil
	}
	d["peak"] = detail
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return setDetail(ctx, s.DB, a.TenantID, a.ID, b)
}

func (s *Service) resolve(ctx context.Context, a Alert, now time.Time, detail map[string]any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	done := false
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		done = false
		ok, err := resolveAlert(ctx, tx, a.TenantID, a.ID, now)
		if err != nil || !ok {
			return err
		}
		done = true
		return insertEvent(ctx, tx, a, EventResolved, now, "", b)
	})
	if err == nil && done {
		s.Log.Info("alert resolved", "tenant_id", a.TenantID, "source_id", a.SourceID, "rule", a.Rule, "alert_id", a.ID)
	}
	return err
}
