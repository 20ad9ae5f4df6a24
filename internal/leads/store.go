package leads

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
)

// This file holds every SQL statement on the leads area's tables: leads,
// lead_notes and lead_events. Functions take db.Ext so the same code runs
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

// UpsertFromSender writes one sender's record through the lead's natural
// key; see UpsertFromSenderBatch. Returns the lead id and whether the lead
// is new.
func UpsertFromSender(ctx context.Context, x db.Ext, tenantID, sourceID string, r SenderRecord, now time.Time) (string, bool, error) {
	out, err := UpsertFromSenderBatch(ctx, x, tenantID, []BatchRecord{{SourceID: sourceID, SenderRecord: r}}, now)
	if err != nil {
		return "", false, err
	}
	return out[0].LeadID, out[0].Kind == OutcomeCreated, nil
}

// What an upsert did with one record.
const (
	OutcomeCreated   = "created"   // a new lead
	OutcomeUpdated   = "updated"   // sender-owned fields changed
	OutcomeUnchanged = "unchanged" // applied, nothing changed (still a sighting)
	OutcomeStale     = "stale"     // older than the lead's data: not applied (still a sighting)
)

// BatchRecord is one record of a batch upsert: its source and the record.
type BatchRecord struct {
	SourceID string
	SenderRecord
	// SkipUnchanged: a record that would change no sender-owned field
	// writes nothing at all (no last_seen_at, no order key): a CSV
	// re-import (internal/imports) rewrites no row. A webhook record is a
	// sighting and never sets it.
	SkipUnchanged bool
}

// UpsertOutcome is what became of one record of a batch.
type UpsertOutcome struct {
	LeadID, SourceID, SourceRef string
	Kind                        string // OutcomeCreated, …
	// SurvivorID is set when the natural key's lead (LeadID) was merged
	// into another (merge.go): the record also updated that survivor, the
	// lead people see, and Kind says what it did to the survivor. LeadID
	// stays the key's own lead, so its deliveries stay its own and an
	// unmerge gives them back.
	SurvivorID string
	// A created lead an assignment rule gave an owner: the owner and the
	// rule's name.
	OwnerID, Rule string
}

// OrderKey is a record's order key (leads.order_key): the record's time
// (the sender's event time, else when Leadpipe received it) as 16 hex
// digits of microseconds, then tiebreak (Leadpipe's delivery id, a ULID:
// receipt order among records of the same time). Keys sort as text.
func OrderKey(t time.Time, tiebreak string) string {
	us := t.UnixMicro()
	if us < 0 {
		us = 0
	}
	return fmt.Sprintf("%016x%s", us, tiebreak)
}

// senderState is what a lead holds of a sender, to tell what a record
// changes.
type senderState struct {
	ID        string     `db:"id"`
	SourceRef string     `db:"source_ref"`
	OrderKey  string     `db:"order_key"`
	Email     string     `db:"email"`
	Name      string     `db:"name"`
	Phone     string     `db:"phone"`
	Company   string     `db:"company"`
	CreatedAt *time.Time `db:"source_created_at"`
	Payload   []byte     `db:"payload"`
	// The survivor this lead was merged into (merge.go): a record with the
	// lead's natural key updates the survivor too.
	MergedInto *string `db:"merged_into"`
}

// apply merges r into the state as the upsert statement does; it reports
// whether a sender-owned field changed.
func (st *senderState) apply(r SenderRecord, payload []byte) bool {
	changed := false
	set := func(dst *string, v string) {
		if v != "" && v != *dst {
			*dst, changed = v, true
		}
	}
	set(&st.Email, r.Email)
	set(&st.Name, r.Name)
	set(&st.Phone, r.Phone)
	set(&st.Company, r.Company)
	if r.CreatedAt != nil && (st.CreatedAt == nil || !st.CreatedAt.Equal(*r.CreatedAt)) {
		st.CreatedAt, changed = r.CreatedAt, true
	}
	if !jsonEqual(st.Payload, payload) {
		st.Payload, changed = payload, true
	}
	st.OrderKey = r.OrderKey
	return changed
}

