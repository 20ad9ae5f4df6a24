package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"leadpipe/internal/apperr"
)

// Problem is an RFC 9457 problem details body.
type Problem struct {
	Type   string            `json:"type"`
	Title  string            `json:"title"`
	Status int               `json:"status"`
	Detail string            `json:"detail,omitempty"`
	Errors map[string]string `json:"errors,omitempty"`
}

// StatusOf is the one mapping from domain error codes to HTTP statuses.
func StatusOf(code apperr.Code) int {
	switch code {
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.Invalid:
		return http.StatusUnprocessableEntity
	case apperr.BadRequest:
		return http.StatusBadRequest
	case apperr.Unauthorized:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case apperr.PreconditionFailed:
		return http.StatusPreconditionFailed
	case apperr.PreconditionNeeded:
		return http.StatusPreconditionRequired
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.UnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	case apperr.TooManyRequests:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// WriteError writes err as problem+json. Internal errors are logged once
// and shown as a generic message; an unreachable database is a 503 with
// Retry-After.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e := asAppError(err)
	status := StatusOf(e.Code)
	if status >= 500 && log != nil {
		log.ErrorContext(r.Context(), "request failed", "err", err, "status", status)
	}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", "5")
		}
	}
	WriteProblem(w, r, status, e.Message, e.Fields)
}

// asAppError is err as a domain error; anything else is Unavailable when the
// database did not answer, else Internal (its message never shown).
func asAppError(err error) *apperr.Error {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e
	}
	if apperr.IsUnavailable(err) {
		return apperr.Wrap(apperr.Unavailable, err, "the database is unavailable, retry later")
	}
	return apperr.Wrap(apperr.Internal, err, "internal error")
}

// WriteProblem writes a problem+json body with the given status.
func WriteProblem(w http.ResponseWriter, r *http.Request, status int, detail string, fields map[string]string) {
	// The request id travels in the X-Request-Id header, not the body, so
	// equal errors have byte-identical bodies (unknown tenant vs source).
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Errors: fields}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeResult answers a handler's one call: err as a problem, else v as JSON
// with status.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	WriteJSON(w, status, v)
}

// writeCreated answers a POST that made something: err as a problem, else
// v as 201 JSON with the Location it now lives at. secret: v carries a
// secret shown this once, which no cache may keep.
func (s *Server) writeCreated(w http.ResponseWriter, r *http.Request, location string, secret bool, v any, err error) {
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	if secret {
		w.Header().Set("Cache-Control", "no-store")
	}
	w.Header().Set("Location", location)
	WriteJSON(w, http.StatusCreated, v)
}

// decodeBody reads the JSON body into a T (DecodeJSON); false when it has
// answered with the problem.
func decodeBody[T any](s *Server, w http.ResponseWriter, r *http.Request) (T, bool) {
	return decodeAfter[T](s, w, r, nil, DecodeJSON)
}

// decodeAfter is decodeBody for a write to something looked up first
// (found: the lookup's error), so that another tenant's id answers 404
// before the body is looked at; decode is DecodeJSON, or
// DecodeOptionalJSON where the body may be absent.
func decodeAfter[T any](s *Server, w http.ResponseWriter, r *http.Request, found error, decode func(http.ResponseWriter, *http.Request, any) error) (T, bool) {
	var v T
	err := found
	if err == nil {
		err = decode(w, r, &v)
	}
	if err != nil {
		WriteError(w, r, s.Log, err)
		return v, false
	}
	return v, true
}

// decodeAndWrite answers a request whose JSON body is call's one input:
// the body decoded into an In (decodeBody), then call's result as 200 JSON.
func decodeAndWrite[In, Out any](s *Server, w http.ResponseWriter, r *http.Request, call func(in In) (Out, error)) {
	if in, ok := decodeBody[In](s, w, r); ok {
		out, err := call(in)
		s.writeResult(w, r, http.StatusOK, out, err)
	}
}

// tenantResult answers a request about something the tenant has one of (a
// setting, a rule): call's value for the tenant as 200 JSON.
func tenantResult[T any](s *Server, call func(ctx context.Context, tenantID string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := call(r.Context(), Tenant(r))
		s.writeResult(w, r, http.StatusOK, v, err)
	}
}

// tenantPut answers a PUT that replaces such a thing: the body decoded
// into an In (decodeAndWrite) goes to put, its result is the answer.
func tenantPut[In, Out any](s *Server, put func(ctx context.Context, tenantID string, in In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		decodeAndWrite(s, w, r, func(in In) (Out, error) {
			return put(r.Context(), Tenant(r), in)
		})
	}
}

// writeNoContent answers 204, or err as a problem.
func (s *Server) writeNoContent(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		WriteError(w, r, s.Log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeQueued answers 202 with how many deliveries were queued, or err.
func (s *Server) writeQueued(w http.ResponseWriter, r *http.Request, n int, err error) {
	s.writeResult(w, r, http.StatusAccepted, map[string]int{"queued": n}, err)
}

// nonNil is items, or an empty list for none: JSON [] rather than null.
func nonNil[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}

// listBody is the body of a list the API sends whole: it has no next page.
func listBody(items any) map[string]any {
	return map[string]any{"items": items, "next_cursor": nil}
}
