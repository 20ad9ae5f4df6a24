package leads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
)

// Timeline event kinds written by people (the ingest and reconcile paths
// add their own).
const (
	EventCreated       = "created"
	EventStatusChanged = "status_changed"
	EventOwnerChanged  = "owner_changed"
	EventTagsChanged   = "tags_changed"
	EventNoteAdded     = "note_added"
	// EventNextStepChanged records a new next step or due date.
	EventNextStepChanged = "next_step_changed"
)

// AnyVersion as Patch's ifMatch stands for `If-Match: *`.
const AnyVersion = 0

// Service holds the rules for people working leads: manual leads, edits
// under optimistic concurrency, notes, listing, search and the timeline.
type Service struct {
	DB  *sqlx.DB
	Now func() time.Time
	// Deliveries tells the timeline which deliveries reached a lead (the
	// webhooks area owns those tables).
	Deliveries DeliveryLog
	// Search tuning (see store_lists.go): how many index entries count as "few
	// candidates", and how many rows a search of a common q reads in list
	// order before it turns to the indexes.
	IndexBudget int
	ScanBudget  int

	// replica serves the reads that tolerate a replica's lag (List,
	// Export); nil: DB. A lead read after its own write (Get after a
	// PATCH or a merge) always uses DB.
	replica *db.Reads

	// Events receives outbound events (lead.created, lead.updated,
	// lead.status_changed) in the transaction of the change (the events
	// area's outbox); nil: none.
	Events Emitter

	// notify hears of assignments in their transaction (notify.go); nil:
	// nobody is told (WithNotifier).
	notify Notifier

	// changed is told, after the commit, of a lead a person (by: their
	// user id, "" for a token) created or gave a new owner (ChangeCreated,
	// ChangeReassigned; the live inbox publishes them). It must not block.
	// nil: nobody (WithChanged).
	changed func(tenantID, change string, l Lead, by string)
}

// Changes Service.Changed is told of.
const (
	ChangeCreated    = "created"
	ChangeReassigned = "reassigned"
)

func (s *Service) announce(tenantID, change string, l Lead, by tenants.Principal) {
	if s.changed != nil {
		s.changed(tenantID, change, l, by.UserID)
	}
}

// Emitter writes a lead's outbound events in the transaction of the change.
type Emitter interface {
	Emit(ctx context.Context, tx db.Ext, tenantID, eventType string, l Lead) error
	// Wants tells, in the transaction of a change, which event types some
	// endpoint of the tenant subscribes to (enabled or not: a disabled one
	// can recover what it missed); an event nobody subscribes to is not
	// written.
	Wants(ctx context.Context, x db.Ext, tenantID string) (func(eventType string) bool, error)
}

// Outbound event types this service emits.
const (
	OutboundCreated       = "lead.created"
	OutboundUpdated       = "lead.updated"
	OutboundStatusChanged = "lead.status_changed"
)

// emitter writes one transaction's outbound events. It reads the
// tenant's subscriptions once, at the first event (a bulk edit emits many;
// a patch of tags alone, none).
type emitter struct {
	s        *Service
	x        db.Ext
	tenantID string
	wants    func(eventType string) bool
}

func (s *Service) emitter(x db.Ext, tenantID string) *emitter {
	return &emitter{s: s, x: x, tenantID: tenantID}
}

// wanted reports whether an event of type typ is written at all.
func (e *emitter) wanted(ctx context.Context, typ string) (bool, error) {
	switch {
	case e.s.Events == nil:
		return false, nil
	case e.wants == nil:
		w, err := e.s.Events.Wants(ctx, e.x, e.tenantID)
		if err != nil {
			return false, err
		}
		e.wants = w
	}
	return e.wants(typ), nil
}

func (e *emitter) emit(ctx context.Context, typ string, l Lead) error {
	if ok, err := e.wanted(ctx, typ); !ok {
		return err
	}
	return e.s.Events.Emit(ctx, e.x, e.tenantID, typ, l)
}

