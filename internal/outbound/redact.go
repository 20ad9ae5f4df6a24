package outbound

import (
	"errors"
	"net/url"
	"strings"
)

// sensitiveParams are query parameters that carry credentials (the Graph API
// takes access_token in the query); they must never reach logs or run records.
var sensitiveParams = map[string]bool{
	"access_token": true, "token": true, "key": true, "api_key": true, "apikey": true,
	"secret": true, "client_secret": true, "password": true, "signature": true, "sig": true,
	"appsecret_proof": true, "code": true, "auth": true,
}

// RedactURL returns raw with credentials in the userinfo and query replaced,
// for error messages and logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			if sensitiveParams[strings.ToLower(k)] {
				q[k] = []string{"REDACTED"}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// unwrapURLError drops net/http's *url.Error, whose message repeats the full
// URL including any access_token; callers add a redacted URL themselves.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
