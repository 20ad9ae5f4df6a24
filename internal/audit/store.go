package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"leadpipe/internal/db"
	"leadpipe/internal/keyset"
)

// row is one audit_log row as stored.
type row struct {
	ID         string    `db:"id"`
	At         time.Time `db:"at"`
	ActorKind  string    `db:"actor_kind"`
	ActorID    string    `db:"actor_id"`
	ActorName  string    `db:"actor_name"`
	Action     string    `db:"action"`
	TargetType string    `db:"target_type"`
	TargetID   string    `db:"target_id"`
	IP         string    `db:"ip"`
	Detail     *string   `db:"detail"`
}

func (r row) entry() (Entry, error) {
	e := Entry{ID: r.ID, At: r.At.UTC(), Actor: Actor{Kind: r.ActorKind, ID: r.ActorID, Name: r.ActorName},
		Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID, IP: r.IP}
	if r.Detail != nil && *r.Detail != "" {
		if err := json.Unmarshal([]byte(*r.Detail), &e.Detail); err != nil {
			return e, fmt.Errorf("audit: detail of %s: %w", r.ID, err)
		}
	}
	return e, nil
}

// listEntries is one keyset page, newest first: ids below before (all when
// empty), optionally of one action or one actor. Each filter has its index
// (ix_audit_action, ix_audit_actor), both ending in id, so the page is an
// index range read in id order.
func listEntries(ctx context.Context, x db.Ext, tenantID, action, actorID, before string, limit int) ([]row, error) {
	q, args := keyset.New(`SELECT id, at, actor_kind, actor_id, actor_name, action, target_type, target_id, ip, detail
		FROM audit_log WHERE tenant_id = ?`, tenantID).
		And(action != "", "action = ?", action).
		And(actorID != "", "actor_id = ?", actorID).
		Page(before, limit)
	var out []row
	err := x.SelectContext(ctx, &out, q, args...)
	return out, err
}

// listActions is every action the tenant's log holds (a loose scan of
// ix_audit_action), for the page's filter.
func listActions(ctx context.Context, x db.Ext, tenantID string) ([]string, error) {
	var out []string
	err := x.SelectContext(ctx, &out, `SELECT DISTINCT action FROM audit_log WHERE tenant_id = ? ORDER BY action`, tenantID)
	return out, err
}
