package leads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
)

// The sender side of the leads table: the single and batch upserts that
// webhooks, reconcile and imports write through (only sender-owned fields,
// only for a newer record), and what other areas read or add of it.

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
	// Touch is the record's attribution and consent, if it carries any
	// (WriteSenders fills in its LeadID).
	Touch *TouchRecord
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
	ID        string `db:"id"`
	SourceRef string `db:"source_ref"`
	OrderKey  string `db:"order_key"`
	Email     string `db:"email"`
	Name      string `db:"name"`
	NameFirst string `db:"name_part_first"`
	NameLast  string `db:"name_part_last"`
	// The order keys of the records that set the parts (name_parts.go).
	NameFirstKey string     `db:"name_part_first_key"`
	NameLastKey  string     `db:"name_part_last_key"`
	Phone        string     `db:"phone"`
	Company      string     `db:"company"`
	CreatedAt    *time.Time `db:"source_created_at"`
	Payload      []byte     `db:"payload"`
	// The survivor this lead was merged into (merge.go): a record with the
	// lead's natural key updates the survivor too.
	MergedInto *string `db:"merged_into"`
	// partsDirty: a record changed the name parts (writeNameParts).
	partsDirty bool
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
	name := r.Name
	if r.hasNameParts() {
		st.applyNameParts(r)
		name = Clip(joinParts(st.NameFirst, st.NameLast), 255)
	}
	set(&st.Name, name)
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
	later []leadRow
	// parts are the new leads' states: their name parts are written
	// after the INSERT (writeNameParts).
	parts []*senderState
}

