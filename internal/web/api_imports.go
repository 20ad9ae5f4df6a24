package web

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/hex"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/imports"
)

// checkCSVContentType accepts text/csv (and the types spreadsheets send
// for it) in UTF-8; another charset is 415.
func checkCSVContentType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "text/csv" && mt != "application/csv" && mt != "text/plain") {
		return apperr.New(apperr.UnsupportedMediaType, "Content-Type must be text/csv (UTF-8)")
	}
	if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "utf8" && cs != "us-ascii" {
		return apperr.New(apperr.UnsupportedMediaType, "the file must be UTF-8 (charset=%s given): save it as CSV UTF-8", cs)
	}
	return nil
}

// importFingerprint identifies an upload under its Idempotency-Key: the
// path, the parameters and the file's SHA-256.
func importFingerprint(path string, q url.Values, sum [32]byte) [32]byte {
	canon := url.Values{}
	for _, k := range []string{"natural_key", "mapping", "filename"} {
		if v := q.Get(k); v != "" {
			canon.Set(k, v)
		}
	}
	return idempotency.Fingerprint(http.MethodPost, path, []byte(canon.Encode()+"\n"+hex.EncodeToString(sum[:])))
}

// apiCreateImport is POST /api/v1/imports?natural_key=&mapping=&filename=:
// a CSV body (≤ 50 MiB, UTF-8) under an Idempotency-Key → 202 with the
// import. The body is read to its end and checked before anything is
// stored (413, 415, 422 leave nothing behind); then the file, the import
// and the key's completion commit together and the run is queued.
func (s *Server) apiCreateImport(w http.ResponseWriter, r *http.Request) {
	key, err := idempotency.ParseKey(r.Header.Values(idempotency.Header))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	if err := checkCSVContentType(r.Header.Get("Content-Type")); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	if r.ContentLength > imports.MaxBytes {
		WriteError(w, r, s.Log, apperr.New(apperr.TooLarge, "the file is larger than %d MiB: split it into smaller files", imports.MaxBytes>>20))
		return
	}
	q := r.URL.Query()
	mapping, err := imports.ParseMapping(q.Get("mapping"))
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	sp, err := imports.Spool(r.Body, imports.MaxBytes, "")
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	defer sp.Close()
	// The mapping is checked before the key is claimed: a 422 stores nothing.
	if _, err := imports.NewPlan(sp.Header, mapping, q.Get("natural_key")); err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	in := imports.CreateInput{File: sp, Filename: q.Get("filename"), NaturalKey: q.Get("natural_key"), Mapping: mapping}
	tenantID := Tenant(r)
	s.Idem.Run(w, r, key, importFingerprint(r.URL.Path, q, sp.SHA256), func(ctx context.Context, k *idempotency.Key) (idempotency.Response, error) {
		v, err := s.Imports.Create(ctx, tenantID, in, idempotency.Once[imports.View]{Key: k, Respond: importAccepted})
		if err != nil {
			return idempotency.Response{}, err
		}
		return importAccepted(v)
	})
}

func importAccepted(v imports.View) (idempotency.Response, error) {
	return jsonResponse(http.StatusAccepted, v, http.Header{"Location": {"/api/v1/imports/" + v.ID}})
}

// apiGetImport is GET /api/v1/imports/{id}: state, progress and counts.
func (s *Server) apiGetImport(w http.ResponseWriter, r *http.Request) {
	_, v, err := urlImport(r, Tenant(r), s.Imports.Get)
	s.writeResult(w, r, http.StatusOK, v, err)
}

// apiListImports is GET /api/v1/imports: the latest imports, newest first.
func (s *Server) apiListImports(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	vs, err := s.Imports.List(r.Context(), Tenant(r), limit)
	s.writeResult(w, r, http.StatusOK, listBody(nonNil(vs)), err)
}

// apiImportErrors is GET /api/v1/imports/{id}/errors (and errors.csv): the
// refused rows as CSV, each with its row number and reason, streamed.
func (s *Server) apiImportErrors(w http.ResponseWriter, r *http.Request) {
	id, err := importID(r)
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	var cw *csv.Writer
	var bw *bufio.Writer
	start := func() (err error) {
		bw, cw, err = startCSV(w, "import-"+id+"-errors.csv", 32<<10, []string{"row", "reason", "data"})
		return err
	}
	err = s.Imports.Errors(r.Context(), Tenant(r), id, func(page []imports.ErrorRow) error {
		if cw == nil {
			if err := start(); err != nil {
				return err
			}
		}
		for _, e := range page {
			if err := cw.Write([]string{strconv.Itoa(e.Row), csvSafe(e.Reason), csvSafe(e.Raw)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && cw == nil {
		err = start()
	}
	if err != nil {
		if cw == nil {
			WriteError(w, r, s.Log, err)
			return
		}
		s.Log.Error("import error report cut short", "import_id", id, "err", err)
		return
	}
	cw.Flush()
	_ = bw.Flush()
}

// importID is the {id} of an import route: a malformed id is an unknown
// import (404), like another tenant's.
func importID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "id")
	if !ids.Valid(id) {
		return "", apperr.New(apperr.NotFound, "import not found")
	}
	return id, nil
}

// urlImport reads the import the URL's {id} names with get (Imports.Get
// or Imports.Preview); an id that is none is not found.
func urlImport[T any](r *http.Request, tenantID string, get func(ctx context.Context, tenantID, id string) (T, error)) (string, T, error) {
	id, err := importID(r)
	if err != nil {
		var none T
		return "", none, err
	}
	v, err := get(r.Context(), tenantID, id)
	return id, v, err
}
