package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/monitor"
	"leadpipe/views/alerts"
	"leadpipe/views/components"
	monviews "leadpipe/views/monitor"
)

// openAlerts is the admin banner's count; a failure only hides the banner.
func (s *Server) openAlerts(ctx context.Context, tenantID string) int {
	if s.Monitor == nil {
		return 0
	}
	n, err := s.Monitor.OpenAlertCount(ctx, tenantID)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.WarnContext(ctx, "open alert count", "err", err)
		}
		return 0
	}
	return n
}

// monitorOff answers the monitoring pages while no monitor is wired.
func (s *Server) monitorOff(w http.ResponseWriter, r *http.Request) bool {
	if s.Monitor != nil {
		return false
	}
	s.uiNotFound(w, r)
	return true
}

func (s *Server) uiMonitor(w http.ResponseWriter, r *http.Request) {
	if s.monitorOff(w, r) {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	now := time.Now()
	ov, err := s.Monitor.Overview(ctx, sess.Tenant.ID, now)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := monviews.OverviewView{Now: now}
	for _, o := range ov {
		trend := o.Sparkline
		if allZero(o.SparkVolume) {
			trend = nil // no deliveries in 24 h: an empty sparkline, not a flat 0%
		}
		v.Rows = append(v.Rows, monviews.SourceRow{ID: o.SourceID, Name: o.Name, Kind: o.Kind, Trend: trend,
			Deliveries: o.Deliveries, Duplicates: o.Duplicates, Rejected: o.Rejected, DeadLetter: o.DeadLetters,
			Rate: o.Rate, BaselineRate: o.BaselineRate, Threshold: o.Threshold, OpenAlerts: o.OpenAlerts})
		v.Deliveries += o.Deliveries
		v.Duplicates += o.Duplicates
		v.OpenAlerts += o.OpenAlerts
	}
	v.Page = s.page(w, r, "Monitoring", "monitor")
	s.render(w, r, http.StatusOK, monviews.Overview(v))
}

func allZero(xs []int64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

func (s *Server) uiMonitorSource(w http.ResponseWriter, r *http.Request) {
	if s.monitorOff(w, r) {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	src, err := s.Sources.Get(ctx, sess.Tenant.ID, chi.URLParam(r, "id"))
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	rng := r.URL.Query().Get("range")
	now := time.Now().UTC()
	from, to, step, ok := monitor.ChartRange(rng, now)
	if !ok {
		rng = "24h"
		from, to, step, _ = monitor.ChartRange(rng, now)
	}
	buckets, err := s.Monitor.Stats(ctx, sess.Tenant.ID, src.ID, from, to, step)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	rules, err := s.Monitor.Rules(ctx, sess.Tenant.ID, src.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := monviews.SourceView{ID: src.ID, Name: src.Name, Kind: src.Kind, Range: rng, Now: now, Rules: ruleSentences(rules)}
	v.Chart = components.ChartData{Title: src.Name + " — last " + rangeWords(rng), Step: step, From: from, To: to}
	for _, b := range buckets {
		v.Chart.Points = append(v.Chart.Points, components.ChartPoint{T: b.T, Rate: b.DuplicateRate, Volume: b.Deliveries, Duplicates: b.Duplicates})
		v.Deliveries += b.Deliveries
		v.Duplicates += b.Duplicates
		v.Rejected += b.Rejected
		v.DeadLetters += b.DeadLetters
		v.ReconcileNew += b.ReconcileNew
	}
	// The spike rule's line for the current baseline, and the windows in
	// which this source's alerts were open.
	if ov, err := s.Monitor.Overview(ctx, sess.Tenant.ID, now); err == nil {
		for _, o := range ov {
			if o.SourceID == src.ID {
				v.Chart.Threshold = o.Threshold
			}
		}
	}
	if list, _, err := s.Monitor.Alerts(ctx, sess.Tenant.ID, monitor.StateAll, "", 200); err == nil {
		for _, a := range list {
			if a.SourceID != src.ID || a.Rule != monitor.RuleDuplicateSpike {
				continue
			}
			tr := components.TimeRange{From: a.FiredAt, Label: "Duplicate-rate spike"}
			if a.ResolvedAt != nil {
				tr.To = *a.ResolvedAt
			}
			v.Chart.Highlight = append(v.Chart.Highlight, tr)
		}
	}
	v.Page = s.page(w, r, src.Name+" monitoring", "monitor")
	s.render(w, r, http.StatusOK, monviews.Source(v))
}

func rangeWords(r string) string {
	switch r {
	case "7d":
		return "7 days"
	case "30d":
		return "30 days"
	}
	return "24 hours"
}

func ruleSentences(r monitor.Rules) []string {
	win := time.Duration(r.WindowSeconds) * time.Second
	base := time.Duration(r.BaselineSeconds) * time.Second
	var out []string
	onOff := func(on bool, s string) string {
		if on {
			return s
		}
		return s + " (off)"
	}
	out = append(out, onOff(r.SpikeEnabled, fmt.Sprintf("Duplicate-rate spike: over %s, more than %g× the rate of the previous %s and at least %g points above it, with %d or more deliveries.",
		durWords(win), r.SpikeFactor, durWords(base), r.SpikeMinPoints*100, r.SpikeMinDeliveries)))
	out = append(out, onOff(r.RejectionsEnabled, fmt.Sprintf("Signature rejections: %d or more over %s and more than %g× the usual.", r.RejectionsMin, durWords(win), r.RejectionsFactor)))
	out = append(out, onOff(r.DeadLettersEnabled, fmt.Sprintf("Dead letters: %d or more over %s.", r.DeadLettersMin, durWords(win))))
	out = append(out, onOff(r.LossEnabled, fmt.Sprintf("Webhook loss: reconcile finds %d or more leads the webhooks never brought, over %s.", r.LossMin, durWords(win))))
	if r.Default {
		out = append(out, "These are the defaults; change them with PUT /api/v1/sources/{id}/alert-rules.")
	}
	return out
}

func durWords(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		if d == 24*time.Hour {
			return "24 hours"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d%time.Hour == 0:
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return fmt.Sprintf("%d minutes", d/time.Minute)
}

func (s *Server) uiAlerts(w http.ResponseWriter, r *http.Request) {
	if s.monitorOff(w, r) {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	state := r.URL.Query().Get("state")
	if state != monitor.StateResolved && state != monitor.StateAll {
		state = monitor.StateOpen
	}
	list, next, err := s.Monitor.Alerts(ctx, sess.Tenant.ID, state, r.URL.Query().Get("cursor"), 50)
	if apperr.Is(err, apperr.Invalid) { // a stale cursor: start over
		list, next, err = s.Monitor.Alerts(ctx, sess.Tenant.ID, state, "", 50)
	}
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	dir, err := s.loadDirectory(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := alerts.ListView{State: state, Now: time.Now()}
	for _, a := range list {
		row := alerts.Alert{ID: a.ID, Rule: a.Rule, SourceID: a.SourceID, SourceName: dir.sources[a.SourceID],
			State: a.State, Summary: a.Summary(), FiredAt: a.FiredAt}
		if row.SourceName == "" {
			row.SourceName = "a deleted source"
		}
		if a.ResolvedAt != nil {
			row.ResolvedAt = *a.ResolvedAt
		}
		if a.AcknowledgedAt != nil {
			row.AckedAt = *a.AcknowledgedAt
		}
		if a.AcknowledgedBy != nil {
			row.AckedBy = dir.userName(*a.AcknowledgedBy)
		}
		v.Alerts = append(v.Alerts, row)
	}
	if next != "" {
		v.NextHref = "/alerts?state=" + state + "&cursor=" + next
	}
	v.Page = s.page(w, r, "Alerts", "alerts")
	s.render(w, r, http.StatusOK, alerts.List(v))
}

func (s *Server) uiAckAlert(w http.ResponseWriter, r *http.Request) {
	if s.monitorOff(w, r) {
		return
	}
	if err := parseForm(w, r); err != nil {
		s.uiError(w, r, err)
		return
	}
	sess := sessionFrom(r.Context())
	if _, err := s.Monitor.Ack(r.Context(), sess.Tenant.ID, chi.URLParam(r, "id"), sess.User.ID); err != nil {
		s.uiError(w, r, err)
		return
	}
	state := r.PostFormValue("state")
	if state != monitor.StateResolved && state != monitor.StateAll {
		state = monitor.StateOpen
	}
	s.setFlash(w, r, "Alert acknowledged. It stays open until the source is back to normal.")
	seeOther(w, r, "/alerts?state="+state)
}