// SenderChanged writes, in the transaction of a sender upsert (a webhook
// batch, a reconcile page, an enrichment), lead.created for each lead the
// records created and lead.updated for each whose sender-owned fields
// they changed: one event per lead, carrying the lead as it is now.
// Unchanged and stale records emit nothing. Leads are visited in id order
// so that concurrent batches take the event sequence rows in one order.
func (s *Service) SenderChanged(ctx context.Context, x db.Ext, tenantID string, outcomes []UpsertOutcome) error {
	if err := s.notifyAssigned(ctx, x, tenantID, outcomes); err != nil {
		return err
	}
	types := map[string]string{}
	assignedLeads := map[string]bool{}
	for _, o := range outcomes {
		if o.SurvivorID != "" {
			o.LeadID = o.SurvivorID // the lead people see (pointer resolution, survivor.go)
		}
		switch {
		case o.Kind == OutcomeCreated:
			types[o.LeadID] = OutboundCreated
			if o.OwnerID != "" {
				assignedLeads[o.LeadID] = true
			}
		case o.Kind == OutcomeUpdated && types[o.LeadID] == "":
			types[o.LeadID] = OutboundUpdated
		}
	}
	em := s.emitter(x, tenantID)
	for id, typ := range types {
		ok, err := em.wanted(ctx, typ)
		if err != nil {
			return err
		}
		if !ok {
			delete(types, id)
		}
	}
	// The assignment of a created lead: lead.created carries the owner
	// already; lead.updated says it changed hands (docs/ARCHITECTURE.md, "Assignment and first response").
	if len(assignedLeads) > 0 {
		ok, err := em.wanted(ctx, OutboundUpdated)
		if err != nil {
			return err
		}
		if !ok {
			clear(assignedLeads)
		}
	}
	if len(types) == 0 && len(assignedLeads) == 0 {
		return nil
	}
	leadIDs := slices.Collect(maps.Keys(types))
	for id := range assignedLeads {
		if _, ok := types[id]; !ok {
			leadIDs = append(leadIDs, id)
		}
	}
	slices.Sort(leadIDs)
	ls, err := byIDs(ctx, x, tenantID, leadIDs)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if typ := types[l.ID]; typ != "" {
			if err := em.emit(ctx, typ, l); err != nil {
				return err
			}
		}
		if assignedLeads[l.ID] {
			if err := em.emit(ctx, OutboundUpdated, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// NewService returns a service with production settings.
func NewService(d *sqlx.DB, dl DeliveryLog, ev Emitter, opts ...Option) *Service {
	s := &Service{DB: d, Now: time.Now, Deliveries: dl, Events: ev, IndexBudget: defaultIndexBudget, ScanBudget: defaultScanBudget}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Option tunes a Service at construction.
type Option func(*Service)

// WithClock makes the service read the time from now instead of time.Now.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.Now = now } }

// WithReads serves List and Export from a replica when it is fresh enough
// (docs/SCALING.md, Database).
func WithReads(r *db.Reads) Option { return func(s *Service) { s.replica = r } }

// WithNotifier writes notifications of assignments in their transaction.
func WithNotifier(n Notifier) Option { return func(s *Service) { s.notify = n } }

// WithChanged tells f, after each commit, of the leads people create or
// reassign (Service.announce); f must not block.
func WithChanged(f func(tenantID, change string, l Lead, by string)) Option {
	return func(s *Service) { s.changed = f }
}

func (s *Service) now() time.Time { return clock.Read(s.Now) }

// lagged runs a read that tolerates lag on the replica when usable.
func (s *Service) lagged(ctx context.Context, fn func(x *sqlx.DB) error) error {
	if s.replica == nil {
		return fn(s.DB)
	}
	return s.replica.Run(ctx, fn)
}

// Note is one note on a lead.
type Note struct {
	ID         string    `db:"id" json:"id"`
	LeadID     string    `db:"lead_id" json:"lead_id"`
	AuthorID   *string   `db:"author_id" json:"author_id"`
	AuthorName string    `db:"author_name" json:"author_name"`
	Body       string    `db:"body" json:"body"`
	CreatedAt  time.Time `db:"created_at" json:"created_at"`
}

// Get returns one lead of the tenant (404 for an unknown id or another
// tenant's lead).
func (s *Service) Get(ctx context.Context, tenantID, id string) (Lead, error) {
	if !ids.Valid(id) {
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	}
	return Get(ctx, s.DB, tenantID, id)
}

// Create stores a manual lead; once's Idempotency-Key (if any) completes
// in the same transaction. A manual lead has no source: source_id is empty
// and source_ref is its own id, which keeps the natural key unique.
func (s *Service) Create(ctx context.Context, tenantID string, actor tenants.Principal, in CreateInput, once idempotency.Once[Lead]) (Lead, error) {
	l, err := idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Lead, error) {
		return s.create(ctx, tx, tenantID, actor, in)
	})
	if err == nil && l.ID != "" {
		s.announce(tenantID, ChangeCreated, l, actor)
	}
	return l, err
}

func (s *Service) create(ctx context.Context, tx *sqlx.Tx, tenantID string, actor tenants.Principal, in CreateInput) (Lead, error) {
	now := s.now()
	tags, msg := NormalizeTags(in.Tags)
	if msg != "" {
		return Lead{}, apperr.InvalidFields(map[string]string{"tags": msg})
	}
	payload, err := json.Marshal(map[string]string{"name": in.Name, "email": in.Email, "phone": in.Phone, "company": in.Company})
	if err != nil {
		return Lead{}, err
	}
	l := Lead{TenantID: tenantID, ID: ids.New(), Payload: payload, Email: in.Email, Name: in.Name, Phone: in.Phone,
		Company: in.Company, LastSeenAt: now, TimesSeen: 1, Status: "new", Tags: tags, Version: 1, CreatedAt: now, UpdatedAt: now}
	l.SourceRef = l.ID
	as, err := assignNew(ctx, tx, tenantID, []newLeadFacts{{Email: l.Email, Name: l.Name, Phone: l.Phone, Company: l.Company,
		Payload: l.Payload, Tags: l.Tags}}, now)
	if err != nil {
		return Lead{}, err
	}
	var a *assigned
	if len(as) > 0 && as[0] != nil {
		a = as[0]
		owner, at, due := a.OwnerID, a.At, a.Due
		l.OwnerID, l.AssignedAt, l.FirstResponseDueAt = &owner, &at, &due
	}
	if err := insertManual(ctx, tx, l, a); err != nil {
		return Lead{}, err
	}
	if a != nil && s.notify != nil {
		if err := s.notify.Assigned(ctx, tx, tenantID, []Handover{{LeadID: l.ID, OwnerID: a.OwnerID, Rule: a.RuleName, Cause: CauseNew}}); err != nil {
			return Lead{}, err
		}
	}
	if err := AddEvent(ctx, tx, tenantID, l.ID, EventCreated, actor.UserID, actor.Name, map[string]any{"manual": true}, now); err != nil {
		return Lead{}, err
	}
	em := s.emitter(tx, tenantID)
	if err := em.emit(ctx, OutboundCreated, l); err != nil {
		return Lead{}, err
	}
	if l.AssignedAt != nil {
		if err := em.emit(ctx, OutboundUpdated, l); err != nil {
			return Lead{}, err
		}
	}
	return l, nil
}

// errRaced re-runs a patch whose unconditional (If-Match: *) update lost a
// race with another edit.
var errRaced = errors.New("leads: raced")

// Patch changes human-owned fields if the lead's version is still ifMatch
// (AnyVersion: whatever it is). The UPDATE is conditional on the version,
// so of two edits made from the same read exactly one wins and the other
// gets 412. Sender refreshes never change version, so they never cause a
// 412. An owner must be an active user of the tenant.
func (s *Service) Patch(ctx context.Context, tenantID, id string, actor tenants.Principal, ifMatch int, in PatchInput) (Lead, error) {
	if !ids.Valid(id) {
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	}
	var out Lead
	var prevOwner *string
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			var e error
			out, prevOwner, e = s.patchTx(ctx, tx, tenantID, id, actor, ifMatch, in)
			return e
		})
		if !errors.Is(err, errRaced) {
			break
		}
	}
	if errors.Is(err, errRaced) {
		return Lead{}, apperr.New(apperr.Conflict, "the lead is being edited by others right now, retry")
	}
	if err == nil && out.OwnerID != nil && !sameOwner(out.OwnerID, prevOwner) {
		s.announce(tenantID, ChangeReassigned, out, actor)
	}
	return out, err
}

