package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/monitor"
)

// parseTimeParam reads an RFC 3339 time; a "+" in an offset that arrived
// unencoded (as a space) is restored.
func parseTimeParam(v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, strings.ReplaceAll(v, " ", "+"))
	return t, err == nil
}

// sourceStats is GET /api/v1/sources/{id}/stats?from=&to=&step= (RFC 3339
// times, step in seconds; default: the last 24 h in 5-minute steps).
func (s *Server) sourceStats(w http.ResponseWriter, r *http.Request) {
	src, ok := s.routeSource(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	fields := map[string]string{}
	to := s.Monitor.Now().UTC()
	if v := q.Get("to"); v != "" {
		t, ok := parseTimeParam(v)
		if !ok {
			fields["to"] = "must be an RFC 3339 time, e.g. 2026-11-30T12:00:00Z"
		}
		to = t
	}
	from := to.Add(-24 * time.Hour)
	if v := q.Get("from"); v != "" {
		t, ok := parseTimeParam(v)
		if !ok {
			fields["from"] = "must be an RFC 3339 time, e.g. 2026-11-29T12:00:00Z"
		}
		from = t
	}
	step := 5 * time.Minute
	if v := q.Get("step"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > 366*86400 {
			fields["step"] = "must be a whole number of seconds (at least 60)"
		} else {
			step = time.Duration(n) * time.Second
		}
	}
	if len(fields) > 0 {
		WriteError(w, r, s.Log, apperr.InvalidFields(fields))
		return
	}
	buckets, err := s.Monitor.Stats(r.Context(), Tenant(r), src.ID, from, to, step)
	s.writeResult(w, r, http.StatusOK, map[string]any{"buckets": buckets}, err)
}

func (s *Server) getAlertRules(w http.ResponseWriter, r *http.Request) {
	s.writeSourceRules(w, r, s.Monitor.Rules)
}

// writeSourceRules answers with the alert rules rules reads (or resets) for
// the tenant's source the URL's {id} names.
func (s *Server) writeSourceRules(w http.ResponseWriter, r *http.Request, rules func(ctx context.Context, tenantID, sourceID string) (monitor.Rules, error)) {
	src, ok := s.routeSource(w, r)
	if !ok {
		return
	}
	out, err := rules(r.Context(), Tenant(r), src.ID)
	s.writeResult(w, r, http.StatusOK, out, err)
}

// putAlertRules overlays the fields sent on the current rules (absent
// fields keep their value) and saves them.
func (s *Server) putAlertRules(w http.ResponseWriter, r *http.Request) {
	src, ok := s.routeSource(w, r)
	if !ok {
		return
	}
	rules, err := s.Monitor.Rules(r.Context(), Tenant(r), src.ID)
	if !s.decodeOver(w, r, &rules, err) {
		return
	}
	rules.SourceID = src.ID
	out, err := s.Monitor.SetRules(r.Context(), Tenant(r), rules, actor(r))
	s.writeResult(w, r, http.StatusOK, out, err)
}

func (s *Server) resetAlertRules(w http.ResponseWriter, r *http.Request) {
	s.writeSourceRules(w, r, s.Monitor.ResetRules)
}

// decodeOver decodes the body over cur, the value as stored (err: reading
// it failed), so that the fields a PUT leaves out keep their value; false
// when it has answered with the problem.
func (s *Server) decodeOver(w http.ResponseWriter, r *http.Request, cur any, err error) bool {
	if err == nil {
		err = DecodeJSON(w, r, cur)
	}
	if err != nil {
		WriteError(w, r, s.Log, err)
		return false
	}
	return true
}

// putSLARule overlays the fields sent on the current sla_breach rule.
func (s *Server) putSLARule(w http.ResponseWriter, r *http.Request) {
	rules, err := s.Monitor.SLARules(r.Context(), Tenant(r))
	if !s.decodeOver(w, r, &rules, err) {
		return
	}
	out, err := s.Monitor.SetSLARules(r.Context(), Tenant(r), rules, actor(r))
	s.writeResult(w, r, http.StatusOK, out, err)
}

// actor names the principal for audit columns: a user id, or the token.
func actor(r *http.Request) string {
	p, _ := PrincipalFrom(r.Context())
	if p.UserID != "" {
		return p.UserID
	}
	if p.TokenID != "" {
		return "token:" + p.TokenID
	}
	return ""
}

// listAlerts is GET /api/v1/alerts?state=open|resolved|all&limit=&cursor=.
func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := positiveLimit(q, "must be between 1 and 200")
	serveList(s, w, r, err, func() ([]monitor.Alert, string, error) {
		return s.Monitor.Alerts(r.Context(), Tenant(r), q.Get("state"), q.Get("cursor"), limit)
	})
}

// getAlert is one alert with its history.
func (s *Server) getAlert(w http.ResponseWriter, r *http.Request) {
	a, err := s.Monitor.Alert(r.Context(), Tenant(r), chi.URLParam(r, "id"))
	var ev []monitor.AlertEvent
	if err == nil {
		ev, err = s.Monitor.AlertEvents(r.Context(), Tenant(r), a.ID)
	}
	s.writeResult(w, r, http.StatusOK, struct {
		monitor.Alert
		Events []monitor.AlertEvent `json:"events"`
	}{a, ev}, err)
}

// ackAlert is POST /api/v1/alerts/{id}/ack; acknowledging twice is fine.
func (s *Server) ackAlert(w http.ResponseWriter, r *http.Request) {
	a, err := s.Monitor.Ack(r.Context(), Tenant(r), chi.URLParam(r, "id"), actor(r))
	s.writeResult(w, r, http.StatusOK, a, err)
}
