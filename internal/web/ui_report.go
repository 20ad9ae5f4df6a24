package web

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"leadpipe/views/components"
	monviews "leadpipe/views/monitor"
)

// reportMaxDays bounds a report's period.
const reportMaxDays = 400

// uiReportSources is GET /reports/sources?from=&to=&sort=&format=csv: per
// source, over days in the reader's zone (both inclusive; default the
// last 30), leads, duplicate rate, median first response, share
// qualified and share won. The leads' figures come from
// leads.Service.SourceReport, the deliveries' from monitor.Service.Totals.
func (s *Server) uiReportSources(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	loc := components.Zone(readerZone(ctx))
	q := r.URL.Query()
	today := time.Now().In(loc)
	v := monviews.ReportView{Sort: q.Get("sort"), Errors: map[string]string{}}
	from, err1 := reportDay(q.Get("from"), today.AddDate(0, 0, -29), loc)
	last, err2 := reportDay(q.Get("to"), today, loc)
	if err1 != nil || err2 != nil || last.Before(from) || last.Sub(from) > reportMaxDays*24*time.Hour {
		v.Errors["period"] = "Pick a start and an end day (the end on or after the start, at most 400 days)."
		from, last = dayStart(today.AddDate(0, 0, -29), loc), dayStart(today, loc)
	}
	to := last.AddDate(0, 0, 1)
	v.From, v.To = from.Format("2006-01-02"), last.Format("2006-01-02")
	figs, err := s.Leads.SourceReport(ctx, sess.Tenant.ID, from, to)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	srcs, err := s.Sources.List(ctx, sess.Tenant.ID)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	names, ids := map[string]string{"": "Added by hand"}, make([]string, 0, len(srcs))
	for _, src := range srcs {
		names[src.ID] = src.Name
		ids = append(ids, src.ID)
	}
	tot, err := s.Monitor.Totals(ctx, sess.Tenant.ID, ids, from, to)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	daily, err := s.Leads.DailyLeads(ctx, sess.Tenant.ID, from, to, loc)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	for _, f := range figs {
		row := monviews.ReportRow{SourceID: f.SourceID, Name: names[f.SourceID], Leads: f.Leads, Qualified: f.Qualified, Won: f.Won,
			Responded: f.Responded, MedianResponse: f.MedianResponse,
			Deliveries: tot[f.SourceID].Deliveries, Duplicates: tot[f.SourceID].Duplicates}
		if row.Name == "" {
			row.Name = "A deleted source"
		}
		for _, n := range daily[f.SourceID] {
			row.Daily = append(row.Daily, float64(n))
		}
		v.DailyTop = max(v.DailyTop, components.SparkTop(row.Daily))
		v.Rows = append(v.Rows, row)
	}
	sortReport(v.Rows, v.Sort)
	cq := url.Values{"from": {v.From}, "to": {v.To}, "sort": {v.Sort}, "format": {"csv"}}
	v.CSVHref = "/reports/sources?" + cq.Encode()
	if q.Get("format") == "csv" {
		writeReportCSV(w, v)
		return
	}
	v.Page = s.page(w, r, "Sources and campaigns", "monitor")
	s.render(w, r, http.StatusOK, monviews.Report(v))
}

func dayStart(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}

// reportDay parses a YYYY-MM-DD day in loc ("" is def's day) and returns
// its start.
func reportDay(s string, def time.Time, loc *time.Location) (time.Time, error) {
	if s == "" {
		return dayStart(def, loc), nil
	}
	return time.ParseInLocation("2006-01-02", s, loc)
}

// sortReport orders rows by a column, largest first (the source by name).
func sortReport(rows []monviews.ReportRow, by string) {
	share := func(n, of int64) float64 {
		if of == 0 {
			return -1
		}
		return float64(n) / float64(of)
	}
	key := func(r monviews.ReportRow) float64 {
		switch by {
		case "duplicates":
			return share(r.Duplicates, r.Deliveries)
		case "response":
			if r.Responded == 0 {
				return -1
			}
			return r.MedianResponse.Seconds()
		case "qualified":
			return share(r.Qualified, r.Leads)
		case "won":
			return share(r.Won, r.Leads)
		}
		return float64(r.Leads)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if by == "source" {
			return strings.ToLower(rows[i].Name) < strings.ToLower(rows[j].Name)
		}
		if a, b := key(rows[i]), key(rows[j]); a != b {
			return a > b
		}
		return rows[i].Name < rows[j].Name
	})
}

func writeReportCSV(w http.ResponseWriter, v monviews.ReportView) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="sources-`+v.From+`-`+v.To+`.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"source_id", "source", "leads", "deliveries", "duplicates", "duplicate_rate", "responded", "median_first_response_seconds", "qualified", "qualified_share", "won", "won_share"})
	ratio := func(n, of int64) string {
		if of == 0 {
			return ""
		}
		return strconv.FormatFloat(float64(n)/float64(of), 'f', 4, 64)
	}
	for _, r := range v.Rows {
		med := ""
		if r.Responded > 0 {
			med = strconv.FormatInt(int64(r.MedianResponse/time.Second), 10)
		}
		_ = cw.Write([]string{r.SourceID, csvSafe(r.Name), strconv.FormatInt(r.Leads, 10), strconv.FormatInt(r.Deliveries, 10),
			strconv.FormatInt(r.Duplicates, 10), ratio(r.Duplicates, r.Deliveries), strconv.FormatInt(r.Responded, 10), med,
			strconv.FormatInt(r.Qualified, 10), ratio(r.Qualified, r.Leads), strconv.FormatInt(r.Won, 10), ratio(r.Won, r.Leads)})
	}
	cw.Flush()
}
