package webhooks

import (
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks/kinds"
)

// touchRecord is the attribution and consent a mapped record carries, for
// leads.RecordTouches (nil: none).
func touchRecord(l kinds.Lead) *leads.TouchRecord {
	if l.Touch == nil && l.Consent == nil {
		return nil
	}
	tr := &leads.TouchRecord{}
	if l.Touch != nil {
		tr.First, tr.Last = l.Touch.First, l.Touch.Last
	}
	if c := l.Consent; c != nil {
		tr.Consent = &leads.Consent{Purpose: c.Purpose, Text: c.Text, TextSHA256: c.TextSHA256, Granted: c.Granted,
			At: c.At, IP: c.IP, FormID: c.FormID}
	}
	return tr
}
