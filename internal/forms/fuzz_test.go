package forms

import (
	"strings"
	"testing"
	"time"
)

// FuzzCheckToken: no input panics, and only a token signed with a live
// secret for this form, within its age, passes.
func FuzzCheckToken(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add(NewToken("secret", "form1", now.Add(-time.Minute)))
	f.Add("v1.form1.0.00.")
	f.Add("v1....")
	f.Add(strings.Repeat(".", 50))
	f.Fuzz(func(t *testing.T, tok string) {
		at, err := CheckToken(tok, []string{"secret"}, "form1", now)
		if err != nil {
			return
		}
		parts := strings.Split(tok, ".")
		if tokenSig("secret", strings.Join(parts[:4], ".")) != parts[4] || parts[1] != "form1" || now.Sub(at) > TokenMaxAge {
			t.Fatalf("accepted %q", tok)
		}
	})
}
