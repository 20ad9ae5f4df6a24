// Package apperr defines domain errors with codes. Exactly one function
// (web.writeError) maps them to HTTP statuses.
package apperr

import (
	"errors"
	"fmt"
)

// Code classifies a domain error.
type Code string

const (
	NotFound             Code = "not_found"              // 404
	Conflict             Code = "conflict"               // 409
	Invalid              Code = "invalid"                // 422
	BadRequest           Code = "bad_request"            // 400
	Unauthorized         Code = "unauthorized"           // 401
	Forbidden            Code = "forbidden"              // 403
	MethodNotAllowed     Code = "method_not_allowed"     // 405
	PreconditionFailed   Code = "precondition_failed"    // 412
	PreconditionNeeded   Code = "precondition_required"  // 428
	TooLarge             Code = "too_large"              // 413
	UnsupportedMediaType Code = "unsupported_media_type" // 415
	Unavailable          Code = "unavailable"            // 503
	TooManyRequests      Code = "too_many_requests"      // 429
	Internal             Code = "internal"               // 500
)

// Error is a domain error. Message is safe to show to clients; Fields lists
// offending input fields (for 422).
type Error struct {
	Code    Code
	Message string
	Fields  map[string]string
	Err     error // wrapped cause, never shown to clients
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns a domain error with a client-safe message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a domain error that keeps err as its cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// InvalidFields returns a 422 error naming the offending fields.
func InvalidFields(fields map[string]string) *Error {
	return &Error{Code: Invalid, Message: "validation failed", Fields: fields}
}

// CodeOf returns the code of err, Internal when it is not a domain error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err is a domain error with the given code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