// jsonEqual compares two stored payloads; MariaDB keeps JSON text as sent,
// MySQL normalises it, so equal bytes or equal compact forms are equal.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// UpsertFromSenderBatch writes sender records through each lead's natural
// key (tenant_id, source_id, source_ref) in the caller's transaction and
// tells, per record, what it did. Only sender-owned fields are written:
// status, owner, notes, tags and version are never touched, so a human's
// work survives every re-delivery and reconcile. Empty sender values do
// not blank known ones (a Meta webhook carries no fields until
// enrichment).
//
// Record order: the ON DUPLICATE KEY UPDATE writes a record's fields only
// when its order key is not older than the lead's (order_key), so a late
// or re-ordered record changes no field, whichever worker runs it; it
// still adds its sightings (times_seen) and last_seen_at. Records of one
// lead in one batch are applied in order-key order.
//
// Statements: one locking read of the leads the batch touches (per
// source: their ids, order keys and sender fields, to tell created /
// updated / unchanged / stale without a query per record), one multi-row
// INSERT of the new leads, one multi-row upsert of the other records. The
// lock holds the existing leads; a lead another transaction creates
// meanwhile makes the INSERT fail with a duplicate key, and the caller's
// transaction is then re-run (ErrConcurrentCreate wraps db.ErrRetryTx, which
// db.InTx retries). When the batch would create leads, one more statement
// looks their natural keys up among the tombstones of erased leads
// (tombstone.go): such a record writes nothing and comes back as
// OutcomeErased with no lead id.
func UpsertFromSenderBatch(ctx context.Context, x db.Ext, tenantID string, recs []BatchRecord, now time.Time) ([]UpsertOutcome, error) {
	out, pending, err := UpsertFromSenderBatchDeferred(ctx, x, tenantID, recs, now)
	if err != nil {
		return nil, err
	}
	if err := pending.Insert(ctx, x, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// PendingLeads are the new leads of a batch, not yet inserted: Insert
// assigns and inserts them. The worker runs it as the last statements
// before the batch's commit (and before the outbox, which reads the
// leads), because a round-robin rule's position row is locked from its
// reservation to the commit and concurrent batches of the tenant wait for
// it: the shorter that stretch, the less they wait.
type PendingLeads struct {
	tenantID string
	now      time.Time
	out      []UpsertOutcome
	rows     []pendingRow
	plan     *assignPlan
	// later are the upsert rows of records of the new leads after their
	// first (the same lead twice in a batch): applied after the INSERT.
	later     []any
	laterRows int
}

type pendingRow struct {
	i   int // in the outcomes
	row []any
}

// UpsertFromSenderBatchDeferred is UpsertFromSenderBatch without the new
// leads' INSERT: their outcomes (OutcomeCreated, with their ids) are
// decided, their owners planned (planAssign: rules, users and settings
// read, nothing locked), and the caller must run Insert in the same
// transaction before anything reads them. Until then the outcomes of new
// leads have no OwnerID; Insert fills it in.
func UpsertFromSenderBatchDeferred(ctx context.Context, x db.Ext, tenantID string, recs []BatchRecord, now time.Time) ([]UpsertOutcome, *PendingLeads, error) {
	pending := &PendingLeads{tenantID: tenantID, now: now}
	out := make([]UpsertOutcome, len(recs))
	type key struct{ source, ref string }
	order := make([]int, len(recs))
	for i := range recs {
		order[i] = i
		if recs[i].OrderKey == "" {
			recs[i].OrderKey = OrderKey(now, ids.New())
		}
		recs[i].SourceRef = Clip(recs[i].SourceRef, 191)
	}
	// Natural key, then order key: two records of a lead apply oldest
	// first, and batches lock leads in the same order.
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := recs[order[a]], recs[order[b]]
		if ra.SourceID != rb.SourceID {
			return ra.SourceID < rb.SourceID
		}
		if ra.SourceRef != rb.SourceRef {
			return ra.SourceRef < rb.SourceRef
		}
		return ra.OrderKey < rb.OrderKey
	})
	// The leads as they are, locked.
	state := map[key]*senderState{}
	bySource := map[string][]any{}
	var sourceOrder []string
	for _, i := range order {
		r := recs[i]
		if _, ok := bySource[r.SourceID]; !ok {
			sourceOrder = append(sourceOrder, r.SourceID)
		}
		bySource[r.SourceID] = append(bySource[r.SourceID], r.SourceRef)
	}
	for _, src := range sourceOrder {
		refs := bySource[src]
		var rows []senderState
		if err := x.SelectContext(ctx, &rows, `SELECT id, source_ref, order_key, email, name, phone, company, source_created_at,
				IFNULL(payload, '{}') AS payload, merged_into
			FROM leads WHERE tenant_id = ? AND source_id = ? AND source_ref IN (?`+strings.Repeat(", ?", len(refs)-1)+`)
			ORDER BY source_ref FOR UPDATE`, append([]any{tenantID, src}, refs...)...); err != nil {
			return nil, nil, err
		}
		for i := range rows {
			state[key{src, rows[i].SourceRef}] = &rows[i]
		}
	}
	// Records of no lead may be of an erased one: their tombstones, in one
	// statement, only when the batch would create leads (a batch of known
	// leads asks nothing more).
	var candidates [][]byte
	seen := map[key]bool{}
	for _, i := range order {
		k := key{recs[i].SourceID, recs[i].SourceRef}
		if state[k] == nil && !seen[k] {
			seen[k] = true
			candidates = append(candidates, TombstoneKey(k.source, k.ref))
		}
	}
	erased, err := erasedKeys(ctx, x, tenantID, candidates)
	if err != nil {
		return nil, nil, err
	}
	// Records whose lead was merged update its survivor as well, locked
	// here, after the natural keys (lock order: see lockSurvivors).
	survivors, err := lockSurvivors(ctx, x, tenantID, slices.Collect(maps.Values(state)))
	if err != nil {
		return nil, nil, err
	}
	// Decide each record's outcome, as the statements will apply them.
	type newRow struct {
		i     int
		row   []any
		facts newLeadFacts
	}
	var created []newRow
	var upArgs []any
	upRows := 0
	newLead := map[key]bool{} // created by this batch: its later records wait for the INSERT (PendingLeads.Insert)
	for _, i := range order {
		r := recs[i].SenderRecord
		k := key{recs[i].SourceID, r.SourceRef}
		payload := []byte(r.Payload)
		if len(payload) == 0 {
			payload = []byte(`{}`)
		}
		r.Email, r.Name, r.Phone, r.Company = Clip(r.Email, 320), Clip(r.Name, 255), Clip(r.Phone, 64), Clip(r.Company, 255)
		row := []any{tenantID, "", recs[i].SourceID, r.SourceRef, string(payload), r.Email, r.Name,
			r.Phone, r.Company, r.CreatedAt, now, r.Sightings, Tags(r.Tags), now, now, r.OrderKey,
			Clip(NormalizeEmail(r.Email), 320), NormalizePhone(r.Phone)}
		st := state[k]
		switch {
		case st == nil && len(erased) > 0 && erased[string(TombstoneKey(k.source, k.ref))]:
			out[i] = UpsertOutcome{SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeErased}
			continue
		case st == nil:
			st = &senderState{ID: ids.New(), SourceRef: r.SourceRef}
			st.apply(r, payload)
			state[k] = st
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeCreated}
			row[1] = st.ID
			newLead[k] = true
			created = append(created, newRow{i: i, row: row, facts: newLeadFacts{SourceID: recs[i].SourceID, Email: r.Email,
				Name: r.Name, Phone: r.Phone, Company: r.Company, Payload: payload, Tags: r.Tags}})
			continue
		case r.OrderKey < st.OrderKey:
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeStale}
		case st.apply(r, payload):
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeUpdated}
		default:
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeUnchanged}
		}
		// An unchanged record that asks so writes nothing to its own lead
		// (a re-import), but still reaches a merged lead's survivor.
		skip := out[i].Kind == OutcomeUnchanged && recs[i].SkipUnchanged && r.Sightings == 0
		if st.MergedInto != nil {
			if sv := survivors[*st.MergedInto]; sv != nil {
				out[i].SurvivorID, out[i].Kind = sv.st.ID, sv.take(r, payload, now)
			}
		}
		if skip {
			continue
		}
		row[1] = st.ID
		if newLead[k] {
			pending.later = append(pending.later, row...)
			pending.laterRows++
			continue
		}
		upArgs = append(upArgs, row...)
		upRows++
	}
	if len(created) > 0 {
		// New leads find their owner in this transaction (assign.go), in
		// the order the records came; Insert takes the positions.
		sort.Slice(created, func(a, b int) bool { return created[a].i < created[b].i })
		facts := make([]newLeadFacts, len(created))
		pending.rows = make([]pendingRow, len(created))
		for j, c := range created {
			facts[j], pending.rows[j] = c.facts, pendingRow{i: c.i, row: c.row}
		}
		plan, err := planAssign(ctx, x, tenantID, facts, now)
		if err != nil {
			return nil, nil, err
		}
		pending.plan = plan
	}
	if err := upsertRows(ctx, x, upArgs, upRows); err != nil {
		return nil, nil, err
	}
	if err := writeSurvivors(ctx, x, tenantID, survivors); err != nil {
		return nil, nil, err
	}
	pending.out = out
	return out, pending, nil
}

