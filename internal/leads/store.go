package leads

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
)

// The store*.go files hold every SQL statement on the leads area's tables;
// this one the lead rows people create and edit, notes and timeline
// events. Functions take db.Ext so the same code runs
// on the database or inside the caller's transaction; each one filters by
// tenant_id, its first argument after ctx and the executor.

// LeadCols is the column list every lead SELECT uses.
const LeadCols = `tenant_id, id, source_id, source_ref, payload, email, name, phone, company,
	source_created_at, last_seen_at, times_seen, status, owner_id, tags, next_step, due_at, version, created_at, updated_at,
	assigned_at, first_response_due_at, first_responded_at, merged_into`

// leadColsL is LeadCols qualified with the alias l.
var leadColsL = func() string {
	cols := strings.Split(LeadCols, ",")
	for i, c := range cols {
		cols[i] = "l." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()

// ---- Leads: sender upsert, manual insert, human edits, reads ----

// insertManual stores a lead a person created (no source), with the
// rule's assignment when a has one.
func insertManual(ctx context.Context, x db.Ext, l Lead, a *assigned) error {
	var owner, ruleID, ruleName any
	if a != nil {
		owner, ruleID, ruleName = a.OwnerID, a.RuleID, a.RuleName
	}
	_, err := x.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone,
			company, last_seen_at, times_seen, status, tags, version, created_at, updated_at, owner_id, assigned_at, first_response_due_at,
			email_norm, phone_norm, assigned_owner_id, assigned_rule_id, assigned_rule_name)
		VALUES (?, ?, '', ?, ?, ?, ?, ?, ?, ?, 1, 'new', ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.TenantID, l.ID, l.SourceRef, string(l.Payload), l.Email, l.Name, l.Phone, l.Company, l.LastSeenAt, l.Tags, l.CreatedAt, l.UpdatedAt,
		l.OwnerID, l.AssignedAt, l.FirstResponseDueAt, Clip(NormalizeEmail(l.Email), 320), NormalizePhone(l.Phone), owner, ruleID, ruleName)
	return db.MapErr(err, "", "lead already exists")
}

// updateHumanFields writes status, owner, tags, next step and due date and
// bumps version, if the lead is still at version. It reports whether the
// row was updated (false: another edit committed first).
//
// responded marks the lead's first response (a person's status change or
// next step), unless it has one.
func updateHumanFields(ctx context.Context, x db.Ext, tenantID, id string, next Lead, version int, now time.Time, responded bool) (bool, error) {
	res, err := x.ExecContext(ctx, `UPDATE leads SET status = ?, owner_id = ?, tags = ?, next_step = ?, due_at = ?,
			version = version + 1, updated_at = ?, first_responded_at = IF(? AND first_responded_at IS NULL, ?, first_responded_at)
		WHERE tenant_id = ? AND id = ? AND version = ?`,
		next.Status, next.OwnerID, next.Tags, next.NextStep, next.DueAt, now, responded, now, tenantID, id, version)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// lockLeads reads the tenant's leads among ids (sorted) and locks them for
// the transaction; ids that are not the tenant's are simply absent.
func lockLeads(ctx context.Context, x db.Ext, tenantID string, ids []string) ([]Lead, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := sqlx.In(`SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND id IN (?) ORDER BY id FOR UPDATE`, tenantID, ids)
	if err != nil {
		return nil, err
	}
	var ls []Lead
	err = x.SelectContext(ctx, &ls, q, args...)
	return ls, err
}

// byIDs reads leads of the tenant by id, in id order.
func byIDs(ctx context.Context, x db.Ext, tenantID string, ids []string) ([]Lead, error) {
	q, args, err := sqlx.In(`SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND id IN (?) ORDER BY id`, tenantID, ids)
	if err != nil {
		return nil, err
	}
	var ls []Lead
	err = x.SelectContext(ctx, &ls, q, args...)
	return ls, err
}

// Get returns one lead of the tenant.
func Get(ctx context.Context, x db.Ext, tenantID, id string) (Lead, error) {
	var l Lead
	err := x.GetContext(ctx, &l, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return l, db.MapErr(err, "lead not found", "")
}

// leadExists is a 404 for an unknown lead (or another tenant's).
func leadExists(ctx context.Context, x db.Ext, tenantID, id string) error {
	var one int
	err := x.GetContext(ctx, &one, `SELECT 1 FROM leads WHERE tenant_id = ? AND id = ?`, tenantID, id)
	return db.MapErr(err, "lead not found", "")
}

// userState is a user an owner may be set to: its name and whether it
// is disabled.
type userState struct {
	name     string
	disabled bool
}

// activeUsers reads users of the tenant an owner may be set to (absent:
// no such user of the tenant), asked of the tenants area in the edit's
// (or the creating) transaction.
func activeUsers(ctx context.Context, x db.Ext, tenantID string, userIDs []string) (map[string]userState, error) {
	us, err := tenants.UserStates(ctx, x, tenantID, userIDs)
	out := make(map[string]userState, len(us))
	for id, u := range us {
		out[id] = userState{name: u.Name, disabled: u.Disabled}
	}
	return out, err
}

func insertNote(ctx context.Context, x db.Ext, tenantID string, n Note) error {
	_, err := x.ExecContext(ctx, `INSERT INTO lead_notes (tenant_id, lead_id, id, author_id, author_name, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, tenantID, n.LeadID, n.ID, n.AuthorID, n.AuthorName, n.Body, n.CreatedAt)
	return err
}

// notesOf lists the newest notes of leads (a lead and those merged into
// it).
func notesOf(ctx context.Context, x db.Ext, tenantID string, leadIDs []string, limit int) ([]Note, error) {
	notes := []Note{}
	q, args, err := sqlx.In(`SELECT id, lead_id, author_id, author_name, body, created_at
		FROM lead_notes WHERE tenant_id = ? AND lead_id IN (?) ORDER BY id DESC LIMIT ?`, tenantID, leadIDs, limit)
	if err != nil {
		return nil, err
	}
	err = x.SelectContext(ctx, &notes, q, args...)
	return notes, err
}

// ---- Timeline events ----

// AddEvent appends a timeline entry.
func AddEvent(ctx context.Context, x db.Ext, tenantID, leadID, kind, actorID, actorName string, detail any, at time.Time) error {
	var d any
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		d = string(b)
	}
	var actor any
	if actorID != "" {
		actor = actorID
	}
	_, err := x.ExecContext(ctx, `INSERT INTO lead_events (tenant_id, lead_id, id, kind, actor_id, actor_name, detail, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, tenantID, leadID, ids.New(), kind, actor, Clip(actorName, 255), d, at)
	return err
}

// eventIn is one timeline entry to write.
type eventIn struct {
	LeadID, Kind, ActorID, ActorName string
	Detail                           any
	At                               time.Time
}

// addEvents appends timeline entries in one statement.
func addEvents(ctx context.Context, x db.Ext, tenantID string, evs []eventIn) error {
	if len(evs) == 0 {
		return nil
	}
	args := make([]any, 0, 8*len(evs))
	for _, e := range evs {
		var d any
		if e.Detail != nil {
			b, err := json.Marshal(e.Detail)
			if err != nil {
				return err
			}
			d = string(b)
		}
		var actor any
		if e.ActorID != "" {
			actor = e.ActorID
		}
		args = append(args, tenantID, e.LeadID, ids.New(), e.Kind, actor, Clip(e.ActorName, 255), d, e.At)
	}
	const v = `(?, ?, ?, ?, ?, ?, ?, ?)`
	_, err := x.ExecContext(ctx, `INSERT INTO lead_events (tenant_id, lead_id, id, kind, actor_id, actor_name, detail, at)
		VALUES `+v+strings.Repeat(", "+v, len(evs)-1), args...)
	return err
}

// eventRow is one lead_events row.
type eventRow struct {
	ID        string    `db:"id"`
	Kind      string    `db:"kind"`
	ActorID   *string   `db:"actor_id"`
	ActorName string    `db:"actor_name"`
	Detail    *string   `db:"detail"`
	At        time.Time `db:"at"`
}

// eventsOf lists a lead's newest events.
func eventsOf(ctx context.Context, x db.Ext, tenantID, leadID string, limit int) ([]eventRow, error) {
	var events []eventRow
	err := x.SelectContext(ctx, &events, `SELECT id, kind, actor_id, actor_name, detail, at
		FROM lead_events WHERE tenant_id = ? AND lead_id = ? ORDER BY id DESC LIMIT ?`, tenantID, leadID, limit)
	return events, err
}

// ---- Seeding (cmd/seed and benchmarks) ----

// seedCols is the column list of insertSeedRows; a row has one value each.
const seedCols = 17

// insertSeedRows inserts rows of seedCols values each in one statement.
func insertSeedRows(ctx context.Context, x db.Ext, rows int, args []any) error {
	var b strings.Builder
	b.WriteString(`INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone, company,
		last_seen_at, times_seen, status, owner_id, tags, version, created_at, updated_at) VALUES `)
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
	}
	_, err := x.ExecContext(ctx, b.String(), args...)
	return err
}

// ---- Assignment: rules, round-robin positions, settings ----
