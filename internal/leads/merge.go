package leads

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
)

// One person across sources (docs/ARCHITECTURE.md, "Merged leads"): possible duplicates, merge
// and unmerge.
//
// A merge never moves rows. The merged leads keep their own row (with
// merged_into set and status StatusMerged, which takes them out of every
// list), their notes, timeline entries and deliveries; the survivor's page,
// notes and timeline read the whole group (the survivor and every lead
// merged into it). A later record of a merged lead's natural key updates
// both its own row and the survivor (survivor.go). So an unmerge only has to
// undo what the merge overwrote, kept in lead_merges: the merged lead's
// status and the survivor's picked fields and tags. The merged lead then has
// its own fields, deliveries and notes as they were, plus what arrived for
// it since.

// Timeline entry kinds of merges.
const (
	EventMerged       = "merged"        // on the survivor: which leads, which fields from where
	EventMergedInto   = "merged_into"   // on a merged lead
	EventUnmerged     = "unmerged"      // on the survivor: which lead left
	EventUnmergedFrom = "unmerged_from" // on the restored lead
)

// MaxMergeOthers is how many leads one merge folds into a survivor.
const MaxMergeOthers = 20

// MergeFields are the fields a merge can take from any of the leads (the
// survivor's by default).
var MergeFields = []string{"email", "name", "phone", "company", "status", "owner_id", "next_step", "due_at"}

// Duplicate is one possible duplicate of a lead and why.
type Duplicate struct {
	Lead    Lead     `json:"lead"`
	Reasons []string `json:"reasons"` // "email", "phone"
}

// maxDuplicates bounds the suggestions per reason.
const maxDuplicates = 50

// Duplicates lists the other visible leads of the tenant with the same
// normalized email or phone as the lead, newest first (docs/ARCHITECTURE.md, "Merged leads").
func (s *Service) Duplicates(ctx context.Context, tenantID, id string) ([]Duplicate, error) {
	l, err := s.Get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	byEmail, byPhone, err := sameContact(ctx, s.DB, tenantID, l.ID, NormalizeEmail(l.Email), NormalizePhone(l.Phone), maxDuplicates)
	if err != nil {
		return nil, err
	}
	out := []Duplicate{}
	at := map[string]int{}
	for _, d := range byEmail {
		at[d.ID] = len(out)
		out = append(out, Duplicate{Lead: d, Reasons: []string{"email"}})
	}
	for _, d := range byPhone {
		if i, ok := at[d.ID]; ok {
			out[i].Reasons = append(out[i].Reasons, "phone")
			continue
		}
		out = append(out, Duplicate{Lead: d, Reasons: []string{"phone"}})
	}
	slices.SortStableFunc(out, func(a, b Duplicate) int { return strings.Compare(b.Lead.ID, a.Lead.ID) })
	return out, nil
}

// mayMerge says whether a person may merge (or unmerge) these leads: an
// admin any, a staff user only leads they own (docs/ARCHITECTURE.md,
// "Staff pages"). An API token's scope decided at its route.
func mayMerge(actor tenants.Principal, ls []Lead) error {
	if actor.UserID == "" || actor.Role == tenants.RoleAdmin || actor.Has(tenants.ScopeAdmin) {
		return nil
	}
	for _, l := range ls {
		if l.OwnerID == nil || *l.OwnerID != actor.UserID {
			return apperr.New(apperr.Forbidden, "you can merge only leads you own: ask an admin, or the owner, to merge these")
		}
	}
	return nil
}

// MayMerge reports whether the person may merge these leads (the pages
// offer Merge only then; Merge checks again under its locks).
func MayMerge(actor tenants.Principal, ls ...Lead) bool { return mayMerge(actor, ls) == nil }

// MergeInput is POST /api/v1/leads/{id}/merge: the leads folded into the
// survivor and, per field, which lead's value the survivor keeps.
type MergeInput struct {
	Others []string          `json:"others"`
	Fields map[string]string `json:"fields"`
}

