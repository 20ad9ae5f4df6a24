package leads

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// Assignment rules, their round-robin counters and reservations, and the
// first-response mark (docs/ARCHITECTURE.md, "Assignment and first
// response").

// ruleRow is one assignment_rules row.
type ruleRow struct {
	ID       string
	Position int
	AssignmentRule
	// Read for the creating transactions only (planRules): the tenant's
	// first-response time, and whether batches left reservations of the
	// rule (older than reservationOrphanAge) for take to hand out first.
	minutes  int
	leftOver bool
	// zone is the tenant's routing zone; counterDay and counterPos the
	// rule's counter as read (unlocked), to skip a rule whose day is full.
	zone       string
	counterDay int64
	counterPos int64
}

// ruleCols are an assignment rule's columns, as scanned by rulesFrom.
type ruleCols struct {
	ID       string  `db:"id"`
	Position int     `db:"position"`
	Name     string  `db:"name"`
	SourceID *string `db:"source_id"`
	Field    *string `db:"field"`
	Equals   *string `db:"equals"`
	Strategy string  `db:"strategy"`
	Members  *string `db:"members"`
	OwnerID  *string `db:"owner_id"`
	Caps     *string `db:"caps"`
	EscAfter *int    `db:"escalate_after"`
	EscTo    *string `db:"escalate_to"`
	Minutes  int     `db:"minutes"`
	LeftOver bool    `db:"left_over"`
	Zone     string  `db:"zone"`
	CDay     int64   `db:"cday"`
	CPos     int64   `db:"cpos"`
}

// assignmentRules reads the tenant's rules in order (one range of the
// primary key's tenant prefix: a tenant has a few).
func assignmentRules(ctx context.Context, x db.Ext, tenantID string) ([]ruleRow, error) {
	var rows []ruleCols
	if err := x.SelectContext(ctx, &rows, `SELECT id, position, name, source_id, field, equals, strategy, members, owner_id, caps, escalate_after, escalate_to
		FROM assignment_rules WHERE tenant_id = ? ORDER BY position`, tenantID); err != nil {
		return nil, err
	}
	return rulesFrom(rows)
}

// planRules is assignmentRules for a transaction that creates leads
// (planAssign), in the same one statement (its every batch runs it): with
// each rule the tenant's first-response time and whether reservations of
// the rule were left older than reservationOrphanAge at now (read without
// a lock: one left later is handed out by a later batch).
func planRules(ctx context.Context, x db.Ext, tenantID string, now time.Time) ([]ruleRow, error) {
	var rows []ruleCols
	if err := x.SelectContext(ctx, &rows, `SELECT r.id, r.position, r.name, r.source_id, r.field, r.equals, r.strategy, r.members, r.owner_id, r.caps,
			IFNULL(s.first_response_minutes, ?) AS minutes, IFNULL(s.time_zone, '') AS zone,
			IFNULL(c.day, 0) AS cday, IFNULL(c.next_pos, 0) AS cpos,
			EXISTS (SELECT 1 FROM assignment_reservations v WHERE v.tenant_id = r.tenant_id AND v.rule_id = r.id AND v.created_at < ?) AS left_over
		FROM assignment_rules r LEFT JOIN assignment_settings s ON s.tenant_id = r.tenant_id
		LEFT JOIN assignment_counters c ON c.tenant_id = r.tenant_id AND c.rule_id = r.id
		WHERE r.tenant_id = ? ORDER BY r.position`, DefaultFirstResponseMinutes, now.Add(-reservationOrphanAge), tenantID); err != nil {
		return nil, err
	}
	return rulesFrom(rows)
}

func rulesFrom(rows []ruleCols) ([]ruleRow, error) {
	out := make([]ruleRow, len(rows))
	for i, r := range rows {
		out[i] = ruleRow{ID: r.ID, Position: r.Position, AssignmentRule: AssignmentRule{Name: r.Name,
			When: RuleCondition{SourceID: r.SourceID, Field: r.Field, Equals: r.Equals}, Strategy: r.Strategy, OwnerID: r.OwnerID},
			minutes: r.Minutes, leftOver: r.LeftOver, zone: r.Zone, counterDay: r.CDay, counterPos: r.CPos}
		if r.Members != nil {
			if err := json.Unmarshal([]byte(*r.Members), &out[i].Members); err != nil {
				return nil, fmt.Errorf("assignment rule %s: members: %w", r.ID, err)
			}
		}
		if r.Caps != nil {
			if err := json.Unmarshal([]byte(*r.Caps), &out[i].Caps); err != nil {
				return nil, fmt.Errorf("assignment rule %s: caps: %w", r.ID, err)
			}
		}
		if r.EscAfter != nil && r.EscTo != nil {
			out[i].Escalate = &Escalation{AfterMinutes: *r.EscAfter, To: *r.EscTo}
		}
	}
	return out, nil
}

