package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// deliverPayload is the task payload of one attempt.
type deliverPayload struct {
	TenantID   string `json:"t"`
	DeliveryID string `json:"d"`
	Attempt    int    `json:"n"`
}

// TaskID is the identity of one delivery attempt.
func TaskID(deliveryID string, attempt int) string {
	return "evd:" + deliveryID + ":" + strconv.Itoa(attempt)
}

type queuedRow struct {
	ID       string `db:"id"`
	Attempts int    `db:"attempts"`
}

// Pump tops the endpoint's in-flight attempts up to MaxInFlight with its
// due pending deliveries and enqueues them.
func (s *Service) Pump(ctx context.Context, tenantID, endpointID string) error {
	var token string
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		var err error
		token, err = s.claimDue(ctx, tx, tenantID, endpointID, s.now())
		return err
	})
	if err != nil {
		return err
	}
	return s.enqueueClaimed(ctx, tenantID, endpointID, token)
}

// claimDue marks up to MaxInFlight minus the in-flight count of due
// deliveries queued under a fresh token (or returns ""). The endpoint row
// lock serialises the pumps of one endpoint, so the limit holds.
func (s *Service) claimDue(ctx context.Context, tx db.Ext, tenantID, endpointID string, now time.Time) (string, error) {
	var enabled bool
	err := tx.GetContext(ctx, &enabled, `SELECT enabled FROM event_endpoints WHERE tenant_id = ? AND id = ? FOR UPDATE`, tenantID, endpointID)
	if isNoRows(err) || (err == nil && !enabled) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var inflight int
	if err := tx.GetContext(ctx, &inflight, `SELECT COUNT(*) FROM event_deliveries
WHERE tenant_id = ? AND endpoint_id = ? AND state IN ('queued', 'sending')`, tenantID, endpointID); err != nil {
		return "", err
	}
	free := s.maxInFlight() - inflight
	if free <= 0 {
		return "", nil
	}
	// The due ids first, without locking, then an update by primary key:
	// an UPDATE that walked the endpoint index would lock index entries
	// before rows, the opposite order of an attempt's update by id, and
	// the two deadlock under load. The endpoint row lock keeps other
	// claims of this endpoint out meanwhile; state is checked again.
	var due []string
	if err := tx.SelectContext(ctx, &due, `SELECT id FROM event_deliveries
WHERE tenant_id = ? AND endpoint_id = ? AND state = 'pending' AND next_attempt_at <= ?
ORDER BY next_attempt_at LIMIT ?`, tenantID, endpointID, now, free); err != nil {
		return "", err
	}
	if len(due) == 0 {
		return "", nil
	}
	token := ids.New()
	q, args := inIDs(due)
	res, err := tx.ExecContext(ctx, `UPDATE event_deliveries SET state = 'queued', queued_by = ?, queued_at = ?, updated_at = ?
WHERE tenant_id = ? AND id IN (`+q+`) AND state = 'pending'`, append([]any{token, now, now, tenantID}, args...)...)
	if err != nil {
		return "", err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return "", nil
	}
	return token, nil
}

// enqueueClaimed sends the attempts queued under token to Asynq. A failure
// leaves them queued; the sweeper puts them back after RequeueAfter.
func (s *Service) enqueueClaimed(ctx context.Context, tenantID, endpointID, token string) error {
	if token == "" {
		return nil
	}
	var rows []queuedRow
	if err := s.DB.SelectContext(ctx, &rows, `SELECT id, attempts FROM event_deliveries
WHERE tenant_id = ? AND endpoint_id = ? AND state = 'queued' AND queued_by = ?`, tenantID, endpointID, token); err != nil {
		return err
	}
	var errs []error
	for _, r := range rows {
		n := r.Attempts + 1
		b, _ := json.Marshal(deliverPayload{TenantID: tenantID, DeliveryID: r.ID, Attempt: n})
		_, err := s.Queue.EnqueueContext(ctx, asynq.NewTask(TypeDeliver, b), asynq.TaskID(TaskID(r.ID, n)),
			asynq.Queue(Queue), asynq.MaxRetry(3), asynq.Timeout(s.timeout()+15*time.Second))
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
			errs = append(errs, fmt.Errorf("enqueue %s: %w", TaskID(r.ID, n), err))
		}
	}
	return errors.Join(errs...)
}

