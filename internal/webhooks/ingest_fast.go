package webhooks

import (
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/monitor"
)

// answerKnownDuplicate answers a duplicate whose original this process
// knows to be committed without the database (the fast path, dupfast.go):
// done reports that w has its answer. When it is not done, orig is our row
// id of an original it knows but could not tally (the claim then counts
// it through the primary key), or "" for a delivery id it does not know.
func (in *Ingest) answerKnownDuplicate(w http.ResponseWriter, r *http.Request, tenantID, sourceID, deliveryID string, now time.Time) (orig string, done bool) {
	orig, done = in.Claimer.Answer(tenantID, sourceID, deliveryID, now)
	if !done {
		return orig, false
	}
	in.Stats.Add(tenantID, sourceID, monitor.Deliveries, 1, now)
	in.Stats.Add(tenantID, sourceID, monitor.Duplicates, 1, now)
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("leadpipe.delivery.outcome", "duplicate"), attribute.String("leadpipe.delivery.original", orig),
			attribute.Bool("leadpipe.delivery.from_memory", true))
	}
	writeDuplicateAck(w, orig)
	return orig, true
}

// writeDuplicateAck writes 200 {"status":"duplicate","delivery_id":…} as
// web.WriteJSON would (our row ids are ULIDs: nothing to escape), without
// reflection.
func writeDuplicateAck(w http.ResponseWriter, orig string) {
	var buf [96]byte
	b := append(buf[:0], `{"status":"duplicate","delivery_id":"`...)
	b = append(b, orig...)
	b = append(b, "\"}\n"...)
	h := w.Header()
	h["Content-Type"] = []string{"application/json"} // canonical keys: no canonicalising
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
