package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"

	"leadpipe/internal/tracing"
)

// Outbox writes events in the caller's transaction. The zero value works
// (wall clock).
type Outbox struct {
	Now func() time.Time
}

// Outbox returns an outbox sharing the service's clock.
func (s *Service) Outbox() *Outbox { return &Outbox{Now: s.Now} }

// Emit records ev in tx, the transaction of the change that causes it: the
// event exists exactly when the change committed. The relay picks it up
// after the commit. The per-resource sequence row stays locked until tx
// ends, so a resource's events are numbered in commit order.
func (o *Outbox) Emit(ctx context.Context, tx db.Ext, tenantID string, ev Event) error {
	if tx == nil {
		return errors.New("events: Emit needs the caller's transaction")
	}
	if !KnownType(ev.Type) {
		return fmt.Errorf("events: unknown event type %q", ev.Type)
	}
	if !ids.Valid(ev.ResourceID) {
		return fmt.Errorf("events: resource id %q is not an id", ev.ResourceID)
	}
	data, ok := ev.Data.(json.RawMessage)
	if !ok {
		var err error
		if data, err = json.Marshal(ev.Data); err != nil {
			return fmt.Errorf("events: encoding %s data: %w", ev.Type, err)
		}
	}
	now := time.Now()
	if o != nil && o.Now != nil {
		now = o.Now()
	}
	now = now.UTC().Truncate(time.Microsecond)
	// LAST_INSERT_ID(expr) hands the new value back in the OK packet: one
	// round trip for the increment and the read.
	res, err := tx.ExecContext(ctx, `INSERT INTO event_sequences (tenant_id, resource_id, seq) VALUES (?, ?, LAST_INSERT_ID(1))
ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + 1)`, tenantID, ev.ResourceID)
	if err != nil {
		return fmt.Errorf("events: sequence: %w", err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("events: sequence: %w", err)
	}
	env := Envelope{ID: ids.New(), Type: ev.Type, CreatedAt: now, Sequence: seq, Data: data}
	body, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("events: encoding the envelope: %w", err)
	}
	// The emitting span's context, for the outbound attempts' spans and
	// their traceparent header (NULL when tracing is off).
	var tp *string
	if t := tracing.Traceparent(ctx); t != "" {
		tp = &t
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO events (tenant_id, id, type, resource_id, sequence, body, created_at, pending, traceparent)
VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)`, tenantID, env.ID, env.Type, ev.ResourceID, seq, body, now, tp)
	if err != nil {
		return fmt.Errorf("events: outbox insert: %w", err)
	}
	return nil
}

// Wants reads, in x (the transaction of a change), which event types some
// endpoint of the tenant subscribes to, enabled or not: a disabled endpoint
// recovers what it missed once re-enabled. An event no endpoint wants need
// not be written.
func (o *Outbox) Wants(ctx context.Context, x db.Ext, tenantID string) (func(eventType string) bool, error) {
	eps, err := listEndpoints(ctx, x, tenantID)
	if err != nil {
		return nil, fmt.Errorf("events: subscriptions: %w", err)
	}
	wanted := map[string]bool{}
	for _, ep := range eps {
		for _, t := range ep.Events {
			wanted[t] = true
		}
	}
	return func(t string) bool { return wanted[t] }, nil
}