// patchTx also returns the owner the lead had before.
func (s *Service) patchTx(ctx context.Context, tx *sqlx.Tx, tenantID, id string, actor tenants.Principal, ifMatch int, in PatchInput) (Lead, *string, error) {
	cur, err := Get(ctx, tx, tenantID, id)
	if err != nil {
		return Lead{}, nil, err
	}
	if ifMatch != AnyVersion && cur.Version != ifMatch {
		return Lead{}, nil, stale(cur.Version)
	}
	out, _, err := s.applyPatch(ctx, tx, tenantID, cur, actor, ifMatch == AnyVersion, in, s.emitter(tx, tenantID))
	return out, cur.OwnerID, err
}

// applyPatch changes cur's human-owned fields as in says, under cur's
// version, with a timeline entry per changed field. It reports whether
// anything changed (no change: no new version, no entry). A status change
// emits lead.status_changed through em.
func (s *Service) applyPatch(ctx context.Context, tx *sqlx.Tx, tenantID string, cur Lead, actor tenants.Principal, anyVersion bool, in PatchInput, em *emitter) (Lead, bool, error) {
	id := cur.ID
	if cur.MergedInto != nil {
		return Lead{}, false, apperr.New(apperr.Conflict, "this lead is merged into %s: edit that lead, or unmerge this one first", *cur.MergedInto)
	}
	next := cur
	var ownerName string
	var err error
	if in.Status != nil {
		next.Status = *in.Status
	}
	if in.OwnerSet {
		next.OwnerID = in.OwnerID
		if in.OwnerID != nil && !sameOwner(in.OwnerID, cur.OwnerID) {
			ownerName, err = s.activeUserName(ctx, tx, tenantID, *in.OwnerID)
			if err != nil {
				return Lead{}, false, err
			}
		}
	}
	if in.Tags != nil {
		next.Tags = Tags(*in.Tags)
	}
	if in.NextStep != nil {
		next.NextStep = *in.NextStep
	}
	if in.DueSet {
		next.DueAt = in.DueAt
	}
	statusChanged := next.Status != cur.Status
	ownerChanged := !sameOwner(next.OwnerID, cur.OwnerID)
	tagsChanged := !slices.Equal([]string(next.Tags), []string(cur.Tags))
	followChanged := next.NextStep != cur.NextStep || !sameTime(next.DueAt, cur.DueAt)
	if !statusChanged && !ownerChanged && !tagsChanged && !followChanged {
		return cur, false, nil // nothing to do: no new version
	}
	now := s.now()
	// A person's status change or next step is a response (an owner or
	// tags change is not: the assignment itself must not stop the clock).
	updated, err := updateHumanFields(ctx, tx, tenantID, id, next, cur.Version, now, statusChanged || followChanged)
	if err != nil {
		return Lead{}, false, err
	}
	if !updated {
		// Someone else's edit committed between our read and the update.
		if anyVersion {
			return Lead{}, false, errRaced
		}
		return Lead{}, false, stale(0)
	}
	if statusChanged {
		if err := AddEvent(ctx, tx, tenantID, id, EventStatusChanged, actor.UserID, actor.Name,
			map[string]any{"from": cur.Status, "to": next.Status}, now); err != nil {
			return Lead{}, false, err
		}
	}
	if ownerChanged {
		if err := AddEvent(ctx, tx, tenantID, id, EventOwnerChanged, actor.UserID, actor.Name,
			map[string]any{"from": cur.OwnerID, "to": next.OwnerID, "to_name": ownerName}, now); err != nil {
			return Lead{}, false, err
		}
		// The new owner hears of it, unless they gave it to themselves;
		// the lead's new version names the change.
		if s.notify != nil && next.OwnerID != nil && *next.OwnerID != actor.UserID {
			if err := s.notify.Assigned(ctx, tx, tenantID, []Handover{{LeadID: id, OwnerID: *next.OwnerID,
				Cause: fmt.Sprintf("v%d", cur.Version+1)}}); err != nil {
				return Lead{}, false, err
			}
		}
	}
	if tagsChanged {
		added, removed := diffTags(cur.Tags, next.Tags)
		if err := AddEvent(ctx, tx, tenantID, id, EventTagsChanged, actor.UserID, actor.Name,
			map[string]any{"added": added, "removed": removed, "tags": next.Tags}, now); err != nil {
			return Lead{}, false, err
		}
	}
	if followChanged {
		if err := AddEvent(ctx, tx, tenantID, id, EventNextStepChanged, actor.UserID, actor.Name,
			map[string]any{"next_step": next.NextStep, "due_at": next.DueAt, "from_next_step": cur.NextStep, "from_due_at": cur.DueAt}, now); err != nil {
			return Lead{}, false, err
		}
	}
	out, err := Get(ctx, tx, tenantID, id)
	if err != nil {
		return Lead{}, false, err
	}
	if statusChanged {
		if err := em.emit(ctx, OutboundStatusChanged, out); err != nil {
			return Lead{}, false, err
		}
	}
	return out, true, nil
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func stale(current int) error {
	if current > 0 {
		return apperr.New(apperr.PreconditionFailed,
			"the lead was changed by someone else (it is now version %d): GET it again and reapply your change", current)
	}
	return apperr.New(apperr.PreconditionFailed, "the lead was changed by someone else: GET it again and reapply your change")
}

func sameOwner(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func diffTags(old, cur Tags) (added, removed []string) {
	added, removed = []string{}, []string{}
	for _, t := range cur {
		if !slices.Contains(old, t) {
			added = append(added, t)
		}
	}
	for _, t := range old {
		if !slices.Contains(cur, t) {
			removed = append(removed, t)
		}
	}
	return added, removed
}

func (s *Service) activeUserName(ctx context.Context, x db.Ext, tenantID, userID string) (string, error) {
	bad := apperr.InvalidFields(map[string]string{"owner_id": "is not an active user of this tenant"})
	if !ids.Valid(userID) {
		return "", bad
	}
	us, err := activeUsers(ctx, x, tenantID, []string{userID})
	if err != nil {
		return "", err
	}
	u, ok := us[userID]
	if !ok || u.disabled {
		return "", bad
	}
	return u.name, nil
}

// AddNote appends a note; once's Idempotency-Key (if any) completes in the
// same transaction. Notes are append-only, so they cannot overwrite
// anyone's work and do not bump version: a colleague's note never turns
// your status change into a 412.
func (s *Service) AddNote(ctx context.Context, tenantID, leadID string, actor tenants.Principal, body string, once idempotency.Once[Note]) (Note, error) {
	if !ids.Valid(leadID) {
		return Note{}, apperr.New(apperr.NotFound, "lead not found")
	}
	return idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Note, error) {
		return s.addNote(ctx, tx, tenantID, leadID, actor, body)
	})
}

