package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clock"
	"leadpipe/internal/monitor"
	"leadpipe/views/alerts"
	"leadpipe/views/components"
	monviews "leadpipe/views/monitor"
)

// openAlerts is the admin banner's and the nav badge's count: open alerts
// nobody has acknowledged yet (an acknowledged one stays on /alerts). A
// failure only hides the banner.
func (s *Server) openAlerts(ctx context.Context, tenantID string) int {
	_, n, err := s.Monitor.OpenAlertCounts(ctx, tenantID)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.WarnContext(ctx, "open alert count", "err", err)
		}
		return 0
	}
	return n
}

func (s *Server) uiMonitor(w http.ResponseWriter, r *http.Request) {
	s.renderMonitor(w, r, http.StatusOK, nil)
}

// renderMonitor draws the monitoring overview; slaForm holds a rejected
// first-response rule form to show again (422).
func (s *Server) renderMonitor(w http.ResponseWriter, r *http.Request, status int, slaForm *monviews.RulesForm) {
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
			Rate: o.Rate, BaselineRate: o.BaselineRate, Threshold: o.Threshold, OpenAlerts: o.OpenAlerts,
			Rate24h: weightedRate(o.Sparkline, o.SparkVolume), Has24h: trend != nil, AlertLabels: ruleLabels(o.OpenRules)})
		v.SparkTop = max(v.SparkTop, components.SparkTop(trend))
		v.Deliveries += o.Deliveries
		v.Duplicates += o.Duplicates
		v.OpenAlerts += o.OpenAlerts
	}
	if v.FirstResponse, err = s.firstResponseView(ctx, sess.Tenant.ID, sess.User, r.URL.Query(), now, slaForm); err != nil {
		s.uiError(w, r, err)
		return
	}
	if v.FirstResponse.Alerting {
		v.OpenAlerts++ // the tenant's sla_breach alert is not about a source
	}
	v.Page = s.page(w, r, "Monitoring", "monitor")
	s.render(w, r, status, monviews.Overview(v))
}

// ruleLabels names the rules of a source's open alerts, each once.
func ruleLabels(rules []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rules {
		if !seen[r] && r != monitor.RuleEndpointDisabled {
			seen[r] = true
			out = append(out, alerts.RuleLabel(r))
		}
	}
	return out
}

// weightedRate is the duplicate rate of hourly rates weighted by their
// deliveries: the rate of the whole period.
func weightedRate(rates []float64, volume []int64) float64 {
	var dups float64
	var vol int64
	for i, r := range rates {
		if i < len(volume) {
			dups += r * float64(volume[i])
			vol += volume[i]
		}
	}
	if vol == 0 {
		return 0
	}
	return dups / float64(vol)
}

