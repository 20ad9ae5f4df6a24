package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/clip"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/outbound"

	"go.opentelemetry.io/otel/propagation"

	"leadpipe/internal/tracing"
)

// Attempt outcomes.
const (
	OutcomeDelivered = "delivered" // 2xx
	OutcomeFailed    = "failed"    // any other status, a timeout, a network error
	OutcomeRefused   = "refused"   // the SSRF guard refused the address
	OutcomeGone      = "gone"      // 410: the endpoint is disabled
)

// Sign returns the webhook-signature header value: one v1 signature per
// key, space-separated (Standard Webhooks), so during a rotation's grace
// period a receiver holding either secret verifies the delivery.
func Sign(keys [][]byte, id string, ts time.Time, body []byte) string {
	sigs := make([]string, 0, len(keys))
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		fmt.Fprintf(m, "%s.%d.", id, ts.Unix())
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// HandleDeliver runs one attempt (the Asynq handler of TypeDeliver).
func (s *Service) HandleDeliver(ctx context.Context, t *asynq.Task) error {
	var p deliverPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || !ids.Valid(p.TenantID) || !ids.Valid(p.DeliveryID) || p.Attempt < 1 {
		return fmt.Errorf("events: bad deliver payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return s.Deliver(ctx, p.TenantID, p.DeliveryID, p.Attempt)
}

// Deliver runs attempt n of a delivery, unless that attempt already ran
// (a duplicate task: it changes nothing).
func (s *Service) Deliver(ctx context.Context, tenantID, deliveryID string, n int) error {
	now := s.now()
	k, err := execRC(ctx, s.DB, `UPDATE event_deliveries SET state = 'sending', attempts = ?, lease_until = ?, queued_by = NULL, updated_at = ?
WHERE tenant_id = ? AND id = ? AND attempts = ? AND state IN ('queued', 'pending')`,
		n, now.Add(s.leaseFor()), now, tenantID, deliveryID, n-1)
	if err != nil {
		return err
	}
	if k == 0 {
		return nil // this attempt ran already, or the delivery moved on
	}
	d, err := getDelivery(ctx, s.DB, tenantID, deliveryID)
	if err != nil {
		return err
	}
	ev, err := getEvent(ctx, s.DB, tenantID, d.EventID)
	if err != nil {
		return err
	}
	if len(ev.Body) == 0 {
		// Erased (EraseResource) while it waited: nothing is sent.
		_, err := execRC(ctx, s.DB, `UPDATE event_deliveries SET state = 'failed', last_error = ?, lease_until = NULL, updated_at = ?
WHERE tenant_id = ? AND id = ? AND attempts = ?`, ErasedReason, now, tenantID, deliveryID, n)
		return err
	}
	ep, err := getEndpoint(ctx, s.DB, tenantID, d.EndpointID, false)
	if isNoRows(err) {
		return nil // deleted meanwhile (its deliveries went with it)
	}
	if err != nil {
		return err
	}
	a := Attempt{TenantID: tenantID, ID: ids.New(), DeliveryID: d.ID, EventID: ev.ID, EndpointID: ep.ID, Attempt: n, AttemptedAt: now}
	var retryAfter time.Duration
	if !ep.Enabled {
		a.Outcome, a.Error = OutcomeFailed, strp("endpoint disabled")
	} else {
		keys, err := s.liveSecrets(ctx, s.DB, tenantID, ep.ID, now)
		if err != nil {
			return err
		}
		retryAfter = s.send(ctx, ep, ev, keys, &a)
	}
	return s.record(ctx, d, ep, a, retryAfter)
}

func strp(s string) *string { return &s }

// send makes the HTTP request and fills in the attempt's outcome; it
// returns the Retry-After of a 429 or 503 (0 if none).
func (s *Service) send(ctx context.Context, ep Endpoint, ev EventRow, keys [][]byte, a *Attempt) time.Duration {
	ctx, span := startAttempt(ctx, ev, ep, a)
	defer func() { endAttempt(span, a) }()
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	ts := a.AttemptedAt
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(ev.Body))
	if err != nil {
		a.Outcome, a.Error = OutcomeFailed, strp("invalid endpoint URL: "+err.Error())
		return 0
	}
	tracing.Inject(ctx, propagation.HeaderCarrier(req.Header)) // traceparent, when tracing is on
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Leadpipe-Webhooks/1.0")
	req.Header.Set("webhook-id", ev.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(keys, ev.ID, ts, ev.Body))
	start := time.Now()
	resp, err := s.Client.Do(ctx, req)
	a.LatencyMS = int(time.Since(start).Milliseconds())
	if resp != nil {
		st := resp.Status
		a.Status = &st
		a.Response = snippet(resp.Body)
	}
	var te *outbound.TargetError
	switch {
	case errors.As(err, &te) || errors.Is(err, outbound.ErrForbiddenTarget):
		a.Outcome, a.Error = OutcomeRefused, strp(clip.Bytes(strings.TrimPrefix(err.Error(), "outbound: "), 1000, ""))
		return 0
	case err != nil && resp == nil:
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = fmt.Sprintf("no answer within %s", s.timeout())
		}
		a.Outcome, a.Error = OutcomeFailed, strp(clip.Bytes(msg, 1000, ""))
		return 0
	}
	switch {
	case resp.Status >= 200 && resp.Status <= 299:
		a.Outcome = OutcomeDelivered
	case resp.Status == http.StatusGone:
		a.Outcome, a.Error = OutcomeGone, strp("410 Gone: the endpoint asked to stop deliveries")
	case resp.Status >= 300 && resp.Status <= 399:
		a.Outcome, a.Error = OutcomeFailed, strp(fmt.Sprintf("HTTP %d: redirects are not followed", resp.Status))
	default:
		a.Outcome, a.Error = OutcomeFailed, strp(fmt.Sprintf("HTTP %d", resp.Status))
		if resp.Status == http.StatusTooManyRequests || resp.Status == http.StatusServiceUnavailable {
			if d, ok := outbound.ParseRetryAfter(resp.Header.Get("Retry-After"), a.AttemptedAt); ok {
				return max(d, time.Second) // 0 means "no hint" to the caller
			}
		}
	}
	return 0
}

// record stores the attempt, moves the delivery on (delivered, next retry,
// failed), updates the endpoint's health (disabling it on 410 or after 5
// days of failures) and pumps the endpoint's next deliveries, all in one
// transaction; the enqueue follows the commit.
func (s *Service) record(ctx context.Context, d DeliveryRow, ep Endpoint, a Attempt, retryAfter time.Duration) error {
	now := a.AttemptedAt
	var token string
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		// The endpoint row first: every transaction that moves deliveries
		// of an endpoint (this one, Pump) takes it before any delivery row,
		// so they queue up instead of deadlocking.
		cur, err := getEndpoint(ctx, tx, d.TenantID, ep.ID, true)
		if isNoRows(err) {
			return nil // deleted meanwhile, with its deliveries
		}
		if err != nil {
			return err
		}
		if err := insertAttempt(ctx, tx, a); err != nil {
			return err
		}
		var base int
		if err := tx.GetContext(ctx, &base, `SELECT schedule_base FROM event_deliveries WHERE tenant_id = ? AND id = ?`, d.TenantID, d.ID); err != nil {
			return err
		}
		state, next, lastErr := StateFailed, now, a.Error
		switch a.Outcome {
		case OutcomeDelivered:
			state = StateDelivered
		case OutcomeGone:
		default:
			delay, more := s.nextDelay(a.Attempt - base)
			if retryAfter > 0 {
				delay = min(retryAfter, 24*time.Hour)
			}
			if more && cur.Enabled {
				state, next = StatePending, now.Add(delay)
			}
		}
		var deliveredAt *time.Time
		if state == StateDelivered {
			deliveredAt = &now
		}
		if _, err := tx.ExecContext(ctx, `UPDATE event_deliveries SET state = ?, next_attempt_at = ?, lease_until = NULL,
last_status = ?, last_error = ?, delivered_at = COALESCE(?, delivered_at), updated_at = ?
WHERE tenant_id = ? AND id = ? AND attempts = ?`, state, next, a.Status, lastErr, deliveredAt, now, d.TenantID, d.ID, a.Attempt); err != nil {
			return err
		}
		switch a.Outcome {
		case OutcomeDelivered:
			if cur.FailingSince != nil || cur.LastSuccessAt == nil || now.Sub(*cur.LastSuccessAt) > time.Second {
				if _, err := tx.ExecContext(ctx, `UPDATE event_endpoints SET failing_since = NULL, last_success_at = ?
WHERE tenant_id = ? AND id = ?`, now, d.TenantID, ep.ID); err != nil {
					return err
				}
			}
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE event_endpoints SET failing_since = COALESCE(failing_since, ?), last_failure_at = ?, last_error = ?
WHERE tenant_id = ? AND id = ?`, now, now, clip.Bytes(deref(a.Error), 1000, ""), d.TenantID, ep.ID); err != nil {
				return err
			}
			if cur.FailingSince == nil {
				cur.FailingSince = &now
			}
			if cur.Enabled && a.Outcome == OutcomeGone {
				return s.disable(ctx, tx, cur, "the endpoint answered 410 Gone", now)
			}
			if cur.Enabled && now.Sub(*cur.FailingSince) >= DisableAfter {
				return s.disable(ctx, tx, cur, failingReason(cur), now)
			}
		}
		// Due as of now, not as of the attempt's start: deliveries the
		// relay fanned out while this attempt was on the wire are due too.
		token, err = s.claimDue(ctx, tx, d.TenantID, ep.ID, s.now())
		return err
	})
	if err != nil {
		return fmt.Errorf("events: recording attempt %d of %s: %w", a.Attempt, d.ID, err)
	}
	if err := s.enqueueClaimed(ctx, d.TenantID, ep.ID, token); err != nil {
		s.log().Warn("events: enqueue failed; the sweeper retries", "tenant_id", d.TenantID, "endpoint_id", ep.ID, "err", err)
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 512 {
		b = b[:512]
	}
	return string(bytes.ToValidUTF8(b, []byte("?")))
}