// Insert assigns the pending new leads (the round-robin positions are
// taken here: see assignPlan.take; reserve, when set, is the database
// whose short transactions reserve them apart from x's), inserts them in
// one statement and writes their assignments' timeline entries; it fills
// in the outcomes' OwnerID and Rule. A lead another transaction created
// meanwhile fails it with ErrConcurrentCreate. Nil or empty: nothing.
func (p *PendingLeads) Insert(ctx context.Context, x db.Ext, reserve *sqlx.DB) error {
	if p == nil || len(p.rows) == 0 {
		return nil
	}
	as, err := p.plan.take(ctx, x, reserve)
	if err != nil {
		return err
	}
	leadIDs := make([]string, len(p.rows))
	newArgs := make([]any, 0, len(p.rows)*21)
	for j, c := range p.rows {
		leadIDs[j] = c.row[1].(string)
		var owner, at, due any
		if j < len(as) && as[j] != nil {
			owner, at, due = as[j].OwnerID, as[j].At, as[j].Due
			p.out[c.i].OwnerID, p.out[c.i].Rule = as[j].OwnerID, as[j].RuleName
		}
		newArgs = append(append(newArgs, c.row...), owner, at, due)
	}
	const newCols = `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone, company,
		source_created_at, last_seen_at, times_seen, status, tags, version, created_at, updated_at, order_key,
		email_norm, phone_norm, owner_id, assigned_at, first_response_due_at) VALUES `
	const newVals = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)`
	if _, err := x.ExecContext(ctx, newCols+newVals+strings.Repeat(", "+newVals, len(p.rows)-1), newArgs...); err != nil {
		if db.IsDuplicate(err) {
			return ErrConcurrentCreate
		}
		return err
	}
	if len(as) > 0 {
		if err := assignedEvents(ctx, x, p.tenantID, leadIDs, as); err != nil {
			return err
		}
	}
	return upsertRows(ctx, x, p.later, p.laterRows)
}

// upsertRows applies sender records to existing leads in one statement.
func upsertRows(ctx context.Context, x db.Ext, upArgs []any, upRows int) error {
	const cols = `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone, company,
			source_created_at, last_seen_at, times_seen, status, tags, version, created_at, updated_at, order_key,
			email_norm, phone_norm) VALUES `
	const vals = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, 1, ?, ?, ?, ?, ?)`
	if upRows > 0 {
		// The guard: a record older than the lead's order key writes no
		// sender field. order_key is assigned last (MySQL and MariaDB
		// evaluate the assignments in order, later ones see earlier ones).
		const newer = `VALUES(order_key) >= order_key`
		if _, err := x.ExecContext(ctx, cols+vals+strings.Repeat(", "+vals, upRows-1)+` ON DUPLICATE KEY UPDATE
				payload = IF(`+newer+`, VALUES(payload), payload),
				email = IF(`+newer+` AND VALUES(email) <> '', VALUES(email), email),
				name = IF(`+newer+` AND VALUES(name) <> '', VALUES(name), name),
				phone = IF(`+newer+` AND VALUES(phone) <> '', VALUES(phone), phone),
				company = IF(`+newer+` AND VALUES(company) <> '', VALUES(company), company),
				email_norm = IF(`+newer+` AND VALUES(email) <> '', VALUES(email_norm), email_norm),
				phone_norm = IF(`+newer+` AND VALUES(phone) <> '', VALUES(phone_norm), phone_norm),
				source_created_at = IF(`+newer+`, COALESCE(VALUES(source_created_at), source_created_at), source_created_at),
				updated_at = IF(`+newer+`, VALUES(updated_at), updated_at),
				last_seen_at = GREATEST(last_seen_at, VALUES(last_seen_at)),
				times_seen = times_seen + VALUES(times_seen),
				order_key = GREATEST(order_key, VALUES(order_key))`, upArgs...); err != nil {
			return err
		}
	}
	return nil
}

// ErrConcurrentCreate means another transaction created one of the batch's
// new leads first; re-running the transaction finds it.
var ErrConcurrentCreate = fmt.Errorf("leads: a lead of the batch was created concurrently: %w", db.ErrRetryTx)