// SweepTenant repairs what a Redis outage or a crash left: queued attempts
// whose enqueue may have been lost, attempts whose worker died, due retries
// (pumped), and endpoints failing for DisableAfter (disabled, alerted).
func (s *Service) SweepTenant(ctx context.Context, tenantID string) error {
	now := s.now()
	if err := s.sweepRows(ctx, tenantID, `state = 'queued' AND queued_at < ?`, []any{now.Add(-s.requeueAfter())},
		`state = 'pending', queued_by = NULL, updated_at = ?`, []any{now}); err != nil {
		return err
	}
	if err := s.sweepRows(ctx, tenantID, `state = 'sending' AND lease_until < ?`, []any{now},
		`state = IF(attempts - schedule_base >= ?, 'failed', 'pending'), next_attempt_at = ?, lease_until = NULL,
    last_error = 'the worker running the attempt stopped before it finished', updated_at = ?`, []any{MaxAttempts, now, now}); err != nil {
		return err
	}
	var failing []string
	if err := s.DB.SelectContext(ctx, &failing, `SELECT id FROM event_endpoints
WHERE tenant_id = ? AND enabled = 1 AND failing_since IS NOT NULL AND failing_since <= ?`, tenantID, now.Add(-DisableAfter)); err != nil {
		return err
	}
	for _, id := range failing {
		if err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			ep, err := getEndpoint(ctx, tx, tenantID, id, true)
			if err != nil {
				return err
			}
			return s.disable(ctx, tx, ep, failingReason(ep), now)
		}); err != nil {
			return err
		}
	}
	var due []string
	if err := s.DB.SelectContext(ctx, &due, `SELECT DISTINCT endpoint_id FROM event_deliveries
WHERE tenant_id = ? AND state = 'pending' AND next_attempt_at <= ?`, tenantID, now); err != nil {
		return err
	}
	var errs []error
	for _, id := range due {
		if err := s.Pump(ctx, tenantID, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func failingReason(ep Endpoint) string {
	since := ""
	if ep.FailingSince != nil {
		since = " since " + ep.FailingSince.UTC().Format(time.RFC3339)
	}
	return "every delivery failed for 5 days" + since
}

// disable turns an enabled endpoint off by itself (410, 5 days failing),
// fails what it still had to send and opens the endpoint_disabled alert.
func (s *Service) disable(ctx context.Context, tx db.Ext, ep Endpoint, reason string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE event_endpoints SET enabled = 0, disabled_reason = ?, disabled_at = ?, updated_at = ?
WHERE tenant_id = ? AND id = ? AND enabled = 1`, reason, now, now, ep.TenantID, ep.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	if err := failOpenDeliveries(ctx, tx, ep.TenantID, ep.ID, "endpoint disabled: "+reason, now); err != nil {
		return err
	}
	ep.Enabled, ep.DisabledReason, ep.DisabledAt = false, &reason, &now
	s.log().Warn("events: endpoint disabled", "tenant_id", ep.TenantID, "endpoint_id", ep.ID, "reason", reason)
	if s.Alerts != nil {
		summary := "outbound endpoint " + ep.URL + " was disabled"
		if ep.DisabledReason != nil {
			summary += ": " + *ep.DisabledReason
		}
		return s.Alerts.OpenEndpointAlert(ctx, tx, ep.TenantID, ep.ID, map[string]any{"summary": summary, "endpoint_id": ep.ID,
			"url": ep.URL, "reason": ep.DisabledReason, "failing_since": ep.FailingSince})
	}
	return nil
}

// sweepRows applies set to the tenant's deliveries matching cond: it reads
// their ids without locking, then updates them by primary key, cond
// checked again. An UPDATE that found them through the state index would
// lock index entries before rows, the opposite order of an attempt's
// update by id, and the two deadlock under load.
func (s *Service) sweepRows(ctx context.Context, tenantID, cond string, condArgs []any, set string, setArgs []any) error {
	var ids []string
	if err := s.DB.SelectContext(ctx, &ids, `SELECT id FROM event_deliveries WHERE tenant_id = ? AND `+cond+` ORDER BY id LIMIT 1000`,
		append([]any{tenantID}, condArgs...)...); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	q, idArgs := inIDs(ids)
	args := append(append(append(setArgs[:len(setArgs):len(setArgs)], tenantID), idArgs...), condArgs...)
	_, err := execRC(ctx, s.DB, `UPDATE event_deliveries SET `+set+` WHERE tenant_id = ? AND id IN (`+q+`) AND `+cond, args...)
	return err
}
