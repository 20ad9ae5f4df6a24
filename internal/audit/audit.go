// Package audit owns the audit_log table: one row per security-relevant
// action, written by the
// area that performs the action inside the action's own transaction, so a
// rolled-back action leaves no row claiming it happened. Rows never hold a
// secret: callers put ids, names and changed field names in Detail, never
// tokens, passwords or signing secrets.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"leadpipe/internal/clip"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Actor kinds.
const (
	ActorUser     = "user"
	ActorToken    = "token"
	ActorOperator = "operator"
	ActorSystem   = "system"
)

// Actor is who performed an action.
type Actor struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Entry is one audit row.
type Entry struct {
	ID         string         `json:"id"`
	At         time.Time      `json:"at"`
	Actor      Actor          `json:"actor"`
	Action     string         `json:"action"`
	TargetType string         `json:"target_type"`
	TargetID   string         `json:"target_id"`
	IP         string         `json:"ip"`
	Detail     map[string]any `json:"detail"`
}

type ctxKey struct{}

// Context is what the HTTP layer knows about the caller of an action: the
// actor and the client address. Services read it with From when they
// record an entry, so the web layer sets it once per request.
type Context struct {
	Actor Actor
	IP    string
}

// With returns ctx carrying who acts.
func With(ctx context.Context, c Context) context.Context { return context.WithValue(ctx, ctxKey{}, c) }

// From returns who acts; the system when nobody was set (workers, schedules).
func From(ctx context.Context) Context {
	if c, ok := ctx.Value(ctxKey{}).(Context); ok {
		return c
	}
	return Context{Actor: Actor{Kind: ActorSystem, Name: "system"}}
}

// Record inserts e on ext, which should be the transaction of the action
// itself. The actor and IP come from ctx (With) unless e sets them; At and
// ID are filled when zero.
func Record(ctx context.Context, ext db.Ext, tenantID string, e Entry) error {
	if e.Actor.Kind == "" {
		c := From(ctx)
		e.Actor = c.Actor
		if e.IP == "" {
			e.IP = c.IP
		}
	}
	if e.ID == "" {
		e.ID = ids.New()
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC().Truncate(time.Microsecond)
	}
	var detail any
	if len(e.Detail) > 0 {
		b, err := json.Marshal(e.Detail)
		if err != nil {
			return fmt.Errorf("audit: detail: %w", err)
		}
		detail = b
	}
	_, err := ext.ExecContext(ctx, `INSERT INTO audit_log
		(tenant_id, id, at, actor_kind, actor_id, actor_name, action, target_type, target_id, ip, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenantID, e.ID, e.At, e.Actor.Kind, e.Actor.ID, clip.Bytes(e.Actor.Name, 200, ""), e.Action,
		e.TargetType, clip.Bytes(e.TargetID, 64, ""), clip.Bytes(e.IP, 64, ""), detail)
	if err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}
