package web

import (
	"context"

	"leadpipe/internal/leads"
	leadviews "leadpipe/views/leads"
)

// leadOrigin is the lead page's "Where this lead came from" card: the
// attribution and consents a web form recorded (nil when none).
func (s *Server) leadOrigin(ctx context.Context, tenantID, leadID string) (*leadviews.Origin, error) {
	ex, err := s.Leads.Extras(ctx, tenantID, leadID)
	if err != nil || (ex.Attribution == nil && len(ex.Consents) == 0) {
		return nil, err
	}
	o := &leadviews.Origin{}
	if a := ex.Attribution; a != nil {
		o.First, o.FirstAt = leadviews.Touch(a.First)
		o.Last, o.LastAt = leadviews.Touch(a.Last)
		o.Campaign = a.Last["utm_campaign"]
		if o.Campaign == "" {
			o.Campaign = a.First["utm_campaign"]
		}
	}
	for _, c := range ex.Consents {
		o.Consents = append(o.Consents, consentItem(c))
	}
	return o, nil
}

func consentItem(c leads.Consent) leadviews.ConsentItem {
	return leadviews.ConsentItem{Purpose: c.Purpose, Text: c.Text, Granted: c.Granted, At: c.At}
}