func (s *Service) addNote(ctx context.Context, tx *sqlx.Tx, tenantID, leadID string, actor tenants.Principal, body string) (Note, error) {
	if err := leadExists(ctx, tx, tenantID, leadID); err != nil {
		return Note{}, err
	}
	now := s.now()
	n := Note{ID: ids.New(), LeadID: leadID, AuthorName: Clip(actor.Name, 255), Body: body, CreatedAt: now}
	if actor.UserID != "" {
		uid := actor.UserID
		n.AuthorID = &uid
	}
	if err := insertNote(ctx, tx, tenantID, n); err != nil {
		return Note{}, err
	}
	if err := markResponded(ctx, tx, tenantID, leadID, now); err != nil {
		return Note{}, err
	}
	if err := AddEvent(ctx, tx, tenantID, leadID, EventNoteAdded, actor.UserID, actor.Name,
		map[string]any{"note_id": n.ID, "body": n.Body}, now); err != nil {
		return Note{}, err
	}
	return n, nil
}

// Notes lists a lead's notes, newest first (404 for an unknown lead).
func (s *Service) Notes(ctx context.Context, tenantID, leadID string) ([]Note, error) {
	// A survivor's notes include those of the leads merged into it
	// (merge.go); each note keeps its own lead_id.
	group, err := s.existingGroup(ctx, tenantID, leadID)
	if err != nil {
		return nil, err
	}
	return notesOf(ctx, s.DB, tenantID, group, 1000)
}

