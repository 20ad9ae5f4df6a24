package components

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

var statuses = []string{"new", "contacted", "qualified", "unqualified", "won", "lost"}

// Statuses lists the lead statuses in pipeline order.
func Statuses() []string { return append([]string(nil), statuses...) }

// StatusLabel is the human label of a lead status; unknown values are
// shown capitalised rather than hidden.
func StatusLabel(status string) string {
	switch status {
	case "new":
		return "New"
	case "contacted":
		return "Contacted"
	case "qualified":
		return "Qualified"
	case "unqualified":
		return "Unqualified"
	case "won":
		return "Won"
	case "lost":
		return "Lost"
	case "":
		return "Unknown"
	}
	r, n := utf8.DecodeRuneInString(status)
	return string(unicode.ToUpper(r)) + strings.ReplaceAll(status[n:], "_", " ")
}

func statusClass(status string) string {
	for _, s := range statuses {
		if s == status {
			return "badge status-" + s
		}
	}
	return "badge badge-neutral"
}

// Tones of a generic Badge.
const (
	ToneNeutral = "neutral"
	ToneInfo    = "info"
	ToneSuccess = "success"
	ToneWarning = "warning"
	ToneDanger  = "danger"
	ToneAccent  = "accent"
)

func badgeClass(tone string) string {
	switch tone {
	case ToneInfo, ToneSuccess, ToneWarning, ToneDanger, ToneAccent:
		return "badge badge-" + tone
	}
	return "badge badge-neutral"
}