// insertManual stores a lead a person created (no source).
func insertManual(ctx context.Context, x db.Ext, l Lead) error {
	_, err := x.ExecContext(ctx, `INSERT INTO leads (tenant_id, id, source_id, source_ref, payload, email, name, phone,
			company, last_seen_at, times_seen, status, tags, version, created_at, updated_at, owner_id, assigned_at, first_response_due_at,
			email_norm, phone_norm)
		VALUES (?, ?, '', ?, ?, ?, ?, ?, ?, ?, 1, 'new', ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
		l.TenantID, l.ID, l.SourceRef, string(l.Payload), l.Email, l.Name, l.Phone, l.Company, l.LastSeenAt, l.Tags, l.CreatedAt, l.UpdatedAt,
		l.OwnerID, l.AssignedAt, l.FirstResponseDueAt, Clip(NormalizeEmail(l.Email), 320), NormalizePhone(l.Phone))
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

// countByStatus counts every lead per status (an exact count: one
// status-index entry per lead).
func countByStatus(ctx context.Context, x db.Ext, tenantID string) (map[string]int, error) {
	var rows []struct {
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := x.SelectContext(ctx, &rows, `SELECT status, COUNT(*) AS n FROM leads WHERE tenant_id = ? GROUP BY status`, tenantID); err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// countMatchingUpTo counts, per status, the leads matching f (its owner,
// source, due date and q; its status is replaced by each one), each up to
// limit+1 rows, so the inbox's tabs follow the view and the search at a
// bounded cost.
func countMatchingUpTo(ctx context.Context, x db.Ext, tenantID string, f Filter, statuses []string, limit int) (map[string]int, error) {
	parts := make([]string, len(statuses))
	var args []any
	for i, st := range statuses {
		g := f
		g.Status, g.AnyStatus = st, nil
		cond, a := g.where(tenantID)
		if g.Q != "" {
			pat := likePrefix(g.Q)
			var ors []string
			for _, c := range columnsFor(g.Q) {
				ors = append(ors, c.col+" LIKE ?")
				a = append(a, pat)
			}
			cond += " AND (" + strings.Join(ors, " OR ") + ")"
		}
		parts[i] = `SELECT ? AS status, COUNT(*) AS n FROM (SELECT 1 FROM leads WHERE ` + cond + ` LIMIT ?) t` + string(rune('a'+i))
		args = append(args, st)
		args = append(args, a...)
		args = append(args, limit+1)
	}
	var rows []struct {
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := x.SelectContext(ctx, &rows, strings.Join(parts, " UNION ALL "), args...); err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// countByStatusUpTo counts leads per status, each up to limit+1: each
// count reads at most limit+1 entries of ix_leads_status, so the answer
// costs the same with 1M leads as with 10k.
func countByStatusUpTo(ctx context.Context, x db.Ext, tenantID string, statuses []string, limit int) (map[string]int, error) {
	parts := make([]string, len(statuses))
	args := make([]any, 0, 3*len(statuses))
	for i, st := range statuses {
		parts[i] = `SELECT ? AS status, COUNT(*) AS n FROM (SELECT 1 FROM leads FORCE INDEX (ix_leads_status) WHERE tenant_id = ? AND status = ? LIMIT ?) t` + string(rune('a'+i))
		args = append(args, st, tenantID, st, limit+1)
	}
	var rows []struct {
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := x.SelectContext(ctx, &rows, strings.Join(parts, " UNION ALL "), args...); err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// newestWithStatus returns the newest n leads of one status (a board
// column), one indexed range.
func newestWithStatus(ctx context.Context, x db.Ext, tenantID, status string, n int) ([]Lead, error) {
	var ls []Lead
	err := x.SelectContext(ctx, &ls, `SELECT `+LeadCols+` FROM leads WHERE tenant_id = ? AND status = ?
		ORDER BY id DESC LIMIT ?`, tenantID, status, n)
	return ls, err
}

// ---- Lead list: filters, keyset pages and search ----

// where renders the filter conditions (without q and the cursor).
func (f Filter) where(tenantID string) (string, []any) {
	var b strings.Builder
	args := []any{tenantID}
	b.WriteString("tenant_id = ?")
	if f.Status != "" {
		b.WriteString(" AND status = ?")
		args = append(args, f.Status)
	} else if len(f.AnyStatus) > 0 {
		b.WriteString(" AND status IN (?" + strings.Repeat(", ?", len(f.AnyStatus)-1) + ")")
		for _, st := range f.AnyStatus {
			args = append(args, st)
		}
	} else {
		// A merged lead leaves the lists (docs/ARCHITECTURE.md, "Merged leads"); a status range
		// never holds one, a walk of every status tests the row.
		b.WriteString(" AND status <> '" + StatusMerged + "'")
	}
	if f.Duplicates {
		// Possible duplicates: another visible lead with the same normalized
		// email or phone, one probe of ix_leads_email_norm / ix_leads_phone_norm.
		b.WriteString(` AND ((leads.email_norm <> '' AND EXISTS (SELECT 1 FROM leads d WHERE d.tenant_id = leads.tenant_id
				AND d.email_norm = leads.email_norm AND d.id <> leads.id AND d.status <> '` + StatusMerged + `'))
			OR (leads.phone_norm <> '' AND EXISTS (SELECT 1 FROM leads d WHERE d.tenant_id = leads.tenant_id
				AND d.phone_norm = leads.phone_norm AND d.id <> leads.id AND d.status <> '` + StatusMerged + `')))`)
	}
	if f.DueBefore != nil {
		b.WriteString(" AND due_at < ?")
		args = append(args, *f.DueBefore)
	} else if f.ByDue {
		b.WriteString(" AND due_at IS NOT NULL") // a list by due date has none without
	}
	switch f.SourceID {
	case "":
	case SourceManual:
		b.WriteString(" AND source_id = ''")
	default:
		b.WriteString(" AND source_id = ?")
		args = append(args, f.SourceID)
	}
	switch f.OwnerID {
	case "":
	case OwnerNone:
		b.WriteString(" AND owner_id IS NULL")
	default:
		b.WriteString(" AND owner_id = ?")
		args = append(args, f.OwnerID)
	}
	switch f.SLA {
	case SLAOverdue:
		b.WriteString(" AND first_responded_at IS NULL AND first_response_due_at < ?")
		args = append(args, f.slaNow)
	case SLADueSoon:
		b.WriteString(" AND first_responded_at IS NULL AND first_response_due_at >= ? AND first_response_due_at < ?")
		args = append(args, f.slaNow, f.slaNow.Add(DueSoonWindow))
	}
	return b.String(), args
}

// listPage returns the newest n leads matching f (without q) below the id
// before ("" from the newest).
func listPage(ctx context.Context, x db.Ext, tenantID string, f Filter, before string, n int) ([]Lead, error) {
	cond, args := f.where(tenantID)
	if before != "" {
		cond += " AND id < ?"
		args = append(args, before)
	}
	args = append(args, n)
	var items []Lead
	err := x.SelectContext(ctx, &items, `SELECT `+LeadCols+` FROM leads`+f.slaHint()+` WHERE `+cond+` ORDER BY id DESC LIMIT ?`, args...)
	return items, err
}

// slaHint keeps an SLA list on its index: the unanswered leads due in a
// range are few, and walking the primary key newest first to find them
// would read the whole tenant.
func (f Filter) slaHint() string {
	if f.SLA == "" {
		return ""
	}
	return " FORCE INDEX (ix_leads_sla)"
}

// exportCols are the columns a CSV export shows: LeadCols without the raw
// payload, the widest column, which the export never prints.
const exportCols = `tenant_id, id, source_id, source_ref, email, name, phone, company,
	source_created_at, last_seen_at, times_seen, status, owner_id, tags, next_step, due_at, version, created_at, updated_at,
	assigned_at, first_response_due_at, first_responded_at`

// exportPage is listPage without the payload, for the CSV export.
func exportPage(ctx context.Context, x db.Ext, tenantID string, f Filter, before string, n int) ([]Lead, error) {
	cond, args := f.where(tenantID)
	if before != "" {
		cond += " AND id < ?"
		args = append(args, before)
	}
	args = append(args, n)
	var items []Lead
	err := x.SelectContext(ctx, &items, `SELECT `+exportCols+` FROM leads`+f.slaHint()+` WHERE `+cond+` ORDER BY id DESC LIMIT ?`, args...)
	return items, err
}

// statuses are the statuses f lists: its status, else its AnyStatus, else
// all.
func (f Filter) statuses() []string {
	switch {
	case f.Status != "":
		return []string{f.Status}
	case len(f.AnyStatus) > 0:
		return f.AnyStatus
	}
	return Statuses
}

// listOrder is a list's order: the columns it sorts by and the ORDER BY.
type listOrder struct{ cols, by string }

var (
	newestFirst = listOrder{cols: "id", by: "id DESC"}
	dueFirst    = listOrder{cols: "due_at, id", by: "due_at, id"}
)

// perStatus returns one branch per status of f: the filter with that
// status, the hint's index and the cursor condition, in order o and
// limited to n, for unionPage. An index that starts (tenant_id, owner_id, status)
// or (tenant_id, status) holds each branch's leads in list order, so a
// branch reads at most n entries of it and no rows, however the person's
// leads spread over the statuses and the tenant.
func (f Filter) perStatus(tenantID, hint, after string, afterArgs []any, o listOrder, n int) ([]string, []any) {
	sts := f.statuses()
	branches := make([]string, len(sts))
	var args []any
	for i, st := range sts {
		g := f
		g.Status, g.AnyStatus = st, nil
		cond, a := g.where(tenantID)
		args = append(args, a...)
		if after != "" {
			cond += " AND " + after
			args = append(args, afterArgs...)
		}
		branches[i] = `(SELECT ` + o.cols + ` FROM leads` + hint + ` WHERE ` + cond + ` ORDER BY ` + o.by + ` LIMIT ?)`
		args = append(args, n)
	}
	return branches, args
}

// unionPage returns the first n leads in order o of the union of branches
// (each selecting o's columns in that order, limited), joined back to
// their rows: one statement.
func unionPage(ctx context.Context, x db.Ext, tenantID string, branches []string, args []any, o listOrder, n int) ([]Lead, error) {
	var out []Lead
	err := x.SelectContext(ctx, &out, `SELECT `+leadColsL+` FROM (SELECT `+o.cols+` FROM (`+strings.Join(branches, " UNION ")+
		`) u ORDER BY `+o.by+` LIMIT ?) t JOIN leads l ON l.tenant_id = ? AND l.id = t.id ORDER BY `+qualified("t", o.by),
		append(args, n, tenantID)...)
	return out, err
}

// qualified prefixes the columns of an ORDER BY list with a table alias.
func qualified(alias, order string) string {
	parts := strings.Split(order, ", ")
	for i, p := range parts {
		parts[i] = alias + "." + p
	}
	return strings.Join(parts, ", ")
}

// listAnyStatus returns the newest n leads in any of f.AnyStatus below the
// id before ("" from the newest), one index range per status ("My open
// leads": the four open statuses of one person). A plain IN list would
// walk the primary key backwards testing every row, reading the whole
// tenant for a person who owns few leads.
func listAnyStatus(ctx context.Context, x db.Ext, tenantID string, f Filter, before string, n int) ([]Lead, error) {
	hint := ""
	switch {
	case f.OwnerID != "":
		hint = " FORCE INDEX (ix_leads_owner_status)"
	case f.SourceID == "":
		hint = " FORCE INDEX (ix_leads_status)"
	}
	var after string
	var afterArgs []any
	if before != "" {
		after, afterArgs = "id < ?", []any{before}
	}
	branches, args := f.perStatus(tenantID, hint, after, afterArgs, newestFirst, n)
	return unionPage(ctx, x, tenantID, branches, args, newestFirst, n)
}

// listByDue returns the first n leads matching f with a due date, earliest
// due first (ties by id), after the cursor: "My follow-ups due", one range
// of ix_leads_owner_status_due per status, read from the index alone. ("Due
// before" in id order instead would sort every due lead of the person.)
func listByDue(ctx context.Context, x db.Ext, tenantID string, f Filter, after cursor, n int) ([]Lead, error) {
	hint := ""
	if f.OwnerID != "" {
		hint = " FORCE INDEX (ix_leads_owner_status_due)"
	}
	var cond string
	var condArgs []any
	if after.id != "" {
		cond = "due_at >= ? AND (due_at > ? OR id > ?)"
		condArgs = []any{after.due, after.due, after.id}
	}
	branches, args := f.perStatus(tenantID, hint, cond, condArgs, dueFirst, n)
	return unionPage(ctx, x, tenantID, branches, args, dueFirst, n)
}

// Search (GET /api/v1/leads?q=) matches q as a prefix of the name, the
// name's last word, the email, the email's domain or the company, case-
// and accent-insensitively (the columns' collation): "smi" finds "John
// Smith", "acme" finds "jo@acme.io" and "Acme Corp", "maria g" finds
// "Maria Garcia".
//
// Why not LIKE '%q%': with 1M leads in a tenant it reads every row when q
// is rare (seconds). Why not FULLTEXT: an InnoDB FULLTEXT index cannot
// start with tenant_id, so a common word is looked up across all tenants
// and then sorted by id; it also ignores words under 3 characters and
// stopwords, and MariaDB has no n-gram parser for substrings.
//
// Instead each searched column has an index (tenant_id, status, column)
// (migration 0102). With a status filter one range per column holds
// exactly the candidates; without, six ranges (status IN all). A page is
// then found whichever way is cheap for this q:
//
//  1. Ask the optimizer how many entries those ranges hold (an estimate
//     from index dives; no entries are read).
//  2. Few, at most IndexBudget (rare q): each column's range yields its
//     newest ids below the cursor (the cursor and status are checked
//     inside the index); the union's newest `limit` ids are the page.
//     Cost ∝ candidates.
//  3. Many (common q): matches are dense, so walking the leads in list
//     order from the cursor and testing each row fills the page quickly;
//     at most ScanBudget rows are read. Should the window still not fill
//     the page (q common overall but rare below this cursor or with this
//     owner/source), step 2 finds the rest below the window.
//
// Every path applies the same predicate, so the result does not depend on
// which ran, and the cursor stays the last id of the page.
const (
	defaultIndexBudget = 12000
	defaultScanBudget  = 4000
)

type searchCol struct{ col, index string }

var searchCols = []searchCol{
	{"name", "ix_leads_q_name"},
	{"name_last", "ix_leads_q_name_last"},
	{"email", "ix_leads_q_email"},
	{"email_domain", "ix_leads_q_email_domain"},
	{"company", "ix_leads_q_company"},
}

// likePrefix escapes LIKE's wildcards in q and appends %.
func likePrefix(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(q) + "%"
}

// columnsFor leaves out columns q cannot match: a last word has no space,
// a domain no @.
func columnsFor(q string) []searchCol {
	out := make([]searchCol, 0, len(searchCols))
	for _, c := range searchCols {
		if c.col == "name_last" && strings.ContainsAny(q, " \t") {
			continue
		}
		if c.col == "email_domain" && strings.Contains(q, "@") {
			continue
		}
		out = append(out, c)
	}
	return out
}

// orderedIndex names the index that lists the filter's leads in id order.
func (f Filter) orderedIndex() string {
	switch {
	case f.Status != "":
		return "ix_leads_status"
	case f.OwnerID != "":
		return "ix_leads_owner"
	case f.SourceID != "":
		return "ix_leads_source"
	}
	return "PRIMARY"
}

// statusRange is the status part of a search-index range.
func (f Filter) statusRange() (string, []any) {
	if f.Status != "" {
		return "status = ?", []any{f.Status}
	}
	if len(f.AnyStatus) > 0 {
		args := make([]any, len(f.AnyStatus))
		for i, st := range f.AnyStatus {
			args[i] = st
		}
		return "status IN (?" + strings.Repeat(", ?", len(f.AnyStatus)-1) + ")", args
	}
	return "status IN ('" + strings.Join(Statuses, "','") + "')", nil
}

// searchBudgets are the two thresholds of search (see above).
type searchBudgets struct{ index, scan int }

func search(ctx context.Context, x db.Ext, tenantID string, f Filter, before string, n int, b searchBudgets) ([]Lead, error) {
	pat := likePrefix(f.Q)
	cols := columnsFor(f.Q)

	indexBudget, scanBudget := b.index, b.scan
	if indexBudget <= 0 {
		indexBudget = defaultIndexBudget
	}
	if scanBudget <= 0 {
		scanBudget = defaultScanBudget
	}
	if f.Status == "" {
		// Without a status filter the window walks the primary key (no
		// lookups) over all statuses, and the break-even between the two
		// paths grows with √(leads in the filter): measured about 2×.
		indexBudget *= 2
	}
	few, err := fewCandidates(ctx, x, tenantID, f, cols, pat, indexBudget)
	if err != nil {
		return nil, err
	}
	if few {
		return searchIndexes(ctx, x, tenantID, f, cols, pat, before, n)
	}

	// Common q: a window of at most scanBudget leads below the cursor, in
	// list order on the filter's own index.
	base, baseArgs := f.where(tenantID)
	cond, args := base, append([]any(nil), baseArgs...)
	if before != "" {
		cond += " AND id < ?"
		args = append(args, before)
	}
	hint := " FORCE INDEX (" + f.orderedIndex() + ")"
	var floor string
	err = x.GetContext(ctx, &floor, `SELECT id FROM leads`+hint+` WHERE `+cond+` ORDER BY id DESC LIMIT 1 OFFSET ?`,
		append(args[:len(args):len(args)], scanBudget-1)...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	preds := make([]string, len(cols))
	for i, c := range cols {
		preds[i] = c.col + " LIKE ?"
		args = append(args, pat)
	}
	cond += " AND (" + strings.Join(preds, " OR ") + ")"
	if floor != "" {
		cond += " AND id >= ?"
		args = append(args, floor)
	}
	var items []Lead
	if err := x.SelectContext(ctx, &items, `SELECT `+LeadCols+` FROM leads`+hint+` WHERE `+cond+` ORDER BY id DESC LIMIT ?`,
		append(args, n)...); err != nil {
		return nil, err
	}
	if len(items) >= n || floor == "" {
		return items, nil // page full, or the window reached the oldest lead
	}
	more, err := searchIndexes(ctx, x, tenantID, f, cols, pat, floor, n-len(items))
	return append(items, more...), err
}

// fewCandidates reports whether the search-index ranges of q are estimated
// to hold at most budget entries. The estimate is the optimizer's own
// (EXPLAIN's rows: B-tree dives at both ends of each range, exact for small
// ranges and within about 2× for large ones), so deciding costs one round
// trip and no index reads however common q is; counting entries up to the
// budget measured 20–40 ms for a common prefix on 1M leads.
func fewCandidates(ctx context.Context, x db.Ext, tenantID string, f Filter, cols []searchCol, pat string, budget int) (bool, error) {
	st, stArgs := f.statusRange()
	parts := make([]string, len(cols))
	var args []any
	for i, c := range cols {
		parts[i] = `SELECT 1 FROM leads FORCE INDEX (` + c.index + `) WHERE tenant_id = ? AND ` + st + ` AND ` + c.col + ` LIKE ?`
		args = append(args, tenantID)
		args = append(args, stArgs...)
		args = append(args, pat)
	}
	rows, err := x.QueryxContext(ctx, `EXPLAIN `+strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		m := map[string]any{}
		if err := rows.MapScan(m); err != nil {
			return false, err
		}
		total += explainRows(m["rows"])
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	return total <= int64(budget), nil
}

// explainRows reads EXPLAIN's rows column (NULL for a union's result row).
func explainRows(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case []byte:
		n, _ := strconv.ParseInt(string(x), 10, 64)
		return n
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// searchIndexes returns the newest n leads below before (all when "")
// matching q, from the union of each column's index range. Status and the
// cursor are checked inside the index; owner and source need the row.
func searchIndexes(ctx context.Context, x db.Ext, tenantID string, f Filter, cols []searchCol, pat, before string, n int) ([]Lead, error) {
	base, baseArgs := f.where(tenantID)
	if f.Status == "" && len(f.AnyStatus) == 0 { // where() already holds a status condition otherwise
		st, _ := f.statusRange()
		base += " AND " + st
	}
	branches := make([]string, len(cols))
	var args []any
	for i, c := range cols {
		b := `(SELECT id FROM leads FORCE INDEX (` + c.index + `) WHERE ` + base + ` AND ` + c.col + ` LIKE ?`
		args = append(args, baseArgs...)
		args = append(args, pat)
		if before != "" {
			b += ` AND id < ?`
			args = append(args, before)
		}
		branches[i] = b + ` ORDER BY id DESC LIMIT ?)`
		args = append(args, n)
	}
	// One statement: the union's newest n ids, joined back to their rows.
	return unionPage(ctx, x, tenantID, branches, args, newestFirst, n)
}

// ---- Notes ----

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

// ruleRow is one assignment_rules row.
type ruleRow struct {
	ID       string
	Position int
	AssignmentRule
}

// assignmentRules reads the tenant's rules in order (one range of the
// primary key's tenant prefix: a tenant has a few).
func assignmentRules(ctx context.Context, x db.Ext, tenantID string) ([]ruleRow, error) {
	var rows []struct {
		ID       string  `db:"id"`
		Position int     `db:"position"`
		Name     string  `db:"name"`
		SourceID *string `db:"source_id"`
		Field    *string `db:"field"`
		Equals   *string `db:"equals"`
		Strategy string  `db:"strategy"`
		Members  *string `db:"members"`
		OwnerID  *string `db:"owner_id"`
	}
	if err := x.SelectContext(ctx, &rows, `SELECT id, position, name, source_id, field, equals, strategy, members, owner_id
		FROM assignment_rules WHERE tenant_id = ? ORDER BY position`, tenantID); err != nil {
		return nil, err
	}
	out := make([]ruleRow, len(rows))
	for i, r := range rows {
		out[i] = ruleRow{ID: r.ID, Position: r.Position, AssignmentRule: AssignmentRule{Name: r.Name,
			When: RuleCondition{SourceID: r.SourceID, Field: r.Field, Equals: r.Equals}, Strategy: r.Strategy, OwnerID: r.OwnerID}}
		if r.Members != nil {
			if err := json.Unmarshal([]byte(*r.Members), &out[i].Members); err != nil {
				return nil, fmt.Errorf("assignment rule %s: members: %w", r.ID, err)
			}
		}
	}
	return out, nil
}

// firstResponseMinutes reads the tenant's setting (the default without
// one).
func firstResponseMinutes(ctx context.Context, x db.Ext, tenantID string) (int, error) {
	var n int
	err := x.GetContext(ctx, &n, `SELECT first_response_minutes FROM assignment_settings WHERE tenant_id = ?`, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return DefaultFirstResponseMinutes, nil
	}
	return n, err
}

// replaceAssignment replaces the tenant's rules (with fresh positions)
// and its setting.
func replaceAssignment(ctx context.Context, x db.Ext, tenantID string, rules []ruleRow, minutes int, now time.Time) error {
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
			var members any
			if r.Members != nil {
				b, err := json.Marshal(r.Members)
				if err != nil {
					return err
				}
				members = string(b)
			}
			args = append(args, tenantID, r.ID, r.Position, r.Name, r.When.SourceID, r.When.Field, r.When.Equals, r.Strategy, members, r.OwnerID, now)
			cargs = append(cargs, tenantID, r.ID)
		}
		const v = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
		if _, err := x.ExecContext(ctx, `INSERT INTO assignment_rules (tenant_id, id, position, name, source_id, field, equals, strategy, members, owner_id, created_at)
			VALUES `+v+strings.Repeat(", "+v, len(rules)-1), args...); err != nil {
			return err
		}
		if _, err := x.ExecContext(ctx, `INSERT INTO assignment_counters (tenant_id, rule_id, next_pos) VALUES (?, ?, 0)`+
			strings.Repeat(", (?, ?, 0)", len(rules)-1), cargs...); err != nil {
			return err
		}
	}
	_, err := x.ExecContext(ctx, `INSERT INTO assignment_settings (tenant_id, first_response_minutes, updated_at) VALUES (?, ?, ?)
		ON DUPLICATE KEY UPDATE first_response_minutes = VALUES(first_response_minutes), updated_at = VALUES(updated_at)`, tenantID, minutes, now)
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
func leftReservations(ctx context.Context, x db.Ext, tenantID, ruleID string, now time.Time) ([]reservation, error) {
	var ids []string
	if err := x.SelectContext(ctx, &ids, `SELECT id FROM assignment_reservations WHERE tenant_id = ? AND rule_id = ? AND created_at < ?
		ORDER BY id LIMIT 16`, tenantID, ruleID, now.Add(-reservationOrphanAge)); err != nil || len(ids) == 0 {
		return nil, err
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
// when the rule has no counter (it was replaced meanwhile).
func reserveApart(ctx context.Context, d *sqlx.DB, tenantID, ruleID string, n int64, now time.Time) (r reservation, ok bool, err error) {
	err = db.InTx(ctx, d, func(tx *sqlx.Tx) error {
		start, found, err := reserveCounter(ctx, tx, tenantID, ruleID, n)
		if err != nil || !found {
			ok = false
			return err
		}
		r, ok = reservation{ID: ids.New(), Start: start, N: n}, true
		_, err = tx.ExecContext(ctx, `INSERT INTO assignment_reservations (tenant_id, rule_id, id, start_pos, n, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			tenantID, ruleID, r.ID, r.Start, r.N, now)
		return err
	})
	return r, ok, err
}