// assignmentSettings reads the tenant's first-response time (the default
// without one) and routing zone.
func assignmentSettings(ctx context.Context, x db.Ext, tenantID string) (int, string, error) {
	var row struct {
		N    int    `db:"first_response_minutes"`
		Zone string `db:"time_zone"`
	}
	err := x.GetContext(ctx, &row, `SELECT first_response_minutes, time_zone FROM assignment_settings WHERE tenant_id = ?`, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return DefaultFirstResponseMinutes, "", nil
	}
	return row.N, row.Zone, err
}

// replaceAssignment replaces the tenant's rules (with fresh positions)
// and its setting.
func replaceAssignment(ctx context.Context, x db.Ext, tenantID string, rules []ruleRow, minutes int, zone string, now time.Time) error {
	if _, err := x.ExecContext(ctx, `DELETE FROM assignment_rules WHERE tenant_id = ?`, tenantID); err != nil {
		return err
	}
	if _, err := x.ExecContext(ctx, `DELETE FROM assignment_counters WHERE tenant_id = ?`, tenantID); err != nil {
		return err
	}
	if _, err := x.ExecContext(ctx, `DELETE FROM assignment_reservations WHERE tenant_id = ?`, tenantID); err != nil {
		return err
	}
	if len(rules) > 0 {
		var args, cargs []any
		for _, r := range rules {
			members, err := jsonColumn(r.Members != nil, r.Members)
			if err != nil {
				return err
			}
			caps, err := jsonColumn(len(r.Caps) > 0, r.Caps)
			if err != nil {
				return err
			}
			var escAfter, escTo any
			if e := r.Escalate; e != nil {
				escAfter, escTo = e.AfterMinutes, e.To
			}
			args = append(args, tenantID, r.ID, r.Position, r.Name, r.When.SourceID, r.When.Field, r.When.Equals, r.Strategy, members, r.OwnerID, now,
				caps, escAfter, escTo)
			cargs = append(cargs, tenantID, r.ID)
		}
		const v = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
		if _, err := x.ExecContext(ctx, `INSERT INTO assignment_rules (tenant_id, id, position, name, source_id, field, equals, strategy, members, owner_id, created_at,
			caps, escalate_after, escalate_to)
			VALUES `+v+strings.Repeat(", "+v, len(rules)-1), args...); err != nil {
			return err
		}
		if _, err := x.ExecContext(ctx, `INSERT INTO assignment_counters (tenant_id, rule_id, next_pos) VALUES (?, ?, 0)`+
			strings.Repeat(", (?, ?, 0)", len(rules)-1), cargs...); err != nil {
			return err
		}
	}
	_, err := x.ExecContext(ctx, `INSERT INTO assignment_settings (tenant_id, first_response_minutes, time_zone, updated_at) VALUES (?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE first_response_minutes = VALUES(first_response_minutes), time_zone = VALUES(time_zone), updated_at = VALUES(updated_at)`,
		tenantID, minutes, zone, now)
	return err
}

// reservation is a range of a rule's round-robin positions, n from
// start.
type reservation struct {
	ID    string `db:"id"`
	Start int64  `db:"start_pos"`
	N     int64  `db:"n"`
}

// reservationOrphanAge is how old a reservation must be before another
// batch hands its positions out: a batch in flight uses (deletes) its own
// within its transaction, far sooner; one still there after this was
// left by a batch that rolled back or died.
const reservationOrphanAge = 30 * time.Second