type pendingRow struct {
	i   int // in the outcomes
	row leadRow
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
		if err := x.SelectContext(ctx, &rows, `SELECT id, source_ref, order_key, email, name, name_part_first, name_part_last, name_part_first_key, name_part_last_key, phone, company, source_created_at,
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
		row   leadRow
		facts newLeadFacts
	}
	var created []newRow
	var upserts []leadRow
	newLead := map[key]bool{} // created by this batch: its later records wait for the INSERT (PendingLeads.Insert)
	for _, i := range order {
		r := recs[i].SenderRecord
		k := key{recs[i].SourceID, r.SourceRef}
		payload := []byte(r.Payload)
		if len(payload) == 0 {
			payload = []byte(`{}`)
		}
		r.Email, r.Name, r.Phone, r.Company = Clip(r.Email, 320), Clip(r.Name, 255), Clip(r.Phone, 64), Clip(r.Company, 255)
		row := leadRow{TenantID: tenantID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Payload: string(payload),
			Email: r.Email, Name: r.Name, Phone: r.Phone, Company: r.Company, SourceCreatedAt: r.CreatedAt, LastSeenAt: now,
			TimesSeen: r.Sightings, Status: statusNew, Tags: Tags(r.Tags), CreatedAt: now, UpdatedAt: now, OrderKey: r.OrderKey,
			EmailNorm: Clip(NormalizeEmail(r.Email), 320), PhoneNorm: NormalizePhone(r.Phone)}
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
			row.ID, row.Name = st.ID, st.Name
			newLead[k] = true
			pending.parts = append(pending.parts, st)
			created = append(created, newRow{i: i, row: row, facts: newLeadFacts{SourceID: recs[i].SourceID, Email: r.Email,
				Name: st.Name, Phone: r.Phone, Company: r.Company, Payload: payload, Tags: r.Tags}})
			continue
		case r.OrderKey < st.OrderKey:
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeStale}
			// Older than the lead, but maybe the newest of its name part.
			if r.hasNameParts() && st.applyStaleParts(r) {
				out[i].Kind = OutcomeUpdated
			}
		case st.apply(r, payload):
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeUpdated}
		default:
			out[i] = UpsertOutcome{LeadID: st.ID, SourceID: recs[i].SourceID, SourceRef: r.SourceRef, Kind: OutcomeUnchanged}
		}
		if r.hasNameParts() && out[i].Kind != OutcomeStale {
			row.Name = st.Name // the parts' join, as apply made it
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
		row.ID = st.ID
		if newLead[k] {
			pending.later = append(pending.later, row)
			continue
		}
		upserts = append(upserts, row)
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
	if err := upsertRows(ctx, x, upserts); err != nil {
		return nil, nil, err
	}
	if err := writeSurvivors(ctx, x, tenantID, survivors); err != nil {
		return nil, nil, err
	}
	var known []*senderState
	for k, st := range state {
		if !newLead[k] {
			known = append(known, st)
		}
	}
	if err := writeNameParts(ctx, x, tenantID, known); err != nil {
		return nil, nil, err
	}
	pending.out = out
	return out, pending, nil
}

// Reserve starts taking the pending leads' round-robin positions apart
// on reserve (a pool from db.OpenOneTrip) while the caller's transaction
// goes on; Insert with the same reserve uses them. Nil, nothing pending
// or a nil reserve: nothing.
func (p *PendingLeads) Reserve(ctx context.Context, reserve *sqlx.DB) {
	if p == nil || len(p.rows) == 0 {
		return
	}
	p.plan.prefetch(ctx, reserve)
}

// Insert assigns the pending new leads (the round-robin positions are
// taken here: see assignPlan.take; reserve, when set, is the database
// whose short transactions reserve them apart from x's) and inserts them
// in one statement, each with its assignment (its timeline entry is read
// from those columns: assignmentEntries); it fills in the outcomes'
// OwnerID and Rule. A lead another transaction created
// meanwhile fails it with ErrConcurrentCreate. Nil or empty: nothing.
func (p *PendingLeads) Insert(ctx context.Context, x db.Ext, reserve *sqlx.DB) error {
	if p == nil || len(p.rows) == 0 {
		return nil
	}
	as, err := p.plan.take(ctx, x, reserve)
	if err != nil {
		return err
	}
	rows := make([]leadRow, len(p.rows))
	for j, c := range p.rows {
		var a *assigned
		if j < len(as) {
			a = as[j]
		}
		if a != nil {
			p.out[c.i].OwnerID, p.out[c.i].Rule = a.OwnerID, a.RuleName
		}
		rows[j] = c.row.withRule(a)
	}
	if err := insertLeads(ctx, x, rows, ""); err != nil {
		if db.IsDuplicate(err) {
			return ErrConcurrentCreate
		}
		return err
	}
	if err := upsertRows(ctx, x, p.later); err != nil {
		return err
	}
	return writeNameParts(ctx, x, p.tenantID, p.parts)
}

// upsertRows applies sender records to existing leads in one statement.
// The guard: a record older than the lead's order key writes no sender
// field. order_key is assigned last (MySQL and MariaDB evaluate the
// assignments in order, later ones see earlier ones).
func upsertRows(ctx context.Context, x db.Ext, rows []leadRow) error {
	const newer = `VALUES(order_key) >= order_key`
	return insertLeads(ctx, x, rows, `
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
		order_key = GREATEST(order_key, VALUES(order_key))`)
}

// ErrConcurrentCreate means another transaction created one of the batch's
// new leads first; re-running the transaction finds it.
var ErrConcurrentCreate = fmt.Errorf("leads: a lead of the batch was created concurrently: %w", db.ErrRetryTx)

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
	var rows []SenderFields
	if err := db.SelectIn(ctx, x, &rows, `SELECT source_ref, email, name, phone, company FROM leads
		WHERE tenant_id = ? AND source_id = ? AND source_ref IN (?)`, tenantID, sourceID, refs); err != nil {
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
	var ptrs []struct {
		ID         string `db:"id"`
		MergedInto string `db:"merged_into"`
	}
	if err := db.SelectIn(ctx, x, &ptrs, `SELECT id, merged_into FROM leads WHERE tenant_id = ? AND id IN (?) AND merged_into IS NOT NULL`, tenantID, ids); err != nil {
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
