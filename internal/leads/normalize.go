package leads

import "strings"

// Normalized contact keys (docs/ARCHITECTURE.md, "Merged leads"): what "the same email" and "the
// same phone" mean for possible duplicates. Every statement that writes a
// lead's email or phone writes these too (leads.email_norm, phone_norm);
// migration 0711 back-fills older rows with the same rules in SQL.

// NormalizeEmail trims an email and lower-cases it.
func NormalizeEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}

// NormalizePhone reduces a phone number to its E.164 digits: digits only,
// with '+' in front when it was written in international form ("+49 …" or
// "0049 …", whose 00 is dropped). Without a country code the national
// digits are kept as they are (Leadpipe does not guess the country), and
// anything with fewer than 7 or more than 15 digits is no usable number
// (""), so junk such as "n/a" or an extension alone matches nothing.
func NormalizePhone(phone string) string {
	p := strings.TrimSpace(phone)
	intl := strings.HasPrefix(p, "+")
	var b strings.Builder
	b.Grow(len(p) + 1)
	for _, r := range p {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	d := b.String()
	if !intl && strings.HasPrefix(p, "00") {
		intl, d = true, d[2:]
	}
	if len(d) < 7 || len(d) > 15 {
		return ""
	}
	if intl {
		return "+" + d
	}
	return d
}
