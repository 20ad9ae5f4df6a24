package web

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"log/slog"

	"leadpipe/internal/apperr"
	"leadpipe/internal/idempotency"
)

// IdempotentFunc is a write handler run under a claimed key: it parses the
// request and calls the service with key (which completes it in the
// write's transaction, see idempotency.InTx), and returns the response to
// send. An error is rendered by WriteError. A request rejected by
// validation (400, 422) is not stored under its key (Stripe's rule: the
// write never began), so the client can fix the body and retry with the
// same key; other 4xx outcomes (404, 409, …) are stored like any other;
// 5xx release the key.
type IdempotentFunc func(ctx context.Context, r *http.Request, body []byte, key *idempotency.Key) (idempotency.Response, error)

// Idempotent wraps write handlers that require an Idempotency-Key: the
// HTTP side of internal/idempotency's store (docs/API.md, "Leads,
// idempotency and concurrency").
type Idempotent struct {
	// Store claims keys and keeps their outcomes; its Do also keys the
	// UI's create forms (ui_once.go).
	Store   *idempotency.Store
	log     *slog.Logger
	maxBody int64
}

// NewIdempotent returns the middleware over store, logging internal errors
// to log, with request bodies capped at MaxAPIBody.
func NewIdempotent(store *idempotency.Store, log *slog.Logger) *Idempotent {
	return &Idempotent{Store: store, log: log, maxBody: MaxAPIBody}
}

// writeError renders err through the one error mapping.
func (m *Idempotent) writeError(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, m.log, err)
}

// Wrap returns an http.HandlerFunc that runs h at most once per key.
//
// Order: validate the key and the body (400 before anything is claimed),
// claim or look the key up (replay, 409, 422), run h in a transaction
// that also completes the key, commit, respond. A panic in h leaves the
// claim in progress until its lock deadline, exactly as a crashed process
// would; a retry after that runs again (the transaction never committed).
func (m *Idempotent) Wrap(h IdempotentFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := idempotency.ParseKey(r.Header.Values(idempotency.Header))
		if err != nil {
			m.writeError(w, r, err)
			return
		}
		body, err := m.readBody(w, r)
		if err != nil {
			m.writeError(w, r, err)
			return
		}
		canon, err := idempotency.Canonical(body)
		if err != nil {
			m.writeError(w, r, apperr.Wrap(apperr.BadRequest, err, "malformed JSON: %s", err.Error()))
			return
		}
		m.Run(w, r, key, idempotency.Fingerprint(r.Method, r.URL.Path, canon), func(ctx context.Context, k *idempotency.Key) (idempotency.Response, error) {
			return h(ctx, r, body, k)
		})
	}
}

// Run runs h at most once per key for a request whose fingerprint the
// caller computed (a streamed body, e.g. a CSV upload hashed while it was
// read), and answers as Wrap does: the stored response on a replay, 409
// while the first is in progress, 422 for another request under the key.
func (m *Idempotent) Run(w http.ResponseWriter, r *http.Request, key string, fp [32]byte,
	h func(ctx context.Context, k *idempotency.Key) (idempotency.Response, error)) {
	req := idempotency.Request{TenantID: Tenant(r), Key: key, Fingerprint: fp}
	out, err := m.Store.Do(r.Context(), req, func(k *idempotency.Key) (idempotency.Response, error) {
		resp, err := h(r.Context(), k)
		if err == nil || errors.Is(err, idempotency.ErrClaimLost) || rejectedByValidation(err) {
			return resp, err // a validation error releases the key (rendered below)
		}
		return m.render(r, err), nil // stored when 4xx, released when 5xx
	})
	switch {
	case errors.Is(err, idempotency.ErrClaimLost):
		// A retry took the claim over after our lock deadline; our write
		// rolled back, the retry's outcome is the one that counts.
		w.Header().Set("Retry-After", "1")
		m.writeError(w, r, apperr.New(apperr.Conflict,
			"this request took too long and was superseded by a retry with the same Idempotency-Key: retry to get its response"))
	case err != nil:
		m.writeError(w, r, err)
	case out.Decision == idempotency.Replay:
		out.Response.Header.Set("Idempotent-Replayed", "true")
		writeStored(w, out.Response)
	case out.Decision == idempotency.InProgress:
		w.Header().Set("Retry-After", "1")
		m.writeError(w, r, apperr.New(apperr.Conflict,
			"a request with this Idempotency-Key is still in progress: retry shortly to get its response"))
	case out.Decision == idempotency.Mismatch:
		m.writeError(w, r, apperr.InvalidFields(map[string]string{
			idempotency.Header: "was already used for a different request (method, path or body): use a new key for a new request"}))
	default:
		writeStored(w, out.Response)
	}
}

// rejectedByValidation reports whether err refused the request before any
// effect: a malformed (400) or invalid (422) input. Handlers run their
// write in one transaction (InTx), so such an error has rolled back
// everything.
func rejectedByValidation(err error) bool {
	return apperr.Is(err, apperr.Invalid) || apperr.Is(err, apperr.BadRequest)
}

// render is what WriteError answers for err, as a response to store.
func (m *Idempotent) render(r *http.Request, err error) idempotency.Response {
	rec := &recorder{header: http.Header{}}
	m.writeError(rec, r, err)
	return idempotency.Response{Status: rec.status, Header: rec.header, Body: rec.body}
}

func (m *Idempotent) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return nil, apperr.New(apperr.BadRequest, "Content-Type must be application/json")
		}
	}
	limit := m.maxBody
	if limit <= 0 {
		limit = 1 << 20
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apperr.New(apperr.TooLarge, "request body is larger than %d bytes", limit)
		}
		return nil, apperr.Wrap(apperr.BadRequest, err, "could not read the request body")
	}
	return b, nil
}

// writeStored sends a response exactly as stored.
func writeStored(w http.ResponseWriter, resp idempotency.Response) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	if _, err := w.Write(resp.Body); err != nil {
		return // the client went away; the outcome stays stored for its retry
	}
}

// recorder captures what WriteError renders, to store it.
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return len(b), nil
}