// ParseMerge reads and validates a merge body (422 naming the bad fields).
func ParseMerge(body []byte) (MergeInput, error) {
	m, err := decodeObject(body)
	if err != nil {
		return MergeInput{}, err
	}
	bad := unknownFields(m, "others", "fields")
	var in MergeInput
	if v, ok := m["others"]; !ok || isNull(v) {
		bad["others"] = "is required: 1 to 20 lead ids merged into this one"
	} else if json.Unmarshal(v, &in.Others) != nil {
		bad["others"] = "must be an array of lead ids"
	} else if len(in.Others) == 0 || len(in.Others) > MaxMergeOthers {
		bad["others"] = "must hold 1 to 20 lead ids"
	} else {
		seen := map[string]bool{}
		for _, id := range in.Others {
			if strings.TrimSpace(id) == "" || len(id) > 64 {
				bad["others"] = "must hold lead ids (non-empty strings)"
			} else if seen[id] {
				bad["others"] = "names a lead twice"
			}
			seen[id] = true
		}
	}
	if v, ok := m["fields"]; ok && !isNull(v) {
		if json.Unmarshal(v, &in.Fields) != nil {
			bad["fields"] = `must be an object of field → lead id, e.g. {"email":"<lead id>"}`
		}
	}
	for f := range in.Fields {
		if !slices.Contains(MergeFields, f) {
			bad["fields."+f] = "is not a field a merge picks (" + strings.Join(MergeFields, ", ") + ")"
		}
	}
	if len(bad) > 0 {
		return MergeInput{}, apperr.InvalidFields(bad)
	}
	return in, nil
}

// mergeState is what a merge record keeps for an unmerge of one merged
// lead (lead_merges.state).
type mergeState struct {
	// Status is the merged lead's own status before the merge.
	Status string `json:"status"`
	// Picks says which lead each field of the survivor came from.
	Picks map[string]string `json:"picks"`
	// Before and After are the survivor's fields before and right after
	// the merge: an unmerge puts back a field taken from this lead only if
	// nobody changed it since.
	Before map[string]json.RawMessage `json:"before"`
	After  map[string]json.RawMessage `json:"after"`
	// TagsBefore are the survivor's tags before the merge; the lead's tags
	// the survivor did not have then leave with it.
	TagsBefore []string `json:"tags_before"`
}

// mergeFieldsOf reads the fields a merge picks, as JSON values.
func mergeFieldsOf(l Lead) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(MergeFields))
	for _, f := range MergeFields {
		b, _ := json.Marshal(l.mergeField(f))
		out[f] = b
	}
	return out
}

// setMergeField sets one picked field of l from another lead's value.
func setMergeField(l *Lead, f string, raw json.RawMessage) error {
	p := l.mergeField(f)
	if p == nil {
		return nil
	}
	// A pointer field gets a new value, never written through the old
	// pointer (another lead may share it).
	switch f {
	case "owner_id":
		l.OwnerID = nil
	case "due_at":
		l.DueAt = nil
	}
	return json.Unmarshal(raw, p)
}

// mergeField points at the field of l a merge picks by name (MergeFields);
// nil for another name.
func (l *Lead) mergeField(f string) any {
	switch f {
	case "email":
		return &l.Email
	case "name":
		return &l.Name
	case "phone":
		return &l.Phone
	case "company":
		return &l.Company
	case "status":
		return &l.Status
	case "owner_id":
		return &l.OwnerID
	case "next_step":
		return &l.NextStep
	case "due_at":
		return &l.DueAt
	}
	return nil
}