// reserveCounter takes n round-robin positions of a rule in one
// statement and returns the first (the row stays locked to the commit).
// ok is false when the rule has no counter (it was replaced meanwhile).
// LAST_INSERT_ID(expr) hands the new value back in the statement's OK
// packet, so no second round trip reads it.
func reserveCounter(ctx context.Context, x db.Ext, tenantID, ruleID string, n int64) (start int64, ok bool, err error) {
	res, err := x.ExecContext(ctx, `UPDATE assignment_counters SET next_pos = LAST_INSERT_ID(next_pos + ?) WHERE tenant_id = ? AND rule_id = ?`,
		n, tenantID, ruleID)
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

// sameContact reads the other visible leads with the normalized email and
// with the normalized phone (each "" asks nothing), newest first: one
// range of ix_leads_email_norm / ix_leads_phone_norm each.
func sameContact(ctx context.Context, x db.Ext, tenantID, id, email, phone string, limit int) (byEmail, byPhone []Lead, err error) {
	if email != "" {
		if err = x.SelectContext(ctx, &byEmail, `SELECT `+LeadCols+` FROM leads FORCE INDEX (ix_leads_email_norm)
			WHERE tenant_id = ? AND email_norm = ? AND id <> ? AND status <> '`+StatusMerged+`' ORDER BY id DESC LIMIT ?`,
			tenantID, email, id, limit); err != nil {
			return nil, nil, err
		}
	}
	if phone != "" {
		if err = x.SelectContext(ctx, &byPhone, `SELECT `+LeadCols+` FROM leads FORCE INDEX (ix_leads_phone_norm)
			WHERE tenant_id = ? AND phone_norm = ? AND id <> ? AND status <> '`+StatusMerged+`' ORDER BY id DESC LIMIT ?`,
			tenantID, phone, id, limit); err != nil {
			return nil, nil, err
		}
	}
	return byEmail, byPhone, nil
}

// groupOf is a lead's id and the ids of the leads merged into it.
func groupOf(ctx context.Context, x db.Ext, tenantID, id string) ([]string, error) {
	var merged []string
	if err := x.SelectContext(ctx, &merged, `SELECT id FROM leads WHERE tenant_id = ? AND merged_into = ? ORDER BY id`,
		tenantID, id); err != nil {
		return nil, err
	}
	return append([]string{id}, merged...), nil
}

// anyMergedInto returns one of ids that has leads merged into it ("" for
// none).
func anyMergedInto(ctx context.Context, x db.Ext, tenantID string, ids []string) (string, error) {
	q, args, err := sqlx.In(`SELECT merged_into FROM leads WHERE tenant_id = ? AND merged_into IN (?) LIMIT 1`, tenantID, ids)
	if err != nil {
		return "", err
	}
	var parent string
	err = x.GetContext(ctx, &parent, q, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return parent, err
}

// writeMergedSurvivor writes a survivor as a merge or an unmerge leaves it
// (the row is locked): the picked fields, tags, sightings and version.
func writeMergedSurvivor(ctx context.Context, x db.Ext, tenantID string, l Lead) error {
	_, err := x.ExecContext(ctx, `UPDATE leads SET email = ?, name = ?, phone = ?, company = ?, email_norm = ?, phone_norm = ?,
			status = ?, owner_id = ?, next_step = ?, due_at = ?, tags = ?, times_seen = ?, last_seen_at = ?, version = ?, updated_at = ?
		WHERE tenant_id = ? AND id = ?`,
		l.Email, l.Name, l.Phone, l.Company, Clip(NormalizeEmail(l.Email), 320), NormalizePhone(l.Phone),
		l.Status, l.OwnerID, l.NextStep, l.DueAt, l.Tags, l.TimesSeen, l.LastSeenAt, l.Version, l.UpdatedAt, tenantID, l.ID)
	return err
}

// markMerged points the merged leads at their survivor and takes them out
// of the lists.
func markMerged(ctx context.Context, x db.Ext, tenantID, survivorID string, merged []string, now time.Time) error {
	q, args, err := sqlx.In(`UPDATE leads SET merged_into = ?, status = ?, version = version + 1, updated_at = ?
		WHERE tenant_id = ? AND id IN (?)`, survivorID, StatusMerged, now, tenantID, merged)
	if err != nil {
		return err
	}
	_, err = x.ExecContext(ctx, q, args...)
	return err
}

// restoreMerged gives an unmerged lead its own status back.
func restoreMerged(ctx context.Context, x db.Ext, tenantID, id, status string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE leads SET merged_into = NULL, status = ?, version = version + 1, updated_at = ?
		WHERE tenant_id = ? AND id = ?`, status, now, tenantID, id)
	return err
}

// mergeRecord is one lead_merges row.
type mergeRecord struct {
	ID         string    `db:"id"`
	SurvivorID string    `db:"survivor_id"`
	MergedID   string    `db:"merged_id"`
	State      []byte    `db:"state"`
	ActorName  string    `db:"actor_name"`
	MergedAt   time.Time `db:"merged_at"`
}

func insertMergeRecords(ctx context.Context, x db.Ext, tenantID string, recs []mergeRecord) error {
	if len(recs) == 0 {
		return nil
	}
	args := make([]any, 0, 7*len(recs))
	for _, r := range recs {
		args = append(args, tenantID, r.ID, r.SurvivorID, r.MergedID, string(r.State), Clip(r.ActorName, 255), r.MergedAt)
	}
	const v = `(?, ?, ?, ?, ?, ?, ?)`
	_, err := x.ExecContext(ctx, `INSERT INTO lead_merges (tenant_id, id, survivor_id, merged_id, state, actor_name, merged_at)
		VALUES `+v+strings.Repeat(", "+v, len(recs)-1), args...)
	return err
}

// openMergeRecord reads (and locks) the merge of mergedID into survivorID
// that is not undone.
func openMergeRecord(ctx context.Context, x db.Ext, tenantID, survivorID, mergedID string) (mergeRecord, error) {
	var r mergeRecord
	err := x.GetContext(ctx, &r, `SELECT id, survivor_id, merged_id, state, actor_name, merged_at FROM lead_merges
		WHERE tenant_id = ? AND merged_id = ? AND survivor_id = ? AND undone_at IS NULL ORDER BY id DESC LIMIT 1 FOR UPDATE`,
		tenantID, mergedID, survivorID)
	return r, db.MapErr(err, "no merge record of this lead", "")
}

func closeMergeRecord(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) error {
	_, err := x.ExecContext(ctx, `UPDATE lead_merges SET undone_at = ? WHERE tenant_id = ? AND id = ?`, now, tenantID, id)
	return err
}

// SenderFields are a lead's sender-owned fields as stored.
type SenderFields struct {
	SourceRef string `db:"source_ref"`
	Email     string `db:"email"`
	Name      string `db:"name"`
	Phone     string `db:"phone"`
	Company   string `db:"company"`
}

// SenderFieldsByRef returns the sender-owned fields of a source's leads
// with the given natural keys, keyed by source_ref; absent keys have no
// lead. Reconcile compares a pulled record with them.
func SenderFieldsByRef(ctx context.Context, x db.Ext, tenantID, sourceID string, refs []string) (map[string]SenderFields, error) {
	out := make(map[string]SenderFields, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT source_ref, email, name, phone, company FROM leads
		WHERE tenant_id = ? AND source_id = ? AND source_ref IN (?)`, tenantID, sourceID, refs)
	if err != nil {
		return nil, err
	}
	var rows []SenderFields
	if err := x.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.SourceRef] = r
	}
	return out, nil
}

