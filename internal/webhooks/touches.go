package webhooks

import (
	"leadpipe/internal/leads"
	"leadpipe/internal/webhooks/kinds"
)

// touchRecords are the attribution and consent the mapped records of a
// batch carry, for leads.RecordTouches (outcomes in the records' order).
func touchRecords(mapped []kinds.Lead, outcomes []leads.UpsertOutcome) []leads.TouchRecord {
	var out []leads.TouchRecord
	for i, l := range mapped {
		if i >= len(outcomes) || outcomes[i].LeadID == "" || (l.Touch == nil && l.Consent == nil) {
			continue
		}
		tr := leads.TouchRecord{LeadID: outcomes[i].LeadID}
		if l.Touch != nil {
			tr.First, tr.Last = l.Touch.First, l.Touch.Last
		}
		if c := l.Consent; c != nil {
			tr.Consent = &leads.Consent{Purpose: c.Purpose, Text: c.Text, TextSHA256: c.TextSHA256, Granted: c.Granted,
				At: c.At, IP: c.IP, FormID: c.FormID}
		}
		out = append(out, tr)
	}
	return out
}
