package events

import (
	"context"
	"time"

	"leadpipe/internal/db"
)

// A person's data in the outbox (docs/ARCHITECTURE.md, "Personal data"): the events about a lead
// (resource_id) carry the lead in their body, and an endpoint's answer to
// one may echo it in the attempt's response.

// ResourceEvent is one event about a resource with what became of it: its
// deliveries per endpoint and every attempt.
type ResourceEvent struct {
	EventView
	Attempts []Attempt `json:"attempts"`
}

// AboutResource lists the events about a resource, oldest first, with
// their deliveries and attempts (index ix_events_resource, then one
// statement per event for each).
func AboutResource(ctx context.Context, x db.Ext, tenantID, resourceID string) ([]ResourceEvent, error) {
	var rows []EventRow
	if err := x.SelectContext(ctx, &rows, `SELECT tenant_id, id, type, resource_id, sequence, body, created_at, pending
FROM events WHERE tenant_id = ? AND resource_id = ? ORDER BY sequence, id`, tenantID, resourceID); err != nil {
		return nil, err
	}
	out := make([]ResourceEvent, len(rows))
	for i, r := range rows {
		out[i].EventView = view(r)
		ds, err := listDeliveriesOfEvent(ctx, x, tenantID, r.ID)
		if err != nil {
			return nil, err
		}
		out[i].Deliveries = ds
		as, err := listAttempts(ctx, x, tenantID, "event_id", r.ID, "", 10000)
		if err != nil {
			return nil, err
		}
		if as == nil {
			as = []Attempt{}
		}
		out[i].Attempts = as
	}
	return out, nil
}

// ErasedResource counts what EraseResource blanked.
type ErasedResource struct {
	Events   int64
	Attempts int64
}

// ErasedReason is what a delivery of an erased event says instead of
// being sent.
const ErasedReason = "the event's data was erased"

// EraseResource blanks, in the caller's transaction, the bodies of the
// events about a resource and the responses and errors of their attempts,
// and fails their deliveries still waiting to be sent (an empty body is
// never sent: Deliver and Replay refuse it). The rows stay, so sequences
// and counts stay whole.
func EraseResource(ctx context.Context, x db.Ext, tenantID, resourceID string, now time.Time) (ErasedResource, error) {
	var out ErasedResource
	var ids []string
	if err := x.SelectContext(ctx, &ids, `SELECT id FROM events WHERE tenant_id = ? AND resource_id = ? ORDER BY id FOR UPDATE`,
		tenantID, resourceID); err != nil {
		return out, err
	}
	if len(ids) == 0 {
		return out, nil
	}
	in, inArgs := inIDs(ids)
	res, err := x.ExecContext(ctx, `UPDATE events SET body = '' WHERE tenant_id = ? AND id IN (`+in+`)`, append([]any{tenantID}, inArgs...)...)
	if err != nil {
		return out, err
	}
	out.Events, _ = res.RowsAffected()
	res, err = x.ExecContext(ctx, `UPDATE event_attempts SET response = '', error = IF(error IS NULL, NULL, '')
WHERE tenant_id = ? AND event_id IN (`+in+`)`, append([]any{tenantID}, inArgs...)...)
	if err != nil {
		return out, err
	}
	out.Attempts, _ = res.RowsAffected()
	_, err = x.ExecContext(ctx, `UPDATE event_deliveries SET state = 'failed', last_error = ?, queued_by = NULL, updated_at = ?
WHERE tenant_id = ? AND event_id IN (`+in+`) AND state IN ('pending', 'queued')`, append([]any{ErasedReason, now, tenantID}, inArgs...)...)
	return out, err
}