// AddSightings adds n[id] to the times_seen of each lead in ids (one
// statement, rows locked in the given order): duplicates of the leads'
// deliveries, counted by the webhooks area. A merged lead's survivor gets
// them too, as a record of the lead does (survivor.go): leads first, then
// their survivors in id order.
func AddSightings(ctx context.Context, x db.Ext, tenantID string, ids []string, n map[string]int) error {
	if len(ids) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(`UPDATE leads SET times_seen = times_seen + CASE id`)
	args := make([]any, 0, 3*len(ids)+1)
	for _, id := range ids {
		b.WriteString(` WHEN ? THEN ?`)
		args = append(args, id, n[id])
	}
	b.WriteString(` ELSE 0 END WHERE tenant_id = ? AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`)
	args = append(args, tenantID)
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := x.ExecContext(ctx, b.String(), args...); err != nil {
		return err
	}
	// The rows are locked now, so their pointers hold until commit.
	q, qargs, err := sqlx.In(`SELECT id, merged_into FROM leads WHERE tenant_id = ? AND id IN (?) AND merged_into IS NOT NULL`, tenantID, ids)
	if err != nil {
		return err
	}
	var ptrs []struct {
		ID         string `db:"id"`
		MergedInto string `db:"merged_into"`
	}
	if err := x.SelectContext(ctx, &ptrs, q, qargs...); err != nil {
		return err
	}
	if len(ptrs) == 0 {
		return nil
	}
	sv := map[string]int{}
	for _, p := range ptrs {
		sv[p.MergedInto] += n[p.ID]
	}
	for _, id := range slices.Sorted(maps.Keys(sv)) {
		if _, err := x.ExecContext(ctx, `UPDATE leads SET times_seen = times_seen + ? WHERE tenant_id = ? AND id = ?`, sv[id], tenantID, id); err != nil {
			return err
		}
	}
	return nil
}

