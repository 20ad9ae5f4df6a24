package web

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"leadpipe/internal/leads"
	"leadpipe/views/components"
	monviews "leadpipe/views/monitor"
)

// reportMaxDays bounds a report's period.
const reportMaxDays = 400

// uiReportSources is GET /reports/sources?by=&from=&to=&sort=&format=csv:
// per source (or, by=campaign, per first-touch campaign and source), over
// days in the reader's zone (both inclusive; default the last 30), leads,
// duplicate rate (per source only: deliveries are counted per source),
// median first response, share qualified and share won. The leads'
// figures come from leads.Service.SourceReport, the deliveries' from
// monitor.Service.Totals.
func (s *Server) uiReportSources(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	loc := components.Zone(readerZone(ctx))
	q := r.URL.Query()
	today := time.Now().In(loc)
	by := leads.BySource
	if q.Get("by") == string(leads.ByCampaign) {
		by = leads.ByCampaign
	}
	v := monviews.ReportView{By: string(by), Sort: q.Get("sort"), Errors: map[string]string{}}
	from, err1 := reportDay(q.Get("from"), today.AddDate(0, 0, -29), loc)
	last, err2 := reportDay(q.Get("to"), today, loc)
	if err1 != nil || err2 != nil || last.Before(from) || last.Sub(from) > reportMaxDays*24*time.Hour {
		v.Errors["period"] = "Pick a start and an end day (the end on or after the start, at most 400 days)."
		from, last = dayStart(today.AddDate(0, 0, -29), loc), dayStart(today, loc)
	}
	to := last.AddDate(0, 0, 1)
	v.From, v.To = from.Format("2006-01-02"), last.Format("2006-01-02")
	figs, err := s.Leads.Report(ctx, sess.Tenant.ID, by, from, to, loc)
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
	for _, f := range figs {
		row := monviews.ReportRow{SourceID: f.SourceID, Name: names[f.SourceID], Campaign: f.Campaign, Leads: f.Leads, Qualified: f.Qualified, Won: f.Won,
			Responded: f.Responded, MedianResponse: f.MedianResponse}
		if by == leads.BySource {
			row.Deliveries, row.Duplicates = tot[f.SourceID].Deliveries, tot[f.SourceID].Duplicates
		}
		if row.Name == "" {
			row.Name = "A deleted source"
		}
		for _, n := range f.Daily {
			row.Daily = append(row.Daily, float64(n))
		}
		v.DailyTop = max(v.DailyTop, components.SparkTop(row.Daily))
		v.Rows = append(v.Rows, row)
	}
	sortReport(v.Rows, v.Sort)
	cq := url.Values{"by": {v.By}, "from": {v.From}, "to": {v.To}, "sort": {v.Sort}, "format": {"csv"}}
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

// sortReport orders rows by a column, largest first (the source and the
// campaign by name).
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
	name := func(r monviews.ReportRow) string { return strings.ToLower(r.Campaign + "\x00" + r.Name) }
	sort.SliceStable(rows, func(i, j int) bool {
		if by == "source" || by == "campaign" {
			// A campaign's rows together, "No campaign" ("") first.
			return name(rows[i]) < name(rows[j])
		}
		if a, b := key(rows[i]), key(rows[j]); a != b {
			return a > b
		}
		return name(rows[i]) < name(rows[j])
	})
}

// writeReportCSV writes the rows. Grouped by campaign, the rows start
// with the campaign and have no deliveries (they are counted per source).
func writeReportCSV(w http.ResponseWriter, v monviews.ReportView) {
	byCampaign := v.By == string(leads.ByCampaign)
	name := "sources"
	if byCampaign {
		name = "campaigns"
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`-`+v.From+`-`+v.To+`.csv"`)
	cw := csv.NewWriter(w)
	head := []string{"source_id", "source", "leads", "deliveries", "duplicates", "duplicate_rate", "responded", "median_first_response_seconds", "qualified", "qualified_share", "won", "won_share"}
	if byCampaign {
		head = []string{"campaign", "source_id", "source", "leads", "responded", "median_first_response_seconds", "qualified", "qualified_share", "won", "won_share"}
	}
	_ = cw.Write(head)
	ratio := func(n, of int64) string {
		if of == 0 {
			return ""
		}
		return strconv.FormatFloat(float64(n)/float64(of), 'f', 4, 64)
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, r := range v.Rows {
		med := ""
		if r.Responded > 0 {
			med = itoa(int64(r.MedianResponse / time.Second))
		}
		rec := []string{r.SourceID, csvSafe(r.Name), itoa(r.Leads), itoa(r.Deliveries), itoa(r.Duplicates), ratio(r.Duplicates, r.Deliveries)}
		if byCampaign {
			rec = []string{csvSafe(r.Campaign), r.SourceID, csvSafe(r.Name), itoa(r.Leads)}
		}
		rec = append(rec, itoa(r.Responded), med, itoa(r.Qualified), ratio(r.Qualified, r.Leads), itoa(r.Won), ratio(r.Won, r.Leads))
		_ = cw.Write(rec)
	}
	cw.Flush()
}
