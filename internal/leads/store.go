package leads

import (
	"context"
	"encoding/json"
	"strings"
	"time"

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

// leadRow is one row of INSERT INTO leads (insertLeads): every column a
// lead is created with, the one column list of the table's inserts (a
// new lead is at version 1).
type leadRow struct {
	TenantID, ID, SourceID, SourceRef string
	Payload                           string
	Email, Name, Phone, Company       string
	SourceCreatedAt                   *time.Time
	LastSeenAt                        time.Time
	TimesSeen                         int
	Status                            string
	Tags                              Tags
	CreatedAt, UpdatedAt              time.Time
	OrderKey                          string // '' sorts before every record's key
	EmailNorm, PhoneNorm              string
	OwnerID                           *string
	AssignedAt, FirstResponseDueAt    *time.Time
	// Rule is the assignment that gave the lead its owner, if a rule did
	// (assigned_owner_id, assigned_rule_id, assigned_rule_name: the
	// timeline entry reads them, assignmentEntries).
	Rule *assigned
}

const (
	leadInsertCols = `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone, company,
		source_created_at, last_seen_at, times_seen, status, tags, version, created_at, updated_at, order_key,
		email_norm, phone_norm, owner_id, assigned_at, first_response_due_at, assigned_owner_id, assigned_rule_id, assigned_rule_name) VALUES `
	leadInsertVals = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// leadInsertArgs is the number of placeholders in leadInsertVals.
	leadInsertArgs = 25
	// leadUpsertVals are the values of a sender record for a lead that
	// exists (upsertRows): its ON DUPLICATE KEY UPDATE writes none of
	// status and the assignment columns, so they are not sent.
	leadUpsertVals = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, 1, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL)`
	leadUpsertArgs = 18
)

// withRule gives the row the owner a rule assigned (nil: none).
func (r leadRow) withRule(a *assigned) leadRow {
	if a != nil {
		r.OwnerID, r.AssignedAt, r.FirstResponseDueAt, r.Rule = &a.OwnerID, &a.At, &a.Due, a
	}
	return r
}

// appendArgs appends the row's values for leadInsertVals, or for
// leadUpsertVals when upsert is set.
func (r *leadRow) appendArgs(args []any, upsert bool) []any {
	if upsert {
		return append(args, r.TenantID, r.ID, r.SourceID, r.SourceRef, r.Payload, r.Email, r.Name, r.Phone, r.Company,
			r.SourceCreatedAt, r.LastSeenAt, r.TimesSeen, r.Tags, r.CreatedAt, r.UpdatedAt, r.OrderKey, r.EmailNorm, r.PhoneNorm)
	}
	var ruleOwner, ruleID, ruleName any
	if r.Rule != nil {
		ruleOwner, ruleID, ruleName = r.Rule.OwnerID, r.Rule.RuleID, r.Rule.RuleName
	}
	return append(args, r.TenantID, r.ID, r.SourceID, r.SourceRef, r.Payload, r.Email, r.Name, r.Phone, r.Company,
		r.SourceCreatedAt, r.LastSeenAt, r.TimesSeen, r.Status, r.Tags, r.CreatedAt, r.UpdatedAt, r.OrderKey,
		r.EmailNorm, r.PhoneNorm, r.OwnerID, r.AssignedAt, r.FirstResponseDueAt, ruleOwner, ruleID, ruleName)
}

// insertLeads inserts rows in one statement; onDuplicate, when set, is
// its ON DUPLICATE KEY UPDATE clause (the sender upsert of leads that
// exist: upsertRows), and the rows are sent as leadUpsertVals.
func insertLeads(ctx context.Context, x db.Ext, rows []leadRow, onDuplicate string) error {
	if len(rows) == 0 {
		return nil
	}
	vals, n := leadInsertVals, leadInsertArgs
	if onDuplicate != "" {
		vals, n = leadUpsertVals, leadUpsertArgs
	}
	args := make([]any, 0, len(rows)*n)
	for i := range rows {
		args = rows[i].appendArgs(args, onDuplicate != "")
	}
	q := leadInsertCols + vals + strings.Repeat(", "+vals, len(rows)-1)
	if onDuplicate != "" {
		q += " ON DUPLICATE KEY UPDATE " + onDuplicate
	}
	_, err := x.ExecContext(ctx, q, args...)
	return err
}

// insertManual stores a lead a person created (no source), with the
// rule's assignment when a has one.
func insertManual(ctx context.Context, x db.Ext, l Lead, a *assigned) error {
	err := insertLeads(ctx, x, []leadRow{{TenantID: l.TenantID, ID: l.ID, SourceRef: l.SourceRef, Payload: string(l.Payload),
		Email: l.Email, Name: l.Name, Phone: l.Phone, Company: l.Company, LastSeenAt: l.LastSeenAt, TimesSeen: 1, Status: statusNew,
		Tags: l.Tags, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, EmailNorm: Clip(NormalizeEmail(l.Email), 320),
		PhoneNorm: NormalizePhone(l.Phone), OwnerID: l.OwnerID, AssignedAt: l.AssignedAt, FirstResponseDueAt: l.FirstResponseDueAt,
		Rule: a}}, "")
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
	var ls []Lead
	err := db.SelectIn(ctx, x, &ls, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND id IN (?) ORDER BY id FOR UPDATE`, tenantID, ids)
	return ls, err
}

// byIDs reads leads of the tenant by id, in id order.
func byIDs(ctx context.Context, x db.Ext, tenantID string, ids []string) ([]Lead, error) {
	var ls []Lead
	err := db.SelectIn(ctx, x, &ls, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND id IN (?) ORDER BY id`, tenantID, ids)
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
	name      string
	disabled  bool
	awayUntil *time.Time
}

// activeUsers reads users of the tenant an owner may be set to (absent:
// no such user of the tenant), asked of the tenants area in the edit's
// (or the creating) transaction.
func activeUsers(ctx context.Context, x db.Ext, tenantID string, userIDs []string) (map[string]userState, error) {
	us, err := tenants.UserStates(ctx, x, tenantID, userIDs)
	out := make(map[string]userState, len(us))
	for id, u := range us {
		out[id] = userState{name: u.Name, disabled: u.Disabled, awayUntil: u.AwayUntil}
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
	err := db.SelectIn(ctx, x, &notes, `SELECT id, lead_id, author_id, author_name, body, created_at
		FROM lead_notes WHERE tenant_id = ? AND lead_id IN (?) ORDER BY id DESC LIMIT ?`, tenantID, leadIDs, limit)
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
		d, err := jsonColumn(e.Detail != nil, e.Detail)
		if err != nil {
			return err
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

// jsonColumn is v as JSON text for a nullable JSON column, nil (NULL)
// when it is not set.
func jsonColumn(set bool, v any) (any, error) {
	if !set {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
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

// ---- Assignment: rules, round-robin positions, settings ----
