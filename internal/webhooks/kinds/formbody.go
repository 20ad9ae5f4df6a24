package kinds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strings"
)

// Form bodies (docs/SENDERS.md, "Form-encoded bodies"): Unbounce, Gravity
// Forms, Contact Form 7 and Jotform post application/x-www-form-urlencoded
// or multipart/form-data. After the signature check on the raw bytes, the
// fields become one JSON object, which is what is stored, mapped and
// previewed: a field sent once is a string, a field sent several times an
// array of strings, and Unbounce's data.json field is unpacked into an
// object.
const (
	MaxFormFields    = 1000     // fields in one body
	MaxFormFieldSize = 64 << 10 // bytes in one field's value
)

// Why a form body was refused (the rejected-request inspector's reason);
// each also matches ErrFormBody.
var (
	ErrFormBody      = errors.New("unusable form body")
	ErrFormFields    = fmt.Errorf("%w: more than %d fields", ErrFormBody, MaxFormFields)
	ErrFormFieldSize = fmt.Errorf("%w: a field is larger than %d KiB", ErrFormBody, MaxFormFieldSize>>10)
	ErrFormFile      = fmt.Errorf("%w: file uploads are not accepted; send the fields only", ErrFormBody)
	errFormSyntax    = fmt.Errorf("%w: the body does not parse as its Content-Type says", ErrFormBody)
)

// IsFormBody reports whether a Content-Type is a form encoding FormJSON
// converts.
func IsFormBody(contentType string) bool {
	// The common JSON case costs no parse (the ingest hot path).
	if len(contentType) < 19 || (contentType[0]|0x20 != 'a' && contentType[0]|0x20 != 'm') {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data")
}

// FormJSON turns a form body into the JSON object it stands for. Bodies of
// other content types are returned as they are.
func FormJSON(contentType string, body []byte) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return body, nil
	}
	var fields []formField
	switch mt {
	case "application/x-www-form-urlencoded":
		fields, err = urlencodedFields(body)
	case "multipart/form-data":
		fields, err = multipartFields(body, params["boundary"])
	default:
		return body, nil
	}
	if err != nil {
		return nil, err
	}
	return fieldsJSON(fields)
}

type formField struct{ name, value string }

func urlencodedFields(body []byte) ([]formField, error) {
	if n := bytes.Count(body, []byte{'&'}) + bytes.Count(body, []byte{';'}) + 1; n > MaxFormFields {
		return nil, ErrFormFields
	}
	var out []formField
	for _, pair := range strings.Split(string(body), "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return nil, errFormSyntax
		}
		if len(value) > MaxFormFieldSize {
			return nil, ErrFormFieldSize
		}
		out = append(out, formField{name, value})
	}
	return out, nil
}

func multipartFields(body []byte, boundary string) ([]formField, error) {
	if boundary == "" {
		return nil, errFormSyntax
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var out []formField
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, errFormSyntax
		}
		if p.FileName() != "" {
			return nil, ErrFormFile
		}
		if len(out) == MaxFormFields {
			return nil, ErrFormFields
		}
		v, err := io.ReadAll(io.LimitReader(p, MaxFormFieldSize+1))
		if err != nil {
			return nil, errFormSyntax
		}
		if len(v) > MaxFormFieldSize {
			return nil, ErrFormFieldSize
		}
		out = append(out, formField{p.FormName(), string(v)})
	}
}

// fieldsJSON keeps the fields' order (first appearance) in the object.
func fieldsJSON(fields []formField) ([]byte, error) {
	order := []string{}
	vals := map[string][]string{}
	for _, f := range fields {
		if _, seen := vals[f.name]; !seen {
			order = append(order, f.name)
		}
		vals[f.name] = append(vals[f.name], f.value)
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, name := range order {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		vs := vals[name]
		var v []byte
		switch {
		case name == "data.json" && len(vs) == 1 && json.Valid([]byte(vs[0])) && strings.HasPrefix(strings.TrimSpace(vs[0]), "{"):
			var c bytes.Buffer
			_ = json.Compact(&c, []byte(vs[0]))
			v = c.Bytes()
		case len(vs) == 1:
			v, _ = json.Marshal(vs[0])
		default:
			v, _ = json.Marshal(vs)
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	out := buf.Bytes()
	if err := checkBody(out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormBody, err)
	}
	return out, nil
}
