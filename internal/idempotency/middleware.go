package idempotency

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
)

// HandlerFunc is a write handler run under a claimed key: it does its
// business write in tx (which also completes the key) and returns the
// response to store and send. An error is rendered by Middleware.WriteError:
// 4xx outcomes are stored like any other, 5xx release the key.
type HandlerFunc func(ctx context.Context, tx *sqlx.Tx, r *http.Request, body []byte) (status int, header http.Header, respBody []byte, err error)

// Middleware wraps write handlers that require an Idempotency-Key.
type Middleware struct {
	Store *Store
	// Tenant returns the acting tenant of an authenticated request.
	Tenant func(r *http.Request) string
	// WriteError renders an error (the web package's one error mapping).
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	Log        *slog.Logger
	// MaxBody caps request bodies (1 MiB when zero).
	MaxBody int64
}

// Wrap returns an http.HandlerFunc that runs h at most once per key.
//
// Order: validate the key and the body (400 before anything is claimed),
// claim or look the key up (replay, 409, 422), run h in a transaction
// that also completes the key, commit, respond. A panic in h leaves the
// claim in progress until its lock deadline, exactly as a crashed process
// would; a retry after that runs again (the transaction never committed).
func (m *Middleware) Wrap(h HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := ParseKey(r.Header.Values(Header))
		if err != nil {
			m.WriteError(w, r, err)
			return
		}
		body, err := m.readBody(w, r)
		if err != nil {
			m.WriteError(w, r, err)
			return
		}
		canon, err := Canonical(body)
		if err != nil {
			m.WriteError(w, r, apperr.Wrap(apperr.BadRequest, err, "malformed JSON: %s", err.Error()))
			return
		}
		tenantID := m.Tenant(r)
		res, err := m.Store.Begin(r.Context(), tenantID, key, Fingerprint(r.Method, r.URL.Path, canon))
		if err != nil {
			m.WriteError(w, r, err)
			return
		}
		switch res.Decision {
		case Replay:
			res.Stored.Header.Set("Idempotent-Replayed", "true")
			write(w, res.Stored)
		case InProgress:
			w.Header().Set("Retry-After", "1")
			m.WriteError(w, r, apperr.New(apperr.Conflict,
				"a request with this Idempotency-Key is still in progress: retry shortly to get its response"))
		case Mismatch:
			m.WriteError(w, r, apperr.InvalidFields(map[string]string{
				Header: "was already used for a different request (method, path or body): use a new key for a new request"}))
		case Claimed:
			m.run(w, r, h, res.Claim, body)
		}
	}
}

// handlerError carries h's error out of the transaction.
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }
func (e handlerError) Unwrap() error { return e.err }

func (m *Middleware) run(w http.ResponseWriter, r *http.Request, h HandlerFunc, c Claim, body []byte) {
	ctx := r.Context()
	var out Response
	err := db.InTx(ctx, m.Store.DB, func(tx *sqlx.Tx) error {
		status, hdr, respBody, herr := h(ctx, tx, r, body)
		if herr != nil {
			return handlerError{herr}
		}
		if hdr == nil {
			hdr = http.Header{}
		}
		out = Response{Status: status, Header: hdr, Body: respBody}
		if status >= 500 {
			return errServerStatus
		}
		return m.Store.Complete(ctx, tx, c, out)
	})
	var he handlerError
	switch {
	case err == nil:
		write(w, out)
	case errors.Is(err, errServerStatus):
		m.release(r, c)
		write(w, out)
	case errors.Is(err, ErrClaimLost):
		// A retry took the claim over after our lock deadline; our write
		// rolled back, the retry's outcome is the one that counts.
		w.Header().Set("Retry-After", "1")
		m.WriteError(w, r, apperr.New(apperr.Conflict,
			"this request took too long and was superseded by a retry with the same Idempotency-Key: retry to get its response"))
	case errors.As(err, &he):
		m.finishWithError(w, r, c, he.err)
	default:
		m.release(r, c)
		m.WriteError(w, r, err)
	}
}

var errServerStatus = errors.New("idempotency: handler answered 5xx")

// finishWithError stores a 4xx outcome (replays return it too) and
// releases the key for a 5xx, so the client may retry.
func (m *Middleware) finishWithError(w http.ResponseWriter, r *http.Request, c Claim, herr error) {
	rec := &recorder{header: http.Header{}}
	m.WriteError(rec, r, herr)
	resp := Response{Status: rec.status, Header: rec.header, Body: rec.body}
	if resp.Status >= 500 || resp.Status == 0 {
		m.release(r, c)
		write(w, resp)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if err := m.Store.Complete(ctx, m.Store.DB, c, resp); err != nil && !errors.Is(err, ErrClaimLost) {
		m.release(r, c)
		m.WriteError(w, r, err)
		return
	}
	write(w, resp)
}

func (m *Middleware) release(r *http.Request, c Claim) {
	// The request's context may be cancelled (client gone): still release.
	if err := m.Store.Release(context.WithoutCancel(r.Context()), c); err != nil && m.Log != nil {
		m.Log.WarnContext(r.Context(), "idempotency: release claim", "err", err)
	}
}

func (m *Middleware) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return nil, apperr.New(apperr.BadRequest, "Content-Type must be application/json")
		}
	}
	limit := m.MaxBody
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

// write sends a response exactly as stored.
func write(w http.ResponseWriter, resp Response) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
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
