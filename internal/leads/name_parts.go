package leads

import (
	"context"
	"strings"

	"leadpipe/internal/db"
)

// Name parts (docs/SENDERS.md, "HubSpot"): some senders send a person's
// first and last name apart, one event each, in any order (HubSpot's
// contact.propertyChange of firstname, then of lastname). A lead keeps
// the parts it was sent (name_part_first, name_part_last) beside its name, so a
// record with one part changes that part and keeps the other: "Ada" then
// "Lovelace" is "Ada Lovelace", whichever comes first.
//
// The parts hold only while the name is their join: a record with a
// whole name (another kind's, a merge's pick) makes them unknown, and the
// next part is then set against the name as it is (splitNameFor).
//
// Each part has its own record order (name_part_first_key,
// name_part_last_key: the order key of the record that set it). The two
// parts' events may be processed in either order, by two batches at once:
// "lastname" processed first makes the lead's order key newer than
// "firstname", which is then stale for the lead's other fields but still
// the newest record of its own part, so it sets that part
// (applyStaleParts). An older record of the same part changes nothing.

// hasNameParts reports whether a record sends its name in parts.
func (r SenderRecord) hasNameParts() bool { return r.FirstName != "" || r.LastName != "" }

// joinParts is a name from its parts.
func joinParts(first, last string) string {
	return strings.TrimSpace(strings.TrimSpace(first) + " " + strings.TrimSpace(last))
}

// nameParts are the lead's parts as a record with parts sees them: the
// stored ones while the name is still their join, else the name split
// for a record that sets first and/or last.
func (st *senderState) nameParts(setFirst, setLast bool) (string, string) {
	if st.Name == joinParts(st.NameFirst, st.NameLast) {
		return st.NameFirst, st.NameLast
	}
	return splitNameFor(st.Name, setFirst, setLast)
}

// splitNameFor splits a whole name for a record that sets one part: the
// last word is the last name and the rest the first, except that a
// one-word name is the part the record does not set (a lead named
// "Lovelace" that gets the first name "Ada" is "Ada Lovelace").
func splitNameFor(name string, setFirst, setLast bool) (string, string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", ""
	}
	i := strings.LastIndexByte(name, ' ')
	if i < 0 {
		switch {
		case setFirst && !setLast:
			return "", name
		default:
			return name, ""
		}
	}
	return strings.TrimSpace(name[:i]), name[i+1:]
}

// partKeys are the order keys a record's parts are compared with: the
// parts' own while the name is their join, else the lead's (the whole
// name is newer than any part it replaced).
func (st *senderState) partKeys() (string, string) {
	if st.Name == joinParts(st.NameFirst, st.NameLast) {
		return st.NameFirstKey, st.NameLastKey
	}
	return st.OrderKey, st.OrderKey
}

// applyNameParts sets the parts a record sends that are not older than
// the part's own key, with their keys, and marks the state for
// writeNameParts when anything changed.
func (st *senderState) applyNameParts(r SenderRecord) {
	fk, lk := st.partKeys()
	setFirst := r.FirstName != "" && r.OrderKey >= fk
	setLast := r.LastName != "" && r.OrderKey >= lk
	if !setFirst && !setLast {
		return
	}
	first, last := st.nameParts(setFirst, setLast)
	if setFirst {
		first, fk = Clip(strings.TrimSpace(r.FirstName), 255), r.OrderKey
	}
	if setLast {
		last, lk = Clip(strings.TrimSpace(r.LastName), 255), r.OrderKey
	}
	if first != st.NameFirst || last != st.NameLast || fk != st.NameFirstKey || lk != st.NameLastKey {
		st.partsDirty = true
	}
	st.NameFirst, st.NameLast, st.NameFirstKey, st.NameLastKey = first, last, fk, lk
}

// applyStaleParts applies the parts of a record older than the lead
// (r.OrderKey < st.OrderKey), which changes no other field; it reports
// whether the name changed. The name is then written with the parts
// (writeNameParts): the upsert's guard keeps an older record's name out.
func (st *senderState) applyStaleParts(r SenderRecord) bool {
	st.applyNameParts(r)
	name := Clip(joinParts(st.NameFirst, st.NameLast), 255)
	if name == "" || name == st.Name {
		return false
	}
	st.Name = name
	return true
}

// writeNameParts writes the name parts, their keys and the name of the
// leads whose parts a record changed, as the batch left them (the rows are
// locked: the state is the row's), in one statement.
func writeNameParts(ctx context.Context, x db.Ext, tenantID string, sts []*senderState) error {
	cols := []string{"name_part_first", "name_part_last", "name_part_first_key", "name_part_last_key", "name"}
	cases := make([]strings.Builder, len(cols))
	args := make([][]any, len(cols))
	var ids []any
	for _, st := range sts {
		if !st.partsDirty {
			continue
		}
		st.partsDirty = false
		for c, v := range []string{st.NameFirst, st.NameLast, st.NameFirstKey, st.NameLastKey, st.Name} {
			cases[c].WriteString(` WHEN ? THEN ?`)
			args[c] = append(args[c], st.ID, v)
		}
		ids = append(ids, st.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	var q strings.Builder
	var all []any
	q.WriteString(`UPDATE leads SET `)
	for c, col := range cols {
		if c > 0 {
			q.WriteString(`, `)
		}
		q.WriteString(col + ` = CASE id` + cases[c].String() + ` ELSE ` + col + ` END`)
		all = append(all, args[c]...)
	}
	q.WriteString(` WHERE tenant_id = ? AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`)
	all = append(append(all, tenantID), ids...)
	_, err := x.ExecContext(ctx, q.String(), all...)
	return err
}