// Counts returns the number of leads per status (every status present,
// zeros included). It reads one status-index entry per lead (about 0.2 s
// at 1M leads), so pages that show counts on every view should cap them.
func (s *Service) Counts(ctx context.Context, tenantID string) (map[string]int, error) {
	n, err := countByStatus(ctx, s.DB, tenantID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(Statuses))
	for _, st := range Statuses {
		out[st] = n[st]
	}
	return out, nil
}

// ListBoard returns the newest perStatus leads of every status (the
// pipeline board), one indexed range per status.
func (s *Service) ListBoard(ctx context.Context, tenantID string, perStatus int) (map[string][]Lead, error) {
	if perStatus <= 0 || perStatus > maxLimit {
		perStatus = defaultLimit
	}
	out := make(map[string][]Lead, len(Statuses))
	for _, st := range Statuses {
		ls, err := newestWithStatus(ctx, s.DB, tenantID, st, perStatus)
		if err != nil {
			return nil, err
		}
		if ls == nil {
			ls = []Lead{}
		}
		out[st] = ls
	}
	return out, nil
}

// StatusCount is the number of a tenant's leads in one status, counted up
// to a cap: past it a page says "1,000+".
type StatusCount struct {
	Status string
	N      int
	Capped bool
}

// CappedCounts counts leads per status for the given statuses, in order,
// each up to limit. Each count reads at most limit+1 entries of
// ix_leads_status, so the inbox costs the same with 1M leads as with 10k;
// an exact COUNT(*) reads the whole index (about 1 µs an entry on the
// 2-core development machine: 0.3 s and more per million).
func (s *Service) CappedCounts(ctx context.Context, tenantID string, statuses []string, limit int) ([]StatusCount, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	byStatus, err := countByStatusUpTo(ctx, s.DB, tenantID, statuses, limit)
	if err != nil {
		return nil, err
	}
	return cappedCounts(statuses, byStatus, limit), nil
}

