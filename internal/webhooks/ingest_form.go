package webhooks

import (
	"context"
	"time"

	"leadpipe/internal/clip"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/monitor"
)

// FormSubmission is a web form's submission as internal/forms checked it
// (token, spam rules, captcha): a delivery of the form's own source whose
// delivery id is the submission token (or the body's hash), stored by the
// same claim as every webhook delivery.
type FormSubmission struct {
	TenantID, SourceID string
	DeliveryID         string // kinds.NormalizeID'd by the caller
	Payload            []byte // a kinds.FormRecord
	// Hold, when set, stores the submission `failed` with this reason
	// instead of processing it (a captcha that could not be checked): an
	// admin reprocesses it.
	Hold string
}

// ReceiveForm claims a form submission exactly as Receive claims a
// webhook's delivery: accepted only once its row is committed, duplicate
// when the delivery id was claimed before (counted on the original), then
// dispatched to the worker (a held submission is not).
func (in *Ingest) ReceiveForm(ctx context.Context, s FormSubmission) (Ack, error) {
	start := time.Now()
	result := "error"
	defer func() { in.Stats.ObserveIngest("form", result, time.Since(start)) }()
	now := in.now()
	if orig, done := in.answerKnownDuplicate(ctx, s.TenantID, s.SourceID, s.DeliveryID, now); done {
		result = AckDuplicate
		return Ack{Status: AckDuplicate, DeliveryID: orig}, nil
	}
	d := Delivery{TenantID: s.TenantID, SourceID: s.SourceID, ID: ids.New(), DeliveryID: s.DeliveryID,
		Origin: "form", Payload: s.Payload, ReceivedAt: now}
	if s.Hold != "" {
		reason := clip.Bytes(s.Hold, maxErrorLen, "")
		d.State, d.LastError = "failed", &reason
	}
	isNew, orig, err := in.Claimer.Claim(ctx, d)
	if err != nil {
		return Ack{}, db.MapErr(err, "", "")
	}
	in.Stats.Add(s.TenantID, s.SourceID, monitor.Deliveries, 1, now)
	if !isNew {
		in.Stats.Add(s.TenantID, s.SourceID, monitor.Duplicates, 1, now)
		result = AckDuplicate
		return Ack{Status: AckDuplicate, DeliveryID: orig}, nil
	}
	if s.Hold != "" {
		in.Stats.Add(s.TenantID, s.SourceID, monitor.ProcessingFailures, 1, now)
	} else {
		in.Dispatch.Dispatch(s.TenantID, []string{d.ID})
	}
	result = AckAccepted
	return Ack{Status: AckAccepted, DeliveryID: d.ID}, nil
}