// leftReservations locks up to 16 reservations of the rule that batches
// left unused (older than reservationOrphanAge at now). The ids are read
// first without a lock (the usual case, none left, is that one indexed
// read, and a batch in flight is never waited for), then locked one by
// one by their primary key (no gap lock even at REPEATABLE READ); one
// another batch took meanwhile is gone or changed (useReservation checks
// n) when the lock is granted.
//
// Positions count per day (capSchedule): one left from an earlier day is
// deleted, never handed out.
func leftReservations(ctx context.Context, x db.Ext, tenantID, ruleID string, day int64, now time.Time) ([]reservation, error) {
	var rows []struct {
		ID  string `db:"id"`
		Day int64  `db:"day"`
	}
	if err := x.SelectContext(ctx, &rows, `SELECT id, day FROM assignment_reservations WHERE tenant_id = ? AND rule_id = ? AND created_at < ?
		ORDER BY id LIMIT 16`, tenantID, ruleID, now.Add(-reservationOrphanAge)); err != nil || len(rows) == 0 {
		return nil, err
	}
	var ids []string
	for _, r := range rows {
		if r.Day >= day {
			ids = append(ids, r.ID)
			continue
		}
		// By its primary key: no gap lock a reservation apart would wait on.
		if _, err := x.ExecContext(ctx, `DELETE FROM assignment_reservations WHERE tenant_id = ? AND rule_id = ? AND id = ?`,
			tenantID, ruleID, r.ID); err != nil {
			return nil, err
		}
	}
	var out []reservation
	for _, id := range ids {
		var rs []reservation
		if err := x.SelectContext(ctx, &rs, `SELECT id, start_pos, n FROM assignment_reservations WHERE tenant_id = ? AND rule_id = ? AND id = ?
			FOR UPDATE`, tenantID, ruleID, id); err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// useReservation records that k positions of a locked reservation were
// handed out: all of them, the row goes; else it keeps the rest.
func useReservation(ctx context.Context, x db.Ext, tenantID, ruleID string, r reservation, k int64) error {
	var res sql.Result
	var err error
	if k >= r.N {
		res, err = x.ExecContext(ctx, `DELETE FROM assignment_reservations WHERE tenant_id = ? AND rule_id = ? AND id = ? AND n = ?`,
			tenantID, ruleID, r.ID, r.N)
	} else {
		res, err = x.ExecContext(ctx, `UPDATE assignment_reservations SET start_pos = start_pos + ?, n = n - ?
			WHERE tenant_id = ? AND rule_id = ? AND id = ? AND n = ?`, k, k, tenantID, ruleID, r.ID, r.N)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err == nil {
			err = errReservationTaken
		}
		return err
	}
	return nil
}

// errReservationTaken: another batch took the reservation between its
// commit and this batch's lock of it; re-running finds positions again.
var errReservationTaken = fmt.Errorf("leads: a round-robin reservation was taken by another batch: %w", db.ErrRetryTx)

// reserveApart takes n positions of a rule in a short transaction of its
// own (the position row is locked only for that transaction) and records
// them as a reservation, which the caller's transaction then uses
// (useReservation) or, rolled back, leaves to the next batch. ok is false
// when the rule has no counter (it was replaced meanwhile). d is a pool
// from db.OpenOneTrip: the transaction (counter, reservation, commit) is
// one round trip; the reservation row reads its start from the counter
// row the transaction has just moved and locked.
func reserveApart(ctx context.Context, d *sqlx.DB, tenantID, ruleID string, n, day int64, now time.Time) (r reservation, ok bool, err error) {
	r = reservation{ID: ids.New(), N: n}
	affected, insertIDs, err := db.OneTrip(ctx, d, []string{reserveCounterSQL,
		`INSERT INTO assignment_reservations (tenant_id, rule_id, id, start_pos, n, created_at, day)
			SELECT tenant_id, rule_id, ?, next_pos - ?, ?, ?, day FROM assignment_counters WHERE tenant_id = ? AND rule_id = ?`},
		day, n, day, tenantID, ruleID,
		r.ID, n, n, now, tenantID, ruleID)
	if err != nil || affected[0] == 0 {
		return reservation{}, false, err
	}
	r.Start = insertIDs[0] - n
	return r, true, nil
}

// reserveCounterSQL takes n positions of a rule: next_pos moves by n and
// LAST_INSERT_ID(expr) hands the new value back in the statement's OK
// packet, so no second round trip reads it. Positions count per day (the
// arguments: day, n, day, tenant, rule): a later day starts them at 0,
// and the day only moves forward (a worker whose clock is still before
// midnight takes positions of the new day). MariaDB assigns left to
// right, so next_pos reads the day before it changes.
const reserveCounterSQL = `UPDATE assignment_counters SET next_pos = LAST_INSERT_ID(IF(day >= ?, next_pos, 0) + ?), day = GREATEST(day, ?)
	WHERE tenant_id = ? AND rule_id = ?`

// reserveCounter takes n round-robin positions of a rule in one
// statement and returns the first (the row stays locked to the commit).
// ok is false when the rule has no counter (it was replaced meanwhile).
func reserveCounter(ctx context.Context, x db.Ext, tenantID, ruleID string, n, day int64) (start int64, ok bool, err error) {
	res, err := x.ExecContext(ctx, reserveCounterSQL, day, n, day, tenantID, ruleID)
	if err != nil {
		return 0, false, err
	}
	if k, err := res.RowsAffected(); err != nil || k == 0 {
		return 0, false, err
	}
	end, err := res.LastInsertId()
	return end - n, err == nil, err
}

// markResponded starts a lead's first response (a person's note), once.
func markResponded(ctx context.Context, x db.Ext, tenantID, leadID string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE leads SET first_responded_at = ? WHERE tenant_id = ? AND id = ? AND first_responded_at IS NULL`,
		now, tenantID, leadID)
	return err
}

// ---- Merges (merge.go, survivor.go) ----
