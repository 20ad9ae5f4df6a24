package web

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/imports"
	"leadpipe/views/components"
	importviews "leadpipe/views/imports"
)

// importUIRoutes mounts the CSV import pages (admins): upload → preview and
// mapping (a draft) → start → progress (polled) → result and error report.
func (s *Server) importUIRoutes(r Router) {
	r.Get("/imports", s.uiImports)
	r.Post("/imports", s.uiUploadImport)
	r.Get("/imports/{id}", s.uiImport)
	r.Post("/imports/{id}/start", s.withForm(s.uiStartImport))
	r.Get("/imports/{id}/status", s.uiImportStatus)
	r.Get("/imports/{id}/errors.csv", s.apiImportErrors)
}

func importItem(v imports.View) importviews.Item {
	return importviews.Item{ID: v.ID, State: v.State, Filename: v.Filename, NaturalKey: v.NaturalKey, Rows: v.Rows,
		Processed: v.Processed, New: v.New, Updated: v.Updated, Unchanged: v.Unchanged, Errors: v.Errors,
		Percent: int(v.Progress * 100), LastError: deref(v.LastError)}
}

func (s *Server) importsPage(w http.ResponseWriter, r *http.Request, status int, problem string) {
	sess := sessionFrom(r.Context())
	vs, err := s.Imports.List(r.Context(), sess.Tenant.ID, 20)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := importviews.ListView{Page: s.page(w, r, "Import leads", "imports"), Key: newFormKey(), Problem: problem, MaxMiB: imports.MaxBytes >> 20}
	for _, iv := range vs {
		v.Items = append(v.Items, importItem(iv))
	}
	s.render(w, r, status, importviews.List(v))
}

// uiImports is GET /imports.
func (s *Server) uiImports(w http.ResponseWriter, r *http.Request) {
	s.importsPage(w, r, http.StatusOK, "")
}

// uiUploadImport is POST /imports (multipart: key, then file). The file is
// streamed and checked like the API's upload, stored as a draft, and the
// browser goes to its preview. A double-clicked submit makes one draft.
func (s *Server) uiUploadImport(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, imports.MaxBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		s.importsPage(w, r, http.StatusBadRequest, "Choose a CSV file to upload.")
		return
	}
	var key, filename string
	var sp *imports.Spooled
	defer func() { sp.Close() }()
	for sp == nil {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.uploadProblem(w, r, err)
			return
		}
		switch part.FormName() {
		case "key":
			b, _ := io.ReadAll(io.LimitReader(part, 256))
			key = string(b)
		case "file":
			filename = part.FileName()
			if sp, err = imports.Spool(part, imports.MaxBytes, ""); err != nil {
				s.uploadProblem(w, r, err)
				return
			}
		}
		part.Close()
	}
	if sp == nil || filename == "" {
		s.importsPage(w, r, http.StatusUnprocessableEntity, "Choose a CSV file to upload.")
		return
	}
	loc, err := s.uiOnce(r.Context(), sess.Tenant.ID, key, "import", func(k *idempotency.Key) (string, error) {
		v, err := s.Imports.Create(r.Context(), sess.Tenant.ID, imports.CreateInput{File: sp, Filename: filename, Draft: true},
			idempotency.Once[imports.View]{Key: k, Respond: func(v imports.View) (idempotency.Response, error) {
				return idempotency.SeeOther("/imports/" + v.ID), nil
			}})
		return "/imports/" + v.ID, err
	})
	if err != nil {
		s.uploadProblem(w, r, err)
		return
	}
	http.Redirect(w, r, loc, http.StatusSeeOther)
}

// uploadProblem re-renders the upload page with what was wrong with the file.
func (s *Server) uploadProblem(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = apperr.New(apperr.TooLarge, "the file is larger than %d MiB: split it into smaller files", imports.MaxBytes>>20)
	}
	var ae *apperr.Error
	if !errors.As(err, &ae) || StatusOf(ae.Code) >= 500 {
		s.uiError(w, r, err)
		return
	}
	msg := ae.Message
	for _, f := range ae.Fields {
		msg = f
	}
	s.importsPage(w, r, StatusOf(ae.Code), upperFirst(msg)+".")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// uiImport is GET /imports/{id}.
func (s *Server) uiImport(w http.ResponseWriter, r *http.Request) {
	s.importPage(w, r, http.StatusOK, "", nil)
}

func (s *Server) importPage(w http.ResponseWriter, r *http.Request, status int, problem string, chosen map[string]string) {
	sess := sessionFrom(r.Context())
	id, iv, err := urlImport(r, sess.Tenant.ID, s.Imports.Get)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	v := importviews.ImportView{Page: s.page(w, r, "Import", "imports"), Item: importItem(iv), Problem: problem}
	if iv.State == imports.StateDraft {
		p, err := s.Imports.Preview(r.Context(), sess.Tenant.ID, id)
		if err != nil {
			s.uiError(w, r, err)
			return
		}
		v.Header, v.Rows, v.NaturalKey = p.Plan.Header, p.Rows, p.Plan.NaturalKey
		for _, f := range imports.Fields {
			v.Fields = append(v.Fields, components.Option{Value: f, Label: fieldLabel(f)})
		}
		for i, h := range p.Plan.Header {
			c := importviews.Column{Index: i, Name: h, Field: p.Plan.Fields[i]}
			if f, ok := chosen[h]; ok {
				c.Field = f
			}
			for _, row := range p.Rows {
				if c.Sample = importviews.Cell(row, i); c.Sample != "" {
					break
				}
			}
			v.Columns = append(v.Columns, c)
		}
	}
	s.render(w, r, status, importviews.Import(v))
}

func fieldLabel(f string) string {
	switch f {
	case imports.FieldEmail:
		return "Email"
	case imports.FieldName:
		return "Full name"
	case imports.FieldFirstName:
		return "First name"
	case imports.FieldLastName:
		return "Last name"
	case imports.FieldPhone:
		return "Phone"
	case imports.FieldCompany:
		return "Company"
	case imports.FieldTags:
		return "Tags (comma-separated)"
	case imports.FieldPayload:
		return "Keep as extra data"
	case imports.FieldIgnore:
		return "Ignore this column"
	}
	return f
}

// uiStartImport is POST /imports/{id}/start: the mapping (map.<column
// index>=field) and the natural key's column index.
func (s *Server) uiStartImport(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id, p, err := urlImport(r, sess.Tenant.ID, s.Imports.Preview)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	mapping := map[string]string{}
	for i, h := range p.Plan.Header {
		if f := r.PostFormValue(importviews.FieldName(i)); f != "" {
			mapping[h] = f
		}
	}
	key := ""
	if i, err := strconv.Atoi(r.PostFormValue("natural_key")); err == nil && i >= 0 && i < len(p.Plan.Header) {
		key = p.Plan.Header[i]
	}
	if _, err := s.Imports.Start(r.Context(), sess.Tenant.ID, id, mapping, key); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code == apperr.Invalid {
			msg := ae.Message
			for _, f := range ae.Fields {
				msg = f
			}
			s.importPage(w, r, http.StatusUnprocessableEntity, upperFirst(msg)+".", mapping)
			return
		}
		s.uiError(w, r, err)
		return
	}
	http.Redirect(w, r, "/imports/"+id, http.StatusSeeOther)
}

// uiImportStatus is GET /imports/{id}/status: the progress fragment htmx polls.
func (s *Server) uiImportStatus(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	_, iv, err := urlImport(r, sess.Tenant.ID, s.Imports.Get)
	s.renderResult(w, r, http.StatusOK, importviews.Status(importItem(iv)), err)
}