// Merge folds the others into the survivor id, under the survivor's
// version ifMatch (AnyVersion: whatever it is), and returns the survivor.
// once's Idempotency-Key completes in the same transaction: the same
// request again returns the first answer and merges nothing twice.
func (s *Service) Merge(ctx context.Context, tenantID, id string, actor tenants.Principal, ifMatch int, in MergeInput, once idempotency.Once[Lead]) (Lead, error) {
	if !ids.Valid(id) {
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	}
	for _, o := range in.Others {
		if !ids.Valid(o) {
			return Lead{}, apperr.New(apperr.NotFound, "lead %s not found", o)
		}
		if o == id {
			return Lead{}, apperr.InvalidFields(map[string]string{"others": "must not name the surviving lead itself"})
		}
	}
	for f, from := range in.Fields {
		if from != id && !slices.Contains(in.Others, from) {
			return Lead{}, apperr.InvalidFields(map[string]string{"fields." + f: "must name the surviving lead or one of others"})
		}
	}
	return idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Lead, error) {
		return s.merge(ctx, tx, tenantID, id, actor, ifMatch, in)
	})
}

func (s *Service) merge(ctx context.Context, tx *sqlx.Tx, tenantID, id string, actor tenants.Principal, ifMatch int, in MergeInput) (Lead, error) {
	now := s.now()
	// Every lead of the merge, locked in id order in one statement (the lock
	// order against concurrent deliveries: survivor.go, docs/ARCHITECTURE.md "Merged leads").
	all := append([]string{id}, in.Others...)
	slices.Sort(all)
	ls, err := lockLeads(ctx, tx, tenantID, all)
	if err != nil {
		return Lead{}, err
	}
	byID := make(map[string]Lead, len(ls))
	for _, l := range ls {
		byID[l.ID] = l
	}
	for _, lid := range all {
		if _, ok := byID[lid]; !ok {
			return Lead{}, apperr.New(apperr.NotFound, "lead %s not found", lid)
		}
	}
	if err := mayMerge(actor, ls); err != nil {
		return Lead{}, err
	}
	cur := byID[id]
	if ifMatch != AnyVersion && cur.Version != ifMatch {
		return Lead{}, stale(cur.Version)
	}
	for _, l := range ls {
		if l.MergedInto != nil {
			return Lead{}, apperr.New(apperr.Conflict, "lead %s is merged into %s: merge into that lead instead", l.ID, *l.MergedInto)
		}
	}
	if parent, err := anyMergedInto(ctx, tx, tenantID, in.Others); err != nil {
		return Lead{}, err
	} else if parent != "" {
		return Lead{}, apperr.New(apperr.Conflict, "lead %s has leads merged into it: merge the others into it, or unmerge them first", parent)
	}

	before := mergeFieldsOf(cur)
	next := cur
	picks := map[string]string{}
	for _, f := range MergeFields {
		from := in.Fields[f]
		if from == "" {
			from = id
		}
		picks[f] = from
		if from != id {
			if err := setMergeField(&next, f, mergeFieldsOf(byID[from])[f]); err != nil {
				return Lead{}, err
			}
		}
	}
	if next.OwnerID != nil && !sameOwner(next.OwnerID, cur.OwnerID) {
		if _, err := s.activeUserName(ctx, tx, tenantID, *next.OwnerID); err != nil {
			return Lead{}, apperr.InvalidFields(map[string]string{"fields.owner_id": "names a lead whose owner is no longer an active user"})
		}
	}
	tags := slices.Clone([]string(cur.Tags))
	for _, o := range in.Others {
		tags = append(tags, byID[o].Tags...)
		next.TimesSeen += byID[o].TimesSeen
		if byID[o].LastSeenAt.After(next.LastSeenAt) {
			next.LastSeenAt = byID[o].LastSeenAt
		}
	}
	if t, msg := NormalizeTags(tags); msg == "" {
		next.Tags = t
	} else {
		return Lead{}, apperr.InvalidFields(map[string]string{"others": "the leads' tags together break a rule: " + msg})
	}
	next.Version, next.UpdatedAt = cur.Version+1, now
	if err := writeMergedSurvivor(ctx, tx, tenantID, next); err != nil {
		return Lead{}, err
	}
	if err := markMerged(ctx, tx, tenantID, id, in.Others, now); err != nil {
		return Lead{}, err
	}
	after := mergeFieldsOf(next)
	recs := make([]mergeRecord, 0, len(in.Others))
	evs := []eventIn{{LeadID: id, Kind: EventMerged, ActorID: actor.UserID, ActorName: actor.Name, At: now,
		Detail: map[string]any{"others": in.Others, "fields": in.Fields}}}
	for _, o := range in.Others {
		st, err := json.Marshal(mergeState{Status: byID[o].Status, Picks: picks, Before: before, After: after, TagsBefore: cur.Tags})
		if err != nil {
			return Lead{}, err
		}
		recs = append(recs, mergeRecord{ID: ids.New(), SurvivorID: id, MergedID: o, State: st, ActorName: actor.Name, MergedAt: now})
		evs = append(evs, eventIn{LeadID: o, Kind: EventMergedInto, ActorID: actor.UserID, ActorName: actor.Name, At: now,
			Detail: map[string]any{"survivor": id}})
	}
	if err := insertMergeRecords(ctx, tx, tenantID, recs); err != nil {
		return Lead{}, err
	}
	if err := addEvents(ctx, tx, tenantID, evs); err != nil {
		return Lead{}, err
	}
	out, err := Get(ctx, tx, tenantID, id)
	if err != nil {
		return Lead{}, err
	}
	// Outbound: the survivor as it is now; each merged lead, which now
	// carries merged_into, so a subscriber can fold its copy too.
	em := s.emitter(tx, tenantID)
	if err := em.emit(ctx, OutboundUpdated, out); err != nil {
		return Lead{}, err
	}
	if out.Status != cur.Status {
		if err := em.emit(ctx, OutboundStatusChanged, out); err != nil {
			return Lead{}, err
		}
	}
	merged, err := byIDs(ctx, tx, tenantID, in.Others)
	if err != nil {
		return Lead{}, err
	}
	for _, m := range merged {
		if err := em.emit(ctx, OutboundUpdated, m); err != nil {
			return Lead{}, err
		}
	}
	err = audit.Record(ctx, tx, tenantID, audit.Entry{Action: "lead.merged", TargetType: "lead", TargetID: id, At: now,
		Detail: map[string]any{"others": in.Others, "fields": in.Fields}})
	return out, err
}

