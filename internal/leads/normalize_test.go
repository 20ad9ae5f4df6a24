package leads_test

import (
	"testing"

	"leadpipe/internal/leads"
)

func TestNormalizeContactKeys(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"+1 (555) 123-4567", "+15551234567"},
		{"0049 30 1234567", "+49301234567"},
		{"030 1234567", "0301234567"},
		{"555-12", ""},
		{"n/a", ""},
		{"+1234567890123456", ""},
		{"", ""},
	} {
		if got := leads.NormalizePhone(c.in); got != c.want {
			t.Errorf("NormalizePhone(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := leads.NormalizeEmail("  Jo@Example.COM "); got != "jo@example.com" {
		t.Errorf("NormalizeEmail = %q", got)
	}
}
