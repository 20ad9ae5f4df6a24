package web

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/tenants"
	"leadpipe/views/components"
	monviews "leadpipe/views/monitor"
)

// firstResponseView builds the monitor page's first-response section:
// the median time to first response per day of the last 14 or 30 days
// (?fr_days=) in the reader's zone, per owner, and the sla_breach rule;
// form is a rejected rule form to show again (nil: the saved rule).
func (s *Server) firstResponseView(ctx context.Context, tenantID string, user tenants.User, q url.Values, now time.Time, form *monviews.RulesForm) (*monviews.FirstResponseView, error) {
	days := 30
	if q.Get("fr_days") == "14" {
		days = 14
	}
	loc := user.Location()
	st, err := s.Leads.ResponseStats(ctx, tenantID, days, loc, now)
	if err != nil {
		return nil, err
	}
	asg, err := s.Leads.Assignment(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	rule, err := s.Monitor.SLARules(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	dir, err := s.loadDirectory(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	v := &monviews.FirstResponseView{Days: days, Responded: st.Responded, Median: st.Median, Overdue: st.Overdue,
		Rule: rule.Sentence(), ZoneName: loc.String()}
	if rule.Default {
		v.Rule += " These are the defaults."
	}
	if form != nil {
		v.Form = *form
	} else {
		v.Form = slaFormOf(rule)
	}
	v.Chart = components.DurationChartData{Title: "Median time to first response per day", What: "first response",
		Target: time.Duration(asg.FirstResponseMinutes) * time.Minute}
	for _, d := range st.Days {
		v.Chart.Days = append(v.Chart.Days, components.DayDuration{Day: d.Day, Median: d.Median, Count: d.Responded})
	}
	for _, o := range st.Owners {
		row := monviews.OwnerRow{ID: o.OwnerID, Responded: o.Responded, Median: o.Median, Overdue: o.Overdue}
		switch {
		case o.OwnerID == "":
			row.Name, row.Href = "No owner", "/leads?owner="+leads.OwnerNone
		default:
			row.Name, row.Href = cmp.Or(dir.userName(o.OwnerID), "a removed user"), "/leads?owner="+url.QueryEscape(o.OwnerID)
		}
		v.Owners = append(v.Owners, row)
	}
	// The most overdue first, then the slowest.
	slices.SortStableFunc(v.Owners, func(a, b monviews.OwnerRow) int {
		if c := cmp.Compare(b.Overdue, a.Overdue); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Median, a.Median); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if open, _, err := s.Monitor.Alerts(ctx, tenantID, monitor.StateOpen, "", 200); err == nil {
		for _, a := range open {
			if a.Rule == monitor.RuleSLABreach {
				v.Alerting = true
			}
		}
	}
	return v, nil
}

func slaFormOf(r monitor.SLARules) monviews.RulesForm {
	return monviews.RulesForm{Values: map[string]string{
		"sla_min_overdue": strconv.Itoa(r.MinOverdue),
		"sla_for_minutes": strconv.Itoa(r.ForSeconds / 60),
	}, On: map[string]bool{"sla": r.Enabled}, Errors: map[string]string{}, Default: r.Default}
}

// uiSaveSLARule saves the sla_breach rule from the monitor page.
func (s *Server) uiSaveSLARule(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	if r.PostFormValue("reset") != "" {
		if _, err := s.Monitor.ResetSLARules(ctx, sess.Tenant.ID); err != nil {
			s.uiError(w, r, err)
			return
		}
		s.setFlash(w, r, "First-response alert reset to the defaults.")
		seeOther(w, r, "/monitor#sla-rule")
		return
	}
	cur, err := s.Monitor.SLARules(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	form := monviews.RulesForm{Values: map[string]string{}, On: map[string]bool{"sla": r.PostFormValue("sla_enabled") != ""}, Errors: map[string]string{}}
	whole := func(k string) int {
		form.Values[k] = strings.TrimSpace(r.PostFormValue(k))
		n, err := strconv.Atoi(strings.ReplaceAll(form.Values[k], ",", ""))
		if err != nil {
			form.Errors[k] = "Enter a whole number."
		}
		return n
	}
	next := cur
	next.Enabled = form.On["sla"]
	next.MinOverdue = whole("sla_min_overdue")
	next.ForSeconds = whole("sla_for_minutes") * 60
	if len(form.Errors) == 0 {
		if _, err = s.Monitor.SetSLARules(ctx, sess.Tenant.ID, next, sess.User.ID); err == nil {
			s.setFlash(w, r, "First-response alert saved. It applies from the next evaluation (within a minute).")
			seeOther(w, r, "/monitor#sla-rule")
			return
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid {
			s.uiError(w, r, err)
			return
		}
		if _, ok := ae.Fields["min_overdue"]; ok {
			form.Errors["sla_min_overdue"] = "At least 1."
		}
		if _, ok := ae.Fields["for_seconds"]; ok {
			form.Errors["sla_for_minutes"] = "Between 0 and 10,080 minutes."
		}
	}
	s.renderMonitor(w, r, http.StatusUnprocessableEntity, &form)
}