// Unmerge restores the lead mergedID that was merged into the survivor id
// and returns it: its own status back, out of the survivor's group, and the
// survivor without what the lead brought (its sightings, its tags, the
// fields taken from it that nobody changed since).
func (s *Service) Unmerge(ctx context.Context, tenantID, id string, actor tenants.Principal, mergedID string) (Lead, error) {
	if !ids.Valid(id) {
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	}
	if !ids.Valid(mergedID) {
		return Lead{}, apperr.New(apperr.NotFound, "lead %s not found", mergedID)
	}
	var out Lead
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		var err error
		out, err = s.unmerge(ctx, tx, tenantID, id, actor, mergedID)
		return err
	})
	return out, err
}

func (s *Service) unmerge(ctx context.Context, tx *sqlx.Tx, tenantID, id string, actor tenants.Principal, mergedID string) (Lead, error) {
	now := s.now()
	pair := []string{id, mergedID}
	slices.Sort(pair)
	ls, err := lockLeads(ctx, tx, tenantID, pair)
	if err != nil {
		return Lead{}, err
	}
	var cur, m Lead
	for _, l := range ls {
		if l.ID == id {
			cur = l
		} else {
			m = l
		}
	}
	switch {
	case cur.ID == "":
		return Lead{}, apperr.New(apperr.NotFound, "lead not found")
	case m.ID == "":
		return Lead{}, apperr.New(apperr.NotFound, "lead %s not found", mergedID)
	case m.MergedInto == nil || *m.MergedInto != id:
		return Lead{}, apperr.New(apperr.Conflict, "lead %s is not merged into this lead", mergedID)
	}
	if err := mayMerge(actor, []Lead{cur}); err != nil {
		return Lead{}, err
	}
	rec, err := openMergeRecord(ctx, tx, tenantID, id, mergedID)
	if err != nil {
		return Lead{}, err
	}
	var st mergeState
	if err := json.Unmarshal(rec.State, &st); err != nil {
		return Lead{}, err
	}
	next := cur
	now2 := mergeFieldsOf(cur)
	var restored []string
	for f, from := range st.Picks {
		if from != mergedID || from == id {
			continue
		}
		// Put back what the survivor had, unless someone changed the field
		// since the merge (then theirs stays).
		if bytes.Equal(now2[f], st.After[f]) {
			if err := setMergeField(&next, f, st.Before[f]); err != nil {
				return Lead{}, err
			}
			restored = append(restored, f)
		}
	}
	slices.Sort(restored)
	var keep []string
	for _, t := range cur.Tags {
		if slices.Contains(m.Tags, t) && !slices.Contains(st.TagsBefore, t) {
			continue
		}
		keep = append(keep, t)
	}
	next.Tags = keep
	next.TimesSeen = max(cur.TimesSeen-m.TimesSeen, 0)
	next.Version, next.UpdatedAt = cur.Version+1, now
	if err := writeMergedSurvivor(ctx, tx, tenantID, next); err != nil {
		return Lead{}, err
	}
	if err := restoreMerged(ctx, tx, tenantID, mergedID, st.Status, now); err != nil {
		return Lead{}, err
	}
	if err := closeMergeRecord(ctx, tx, tenantID, rec.ID, now); err != nil {
		return Lead{}, err
	}
	if err := addEvents(ctx, tx, tenantID, []eventIn{
		{LeadID: id, Kind: EventUnmerged, ActorID: actor.UserID, ActorName: actor.Name, At: now,
			Detail: map[string]any{"lead_id": mergedID, "restored_fields": restored}},
		{LeadID: mergedID, Kind: EventUnmergedFrom, ActorID: actor.UserID, ActorName: actor.Name, At: now,
			Detail: map[string]any{"survivor": id}},
	}); err != nil {
		return Lead{}, err
	}
	both, err := byIDs(ctx, tx, tenantID, pair)
	if err != nil {
		return Lead{}, err
	}
	em := s.emitter(tx, tenantID)
	var out Lead
	for _, l := range both {
		if err := em.emit(ctx, OutboundUpdated, l); err != nil {
			return Lead{}, err
		}
		if l.ID == mergedID {
			out = l
		} else if l.Status != cur.Status {
			if err := em.emit(ctx, OutboundStatusChanged, l); err != nil {
				return Lead{}, err
			}
		}
	}
	err = audit.Record(ctx, tx, tenantID, audit.Entry{Action: "lead.unmerged", TargetType: "lead", TargetID: id, At: now,
		Detail: map[string]any{"lead_id": mergedID, "merge_id": rec.ID, "restored_fields": restored}})
	return out, err
}

// Group returns the ids of a lead and every lead merged into it, the lead
// first: the survivor's page, notes and timeline read them together.
func (s *Service) Group(ctx context.Context, tenantID, id string) ([]string, error) {
	return groupOf(ctx, s.DB, tenantID, id)
}

// existingGroup is Group of a lead that must be the tenant's: 404 for an
// unknown lead or another tenant's.
func (s *Service) existingGroup(ctx context.Context, tenantID, id string) ([]string, error) {
	if _, err := s.Get(ctx, tenantID, id); err != nil {
		return nil, err
	}
	return groupOf(ctx, s.DB, tenantID, id)
}

// Merged lists the leads merged into the survivor id (for its page).
func (s *Service) Merged(ctx context.Context, tenantID, id string) ([]Lead, error) {
	g, err := groupOf(ctx, s.DB, tenantID, id)
	if err != nil || len(g) < 2 {
		return nil, err
	}
	return byIDs(ctx, s.DB, tenantID, g[1:])
}
