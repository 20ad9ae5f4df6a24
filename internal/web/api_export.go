package web

import (
	"bufio"
	"encoding/csv"
	"net/http"
	"strings"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/leads"
)

// exportColumns are the columns of GET /api/v1/leads/export.csv, in order.
var exportColumns = []string{"id", "source", "email", "name", "phone", "company", "status", "owner",
	"tags", "next_step", "due_at", "created_at", "updated_at"}

// apiExportLeads is GET /api/v1/leads/export.csv: the leads the list's
// filters match, as CSV, streamed page by page (constant memory), newest
// first. Sources are shown by slug and owners by email.
func (s *Server) apiExportLeads(w http.ResponseWriter, r *http.Request) {
	f, err := leadFilter(r.URL.Query())
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	s.exportCSV(w, r, Tenant(r), f)
}

// uiExportLeads is GET /leads/export.csv, the inbox's Export button: the
// leads of the inbox view and filters in the query (the inbox's own
// parameters: view, status, source, owner, due, q), as the API's CSV.
func (s *Server) uiExportLeads(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	iq := readInboxQuery(r.URL.Query(), sess.User.ID, sess.User.IsAdmin(), sess.User.Location(), time.Now())
	if len(iq.bad) > 0 {
		WriteError(w, r, s.Log, apperr.InvalidFields(iq.bad))
		return
	}
	s.exportCSV(w, r, sess.Tenant.ID, iq.filter)
}

// exportCSV streams the leads f matches as CSV.
func (s *Server) exportCSV(w http.ResponseWriter, r *http.Request, tenantID string, f leads.Filter) {
	ctx := r.Context()
	srcs, err := s.Sources.List(ctx, tenantID)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	sourceSlug := map[string]string{"": leads.SourceManual} // a lead a person made has no source
	for _, src := range srcs {
		sourceSlug[src.ID] = src.Slug
	}
	users, err := s.Tenants.Users(ctx, tenantID)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	ownerEmail := map[string]string{}
	for _, u := range users {
		ownerEmail[u.ID] = u.Email
	}

	var cw *csv.Writer
	var bw *bufio.Writer
	flusher, _ := w.(http.Flusher)
	row := make([]string, len(exportColumns))
	err = s.Leads.Export(ctx, tenantID, f, func(page []leads.Lead) error {
		if cw == nil { // the first page: the answer starts, errors can no longer become a problem document
			var err error
			if bw, cw, err = startCSV(w, "leads.csv", 64<<10, exportColumns); err != nil {
				return err
			}
		}
		for _, l := range page {
			owner := ""
			if l.OwnerID != nil {
				owner = ownerEmail[*l.OwnerID]
			}
			source := sourceSlug[l.SourceID]
			if source == "" {
				source = l.SourceID
			}
			row = append(row[:0], l.ID, source, l.Email, l.Name, l.Phone, l.Company, l.Status, owner,
				strings.Join(l.Tags, ","), l.NextStep, csvTime(l.DueAt), l.CreatedAt.UTC().Format(time.RFC3339), l.UpdatedAt.UTC().Format(time.RFC3339))
			for i := range row {
				row[i] = csvSafe(row[i])
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil {
		if cw == nil {
			WriteError(w, r, s.Log, err)
			return
		}
		// Mid-stream the status is sent: log it; the client sees a truncated
		// body (no final newline after the last complete row is not promised).
		s.Log.Error("lead export cut short", "tenant_id", tenantID, "err", err)
	}
}

// startCSV starts a streamed CSV download: its headers and 200, then the
// header row, through a buffer of bufSize bytes.
func startCSV(w http.ResponseWriter, filename string, bufSize int, header []string) (*bufio.Writer, *csv.Writer, error) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, bufSize)
	cw := csv.NewWriter(bw)
	return bw, cw, cw.Write(header)
}

func csvTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// csvSafe keeps a spreadsheet from reading a cell as a formula (OWASP, CSV
// injection): a value starting with =, +, -, @, a tab or a carriage return
// gets a leading apostrophe.
func csvSafe(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}
