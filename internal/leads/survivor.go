package leads

import (
	"context"
	"slices"
	"time"

	"leadpipe/internal/db"
)

// Pointer resolution (docs/ARCHITECTURE.md, "Merged leads"): a sender record whose natural key
// belongs to a merged lead updates that lead's own row, as always (so an
// unmerge gives it back with what arrived for it since), and its survivor:
// the survivor's sender-owned fields (under the survivor's own record
// order), times_seen and last_seen_at. Both happen in the upsert's
// transaction, in the single path (UpsertFromSender, webhooks.Apply for
// reconcile) and the worker's batch path alike.
//
// Lock order (docs/ARCHITECTURE.md, "Merged leads"): an
// upsert locks the natural keys' rows first and a survivor only after it
// has read the pointer under that lock; a merge (merge.go) locks the
// survivor and the merged leads by id in one statement. So a delivery that
// locked a lead before a merge of it finishes without the survivor and the
// merge then reads its committed sightings; a delivery that comes after
// the merge waits for the merge's commit, then reads the pointer and locks
// the survivor, which the merge no longer holds. Neither loses the other's
// write. The one cycle left, a batch holding both a survivor's and a lead's
// natural keys while a merge of exactly those two takes them in id order,
// ends in a deadlock that db.InTx re-runs.

// survivor is a survivor's state during one upsert and what the batch's
// redirected records add to it.
type survivor struct {
	st        *senderState
	used      bool // a record was redirected to it
	applied   bool // and changed its sender-owned fields
	sightings int
	lastSeen  time.Time
}

// take applies one redirected record to the survivor and says what it did
// (OutcomeUpdated, OutcomeUnchanged or OutcomeStale), as the natural-key
// upsert does for a lead's own records.
func (s *survivor) take(r SenderRecord, payload []byte, now time.Time) string {
	s.used = true
	s.sightings += r.Sightings
	s.lastSeen = now
	switch {
	case r.OrderKey < s.st.OrderKey:
		return OutcomeStale
	case s.st.apply(r, payload):
		s.applied = true
		return OutcomeUpdated
	}
	return OutcomeUnchanged
}

// lockSurvivors locks and reads the survivors of the merged leads among
// state (in id order). A survivor that is itself one of the batch's leads
// shares its state, so both paths see each other's records.
func lockSurvivors(ctx context.Context, x db.Ext, tenantID string, state []*senderState) (map[string]*survivor, error) {
	var want []string
	byID := map[string]*senderState{}
	for _, st := range state {
		byID[st.ID] = st
	}
	out := map[string]*survivor{}
	for _, st := range state {
		if st.MergedInto == nil {
			continue
		}
		id := *st.MergedInto
		if _, ok := out[id]; ok {
			continue
		}
		if own, ok := byID[id]; ok {
			out[id] = &survivor{st: own}
			continue
		}
		out[id] = nil
		want = append(want, id)
	}
	if len(want) == 0 {
		return out, nil
	}
	slices.Sort(want)
	var rows []senderState
	if err := db.SelectIn(ctx, x, &rows, `SELECT id, source_ref, order_key, email, name, name_part_first, name_part_last, name_part_first_key, name_part_last_key, phone, company, source_created_at,
			IFNULL(payload, '{}') AS payload, merged_into
		FROM leads WHERE tenant_id = ? AND id IN (?) ORDER BY id FOR UPDATE`, tenantID, want); err != nil {
		return nil, err
	}
	for i := range rows {
		out[rows[i].ID] = &survivor{st: &rows[i]}
	}
	for id, s := range out {
		if s == nil {
			delete(out, id) // gone (erased): the record updates its own lead only
		}
	}
	return out, nil
}

// writeSurvivors writes what redirected records did to their survivors:
// the survivor's sender-owned fields as the batch left them (the rows are
// locked, so the state is the row's), the sightings and last_seen_at.
func writeSurvivors(ctx context.Context, x db.Ext, tenantID string, survivors map[string]*survivor) error {
	ids := make([]string, 0, len(survivors))
	for id, s := range survivors {
		if s.used {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := survivors[id]
		st := s.st
		if _, err := x.ExecContext(ctx, `UPDATE leads SET payload = ?, email = ?, name = ?, name_part_first = ?, name_part_last = ?, name_part_first_key = ?, name_part_last_key = ?, phone = ?, company = ?,
				email_norm = ?, phone_norm = ?, source_created_at = ?, order_key = GREATEST(order_key, ?),
				updated_at = IF(?, ?, updated_at), times_seen = times_seen + ?, last_seen_at = GREATEST(last_seen_at, ?)
			WHERE tenant_id = ? AND id = ?`,
			string(st.Payload), st.Email, st.Name, st.NameFirst, st.NameLast, st.NameFirstKey, st.NameLastKey, st.Phone, st.Company, Clip(NormalizeEmail(st.Email), 320), NormalizePhone(st.Phone),
			st.CreatedAt, st.OrderKey, s.applied, s.lastSeen, s.sightings, s.lastSeen, tenantID, id); err != nil {
			return err
		}
	}
	return nil
}
