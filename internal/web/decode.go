package web

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"

	"leadpipe/internal/apperr"
)

// MaxAPIBody caps JSON request bodies of the API.
const MaxAPIBody = 1 << 20

// ReadBody reads the whole body up to MaxAPIBody (413 beyond).
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxAPIBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apperr.New(apperr.TooLarge, "request body is larger than 1 MiB")
		}
		return nil, apperr.Wrap(apperr.BadRequest, err, "could not read the request body")
	}
	return b, nil
}

// DecodeJSON reads a JSON object body into v: malformed JSON is 400, a
// wrong content type 415-ish (reported as 400 with a clear message).
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "application/json" && mt != "application/merge-patch+json" {
			return apperr.New(apperr.BadRequest, "Content-Type must be application/json")
		}
	}
	b, err := ReadBody(w, r)
	if err != nil {
		return err
	}
	return UnmarshalBody(b, v)
}

// DecodeOptionalJSON is DecodeJSON for a body that may be absent (an empty
// body leaves v as it is).
func DecodeOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := ReadBody(w, r)
	if err != nil || len(b) == 0 {
		return err
	}
	return UnmarshalBody(b, v)
}

// UnmarshalBody decodes b into v with the API's error conventions.
func UnmarshalBody(b []byte, v any) error {
	if len(b) == 0 {
		return apperr.New(apperr.BadRequest, "request body is empty: send a JSON object")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return apperr.InvalidFields(map[string]string{te.Field: "has the wrong type (want " + te.Type.String() + ")"})
		}
		return apperr.Wrap(apperr.BadRequest, err, "malformed JSON: %s", err.Error())
	}
	return nil
}