// eraseMerges removes an erased lead's merge records (they hold its
// fields) in the erasure's transaction; leads merged into it stand alone
// again with their own status.
func eraseMerges(ctx context.Context, x db.Ext, tenantID, id string, now time.Time) error {
	var recs []struct {
		MergedID string `db:"merged_id"`
		State    []byte `db:"state"`
	}
	if err := x.SelectContext(ctx, &recs, `SELECT merged_id, state FROM lead_merges
		WHERE tenant_id = ? AND survivor_id = ? AND undone_at IS NULL ORDER BY merged_id`, tenantID, id); err != nil {
		return err
	}
	for _, r := range recs {
		var st mergeState
		if json.Unmarshal(r.State, &st) != nil || !ValidStatus(st.Status) {
			st.Status = "new"
		}
		if _, err := x.ExecContext(ctx, `UPDATE leads SET merged_into = NULL, status = ?, version = version + 1, updated_at = ?
			WHERE tenant_id = ? AND id = ? AND merged_into = ?`, st.Status, now, tenantID, r.MergedID, id); err != nil {
			return err
		}
	}
	_, err := x.ExecContext(ctx, `DELETE FROM lead_merges WHERE tenant_id = ? AND (survivor_id = ? OR merged_id = ?)`, tenantID, id, id)
	return err
}
