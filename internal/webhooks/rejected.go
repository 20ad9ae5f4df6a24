package webhooks

import (
	"time"

	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// RejectionSink keeps refused requests for the rejected-request inspector
// (rejections.Recorder: sampled in memory, written in the background, so a
// flood of bad requests costs the ingest path almost nothing).
type RejectionSink interface {
	Offer(tenantID, sourceID string, q rejections.Request)
}

// recordRejection offers a request the endpoint refused with 401, 413 or
// an unusable source kind. err names the reason (kinds.RejectReason); a
// nil err with reason set is used for too_large.
func (in *Ingest) recordRejection(c Call, res sources.Resolved, reason string, err error, body []byte, now time.Time) {
	if in.Rejections == nil {
		return
	}
	var skew *int64
	if err != nil {
		reason, skew = kinds.RejectReason(err)
	}
	in.Rejections.Offer(res.TenantID, res.Source.ID, rejections.Request{At: now, Reason: reason, SkewSeconds: skew,
		Header: c.Header, RemoteAddr: c.RemoteAddr, ContentLength: c.ContentLength, Body: body, Secrets: res.Secrets})
}
