package web

import (
	"context"
	"time"

	"leadpipe/internal/monitor"
	"leadpipe/views/alerts"
	"leadpipe/views/components"
	srcviews "leadpipe/views/sources"
)

// sourceHealth is each source's health for the sources list: deliveries
// and duplicate rate over 24 h with the hourly trend, and its open
// alerts; top is the ceiling the rows' sparklines share. A failure only
// leaves the columns empty.
func (s *Server) sourceHealth(ctx context.Context, tenantID string, now time.Time) (map[string]srcviews.Health, float64) {
	ov, err := s.Monitor.Overview(ctx, tenantID, now)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.WarnContext(ctx, "source health", "err", err)
		}
		return nil, 0
	}
	out := make(map[string]srcviews.Health, len(ov))
	top := 0.0
	for _, o := range ov {
		h := srcviews.Health{Known: true, OpenAlerts: o.OpenAlerts}
		for _, v := range o.SparkVolume {
			h.Deliveries24h += v
		}
		if h.Deliveries24h > 0 {
			h.Trend = o.Sparkline
			h.Rate24h = weightedRate(o.Sparkline, o.SparkVolume)
			top = max(top, components.SparkTop(h.Trend))
		}
		h.AlertLabels = ruleLabels(o.OpenRules)
		out[o.SourceID] = h
	}
	return out, top
}

// recentDeliveriesShown is how many deliveries the source page lists,
// below the problems.
const recentDeliveriesShown = 10

// sourceOpenAlerts is a source's open alerts for the top of its page (a
// failure only hides the card).
func (s *Server) sourceOpenAlerts(ctx context.Context, tenantID, sourceID string) []srcviews.OpenAlert {
	list, _, err := s.Monitor.Alerts(ctx, tenantID, monitor.StateOpen, "", 200)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.WarnContext(ctx, "source alerts", "err", err)
		}
		return nil
	}
	var out []srcviews.OpenAlert
	for _, a := range list {
		if a.SourceID != sourceID || a.Rule == monitor.RuleEndpointDisabled {
			continue
		}
		out = append(out, srcviews.OpenAlert{ID: a.ID, Label: alerts.RuleLabel(a.Rule), Hint: alerts.RuleHint(a.Rule),
			Summary: a.Summary(), FiredAt: a.FiredAt, Acked: a.AcknowledgedAt != nil})
	}
	return out
}