// cappedCounts are the counts of statuses, each up to limit.
func cappedCounts(statuses []string, byStatus map[string]int, limit int) []StatusCount {
	out := make([]StatusCount, len(statuses))
	for i, st := range statuses {
		n := byStatus[st]
		out[i] = StatusCount{Status: st, N: min(n, limit), Capped: n > limit}
	}
	return out
}

// CappedCountsFor is CappedCounts of the leads matching f (a view, a
// search): each status of Statuses, or of f.AnyStatus when set, each up
// to limit.
func (s *Service) CappedCountsFor(ctx context.Context, tenantID string, f Filter, limit int) ([]StatusCount, error) {
	f.Status, f.Cursor, f.slaNow = "", "", s.now()
	if _, err := f.normalize(); err != nil {
		return nil, err
	}
	statuses := f.statuses()
	if f.SourceID == "" && f.OwnerID == "" && f.Q == "" && f.DueBefore == nil && !f.ByDue && f.SLA == "" && !f.Duplicates {
		return s.CappedCounts(ctx, tenantID, statuses, limit)
	}
	byStatus, err := countMatchingUpTo(ctx, s.DB, tenantID, f, statuses, limit)
	if err != nil {
		return nil, err
	}
	return cappedCounts(statuses, byStatus, limit), nil
}