func allZero(xs []int64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

// alertZoom is the chart window around an alert: an hour of context
// before it fired, through its resolution (or now) plus a quarter hour.
func alertZoom(a monitor.Alert, now time.Time) (from, to time.Time) {
	end := now
	if a.ResolvedAt != nil && a.ResolvedAt.Before(now) {
		end = *a.ResolvedAt
	}
	return a.FiredAt.Add(-time.Hour), end.Add(15 * time.Minute)
}

// chartSteps are the bucket widths a chart may use, at most chartBuckets
// of them to a chart: on a 390 px phone a bar then stays at least 3 px
// wide, and a 10-minute spike is one or more whole bars.
var chartSteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

const chartBuckets = 60

// chartStep picks the finest bucket width that draws span in at most
// chartBuckets buckets.
func chartStep(span time.Duration) time.Duration {
	for _, st := range chartSteps {
		if span/st <= chartBuckets {
			return st
		}
	}
	return chartSteps[len(chartSteps)-1]
}

// chartRange is a named range (1h…30d) at the chart's own resolution:
// the range's span from monitor.ChartRange, in chartStep buckets ending
// with the current one.
func chartRange(name string, now time.Time) (from, to time.Time, step time.Duration, ok bool) {
	from, to, _, ok = monitor.ChartRange(name, now)
	if !ok {
		return
	}
	span := to.Sub(from)
	step = chartStep(span)
	to = now.UTC().Truncate(step).Add(step)
	return to.Add(-span), to, step, true
}

// sourceChart is what the monitoring page of a source shows: a named range
// (1h…30d), or a window zoomed to one alert (?alert=ID).
type sourceChart struct {
	rng      string
	from, to time.Time
	step     time.Duration
	alert    *monitor.Alert
	words    string
}

func (s *Server) sourceChartRange(ctx context.Context, tenantID, sourceID string, q url.Values, now time.Time) sourceChart {
	id := q.Get("alert")
	if id == "" && q.Get("range") == "" {
		id = s.openAlertOf(ctx, tenantID, sourceID) // the page opens on what is wrong now
	}
	if id != "" {
		if a, err := s.Monitor.Alert(ctx, tenantID, id); err == nil && a.SourceID == sourceID {
			from, to := alertZoom(a, now)
			step := chartStep(to.Sub(from))
			from, to = from.Truncate(step), to.Truncate(step).Add(step)
			if to.After(now.Truncate(step).Add(step)) {
				to = now.Truncate(step).Add(step)
			}
			return sourceChart{rng: "alert", from: from, to: to, step: step, alert: &a, words: "the alert of " + components.ExactTime(readerZone(ctx), a.FiredAt)}
		}
	}
	rng := q.Get("range")
	from, to, step, ok := chartRange(rng, now)
	if !ok {
		rng = defaultChartRange
		from, to, step, _ = chartRange(rng, now)
	}
	return sourceChart{rng: rng, from: from, to: to, step: step, words: "last " + rangeWords(rng)}
}

// defaultChartRange is the last hour in minutes: a 10-minute spike is a
// sixth of the chart.
const defaultChartRange = "1h"

// openAlertOf is the newest open alert of a source, "" when none (or on a
// failure, which only loses the zoom).
func (s *Server) openAlertOf(ctx context.Context, tenantID, sourceID string) string {
	list, _, err := s.Monitor.Alerts(ctx, tenantID, monitor.StateOpen, "", 200)
	if err != nil {
		return ""
	}
	for _, a := range list {
		if a.SourceID == sourceID && a.Rule != monitor.RuleEndpointDisabled {
			return a.ID
		}
	}
	return ""
}

func (s *Server) uiMonitorSource(w http.ResponseWriter, r *http.Request) {
	s.renderMonitorSource(w, r, http.StatusOK, nil)
}

// renderMonitorSource draws a source's chart and its alert rules; form
// holds a rejected rules form (422) to show again with its errors.
func (s *Server) renderMonitorSource(w http.ResponseWriter, r *http.Request, status int, form *monviews.RulesForm) {
	src, ok := s.urlSource(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	now := time.Now().UTC()
	c := s.sourceChartRange(ctx, sess.Tenant.ID, src.ID, r.URL.Query(), now)
	buckets, err := s.Monitor.ChartSeries(ctx, sess.Tenant.ID, src.ID, c.from, c.to, c.step)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	rules, err := s.Monitor.Rules(ctx, sess.Tenant.ID, src.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := monviews.SourceView{ID: src.ID, Name: src.Name, Kind: src.Kind, Range: c.rng, Now: now, Rules: ruleSentences(rules)}
	if form != nil {
		v.Form = *form
	} else {
		v.Form = rulesFormOf(rules)
	}
	// The chart draws its times in the reader's zone.
	loc := components.Zone(readerZone(ctx))
	v.Chart = components.ChartData{Title: src.Name + " — " + c.words, Step: c.step, From: c.from.In(loc), To: c.to.In(loc), NoZoom: c.alert != nil}
	for _, b := range buckets {
		v.Chart.Points = append(v.Chart.Points, components.ChartPoint{T: b.T, Rate: b.DuplicateRate, Volume: b.Deliveries, Duplicates: b.Duplicates,
			PeakRate: b.PeakRate, PeakAt: b.PeakAt, Baseline: b.Baseline, Threshold: b.Threshold, HasBaseline: b.HasBaseline})
		v.Deliveries += b.Deliveries
		v.Duplicates += b.Duplicates
		v.Rejected += b.Rejected
		v.DeadLetters += b.DeadLetters
		v.ReconcileNew += b.ReconcileNew
	}
	// The windows in which this source's alerts were open.
	if c.alert != nil {
		a := *c.alert
		v.Alert = &monviews.AlertRef{ID: a.ID, Rule: alerts.RuleLabel(a.Rule), FiredAt: a.FiredAt}
		if a.ResolvedAt != nil {
			v.Alert.ResolvedAt = *a.ResolvedAt
		}
		tr := components.TimeRange{From: a.FiredAt, Label: alerts.RuleLabel(a.Rule)}
		if a.ResolvedAt != nil {
			tr.To = *a.ResolvedAt
		}
		v.Chart.Highlight = append(v.Chart.Highlight, tr)
	}
	if list, _, err := s.Monitor.Alerts(ctx, sess.Tenant.ID, monitor.StateAll, "", 200); err == nil {
		for _, a := range list {
			if a.SourceID != src.ID || a.Rule == monitor.RuleEndpointDisabled || (c.alert != nil && a.ID == c.alert.ID) {
				continue
			}
			tr := components.TimeRange{From: a.FiredAt, Label: alerts.RuleLabel(a.Rule)}
			if a.ResolvedAt != nil {
				tr.To = *a.ResolvedAt
			}
			v.Chart.Highlight = append(v.Chart.Highlight, tr)
		}
	}
	if c.to.Sub(c.from) <= maxDuplicateWindow {
		ds, err := s.Deliveries.DuplicatedBetween(ctx, sess.Tenant.ID, src.ID, c.from, c.to, duplicatesShown)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		if v.DupDeliveries, v.DupRepeats, err = s.Deliveries.DuplicatedSummary(ctx, sess.Tenant.ID, src.ID, c.from, c.to); err != nil {
			s.uiError(w, r, err)
			return
		}
		v.DupWindow = true
		for _, d := range ds {
			row := monviews.DupRow{ID: d.ID, SenderID: d.DeliveryID, ReceivedAt: d.ReceivedAt, Count: d.DupCount}
			if d.DupFirstAt != nil && d.DupLastAt != nil {
				row.FirstAt, row.LastAt = *d.DupFirstAt, *d.DupLastAt
			}
			if d.LeadID != nil {
				row.LeadID = *d.LeadID
			}
			v.Duplicated = append(v.Duplicated, row)
		}
	}
	v.Page = s.page(w, r, src.Name+" monitoring", "monitor")
	s.render(w, r, status, monviews.Source(v))
}

// The chart window's duplicated deliveries are listed for windows up to a
// day (an alert's, 1 h, 6 h, 24 h), the newest 50 of them, with their
// count above (webhooks.Reads.DuplicatedSummary).
const (
	maxDuplicateWindow = 25 * time.Hour
	duplicatesShown    = 50
)

// uiSaveRules saves a source's alert rules from the monitoring page. The
// form starts from the saved rules, so a rule this form does not know
// (added later) keeps its setting.
func (s *Server) uiSaveRules(w http.ResponseWriter, r *http.Request) {
	src, ok := s.postedSource(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess := sessionFrom(ctx)
	cur, err := s.Monitor.Rules(ctx, sess.Tenant.ID, src.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	if r.PostFormValue("reset") != "" {
		if _, err := s.Monitor.ResetRules(ctx, sess.Tenant.ID, src.ID); err != nil {
			s.uiError(w, r, err)
			return
		}
		s.setFlash(w, r, "Alert rules reset to the defaults.")
		seeOther(w, r, "/monitor/sources/"+src.ID+"#rules")
		return
	}
	form := rulesFormFromPost(r.PostForm)
	next, ok := applyRulesForm(&form, cur)
	if ok {
		if _, err = s.Monitor.SetRules(ctx, sess.Tenant.ID, next, sess.User.ID); err == nil {
			s.setFlash(w, r, "Alert rules saved. They apply from the next evaluation (within a minute).")
			seeOther(w, r, "/monitor/sources/"+src.ID+"#rules")
			return
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid {
			s.uiError(w, r, err)
			return
		}
		addRulesErrors(&form, ae.Fields)
	}
	s.renderMonitorSource(w, r, http.StatusUnprocessableEntity, &form)
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
	out = append(out, onOff(r.FailuresEnabled, fmt.Sprintf("Processing failures: %d or more deliveries fail processing, over %s.", r.FailuresMin, durWords(win))))
	out = append(out, onOff(r.SilenceEnabled, fmt.Sprintf("Source gone quiet: the last hour brings fewer than %g%% of the deliveries this source usually sends at that hour of the week (its last %d weeks; only once it usually sends %d or more an hour).",
		r.SilenceFraction*100, monitor.SilenceWeeks, monitor.SilenceMinUsual)))
	if r.Default {
		out = append(out, "These are the defaults; change them below.")
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
	if d == time.Minute {
		return "1 minute"
	}
	return fmt.Sprintf("%d minutes", d/time.Minute)
}

func (s *Server) uiAlerts(w http.ResponseWriter, r *http.Request) {
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
	dir, ok := s.sessionDirectory(w, r)
	if !ok {
		return
	}
	v := alerts.ListView{State: state, Now: time.Now()}
	for _, a := range list {
		row := alerts.Alert{ID: a.ID, Rule: a.Rule, SourceID: a.SourceID, SourceName: dir.sources[a.SourceID],
			SubjectHref: "/monitor/sources/" + a.SourceID, State: a.State, Summary: a.Summary(), FiredAt: a.FiredAt}
		switch {
		case a.Rule == monitor.RuleEndpointDisabled: // source_id holds the endpoint's id
			var d struct{ URL string }
			_ = json.Unmarshal(a.Detail, &d)
			row.SourceName, row.SubjectHref = cmp.Or(d.URL, "an outbound endpoint"), "/settings/endpoints/"+a.SourceID
		case a.Rule == monitor.RuleSLABreach: // about the tenant's leads, not a source
			row.SourceName, row.SubjectHref = "leads waiting for a first response", "/monitor#first-response"
		case row.SourceName == "":
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
	s.alertTrends(ctx, sess.Tenant.ID, list, v.Alerts, time.Now().UTC())
	v.Groups = alerts.GroupAlerts(v.Alerts)
	if next != "" {
		v.NextHref = "/alerts?state=" + state + "&cursor=" + next
	}
	v.Page = s.page(w, r, "Alerts", "alerts")
	s.render(w, r, http.StatusOK, alerts.List(v))
}

// alertTrends fills each recent alert's mini chart: the duplicate rate from
// an hour before it fired to its end. One series per source covers all of
// that source's alerts on the page; alerts older than a week get none.
func (s *Server) alertTrends(ctx context.Context, tenantID string, list []monitor.Alert, rows []alerts.Alert, now time.Time) {
	const maxAge = 7 * 24 * time.Hour
	type series struct {
		from, to time.Time
		step     time.Duration
		buckets  []monitor.Bucket
	}
	bySource := map[string]*series{}
	for _, a := range list {
		if now.Sub(a.FiredAt) > maxAge || a.Rule == monitor.RuleEndpointDisabled || a.Rule == monitor.RuleSLABreach || a.Rule == monitor.RuleSilence { // not about a source's rate
			continue
		}
		from, to := alertZoom(a, now)
		sr := bySource[a.SourceID]
		if sr == nil {
			sr = &series{from: from, to: to}
			bySource[a.SourceID] = sr
		}
		sr.from, sr.to = clock.Earlier(sr.from, from), clock.Later(sr.to, to)
	}
	for id, sr := range bySource {
		sr.step = max(chartStep(sr.to.Sub(sr.from)), time.Minute)
		if sr.to.Sub(sr.from)/sr.step > 1500 {
			sr.step = time.Hour
		}
		from, to := sr.from.Truncate(sr.step), sr.to.Truncate(sr.step).Add(sr.step)
		b, err := s.Monitor.Stats(ctx, tenantID, id, from, to, sr.step)
		if err != nil {
			if ctx.Err() == nil {
				s.Log.WarnContext(ctx, "alert trend", "err", err)
			}
			delete(bySource, id)
			continue
		}
		sr.buckets = b
	}
	for i, a := range list {
		sr := bySource[a.SourceID]
		if sr == nil || now.Sub(a.FiredAt) > maxAge || a.Rule == monitor.RuleEndpointDisabled || a.Rule == monitor.RuleSLABreach || a.Rule == monitor.RuleSilence {
			continue
		}
		from, to := alertZoom(a, now)
		trend := []float64{}
		for _, b := range sr.buckets {
			if !b.T.Before(from.Truncate(sr.step)) && b.T.Before(to) {
				trend = append(trend, b.DuplicateRate)
			}
		}
		rows[i].Trend = trend
	}
}

func (s *Server) uiAckAlert(w http.ResponseWriter, r *http.Request) {
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

// uiAckAlerts acknowledges several alerts at once ("Acknowledge all"): each
// id as POST /alerts/{id}/ack would; acknowledging one twice changes
// nothing, another tenant's id is not found.
func (s *Server) uiAckAlerts(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	ids := r.PostForm["id"]
	if len(ids) > 200 {
		s.uiError(w, r, apperr.New(apperr.Invalid, "at most 200 alerts at once"))
		return
	}
	for _, id := range ids { // every id first: another tenant's id changes nothing
		if _, err := s.Monitor.Alert(r.Context(), sess.Tenant.ID, id); err != nil {
			s.uiError(w, r, err)
			return
		}
	}
	for _, id := range ids {
		if _, err := s.Monitor.Ack(r.Context(), sess.Tenant.ID, id, sess.User.ID); err != nil {
			s.uiError(w, r, err)
			return
		}
	}
	state := r.PostFormValue("state")
	if state != monitor.StateResolved && state != monitor.StateAll {
		state = monitor.StateOpen
	}
	if len(ids) == 1 {
		s.setFlash(w, r, "Alert acknowledged. It stays open until the source is back to normal.")
	} else {
		s.setFlash(w, r, fmt.Sprintf("%d alerts acknowledged. They stay open until their sources are back to normal.", len(ids)))
	}
	seeOther(w, r, "/alerts?state="+state)
}

func rangeWords(r string) string {
	switch r {
	case "1h":
		return "hour"
	case "6h":
		return "6 hours"
	case "7d":
		return "7 days"
	case "30d":
		return "30 days"
	}
	return "24 hours"
}
