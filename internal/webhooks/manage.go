package webhooks

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks/kinds"
)

// Admin lists, reprocesses and previews a source's deliveries: the fix and
// reprocess loop. Reprocessing goes through the same task
// and upsert as a first delivery, so running it twice changes nothing.
type Admin struct {
	DB        *sqlx.DB
	Sources   *sources.Service
	Processor *Processor
	// Claimer claims the delivery ids of a dead letter that parses after a
	// fix, exactly as the ingest path does.
	Claimer *Claimer
}

var validStates = map[string]bool{StateReceived: true, StateProcessed: true, StateFailed: true, StateDeadLetter: true}

// deliveryCursor is the opaque keyset position (received_at, id) of a page.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeCursor(c string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	at, id, ok := strings.Cut(string(b), "|")
	if !ok || !ids.Valid(id) {
		return time.Time{}, "", false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	return t, id, err == nil
}

func (a *Admin) source(ctx context.Context, tenantID, sourceID string) (sources.Source, error) {
	return a.Sources.Get(ctx, tenantID, sourceID)
}

// ListDeliveries pages a source's deliveries (or, for state dead_letter,
// its dead letters) newest first with a keyset cursor.
func (a *Admin) ListDeliveries(ctx context.Context, tenantID, sourceID, state, cursor string, limit int) (DeliveryPage, error) {
	if _, err := a.source(ctx, tenantID, sourceID); err != nil {
		return DeliveryPage{}, err
	}
	if state != "" && !validStates[state] {
		return DeliveryPage{}, apperr.InvalidFields(map[string]string{"state": "must be one of received, processed, failed, dead_letter"})
	}
	var at time.Time
	var afterID string
	if cursor != "" {
		var ok bool
		if at, afterID, ok = decodeCursor(cursor); !ok {
			return DeliveryPage{}, apperr.InvalidFields(map[string]string{"cursor": "is not a cursor this list returned"})
		}
	}
	var rows []Delivery
	var err error
	if state == StateDeadLetter {
		q := `SELECT id, '' AS delivery_id, 'dead_letter' AS state, received_at, NULL AS processed_at, 0 AS attempts, reason AS last_error,
				NULL AS lead_id, body AS payload
			FROM dead_letters WHERE tenant_id = ? AND source_id = ?`
		args := []any{tenantID, sourceID}
		if cursor != "" {
			q += ` AND (received_at < ? OR (received_at = ? AND id < ?))`
			args = append(args, at, at, afterID)
		}
		q += ` ORDER BY received_at DESC, id DESC LIMIT ?`
		err = a.DB.SelectContext(ctx, &rows, q, append(args, limit+1)...)
	} else {
		q := `SELECT ` + listCols + ` FROM deliveries WHERE tenant_id = ? AND source_id = ?`
		args := []any{tenantID, sourceID}
		if state != "" {
			q += ` AND state = ?`
			args = append(args, state)
		}
		if cursor != "" {
			q += ` AND (received_at < ? OR (received_at = ? AND id < ?))`
			args = append(args, at, at, afterID)
		}
		q += ` ORDER BY received_at DESC, id DESC LIMIT ?`
		err = a.DB.SelectContext(ctx, &rows, q, append(args, limit+1)...)
	}
	if err != nil {
		return DeliveryPage{}, err
	}
	var page DeliveryPage
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[len(rows)-1]
		c := encodeCursor(last.ReceivedAt, last.ID)
		page.NextCursor = &c
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	dups := map[string]int{}
	if state != StateDeadLetter {
		if dups, err = duplicateCounts(ctx, a.DB, tenantID, ids); err != nil {
			return DeliveryPage{}, err
		}
	}
	for _, r := range rows {
		page.Items = append(page.Items, DeliveryItem{ID: r.ID, State: r.State, ReceivedAt: r.ReceivedAt.UTC(),
			ProcessedAt: utcPtr(r.ProcessedAt), Attempts: r.Attempts, LastError: r.LastError, LeadID: r.LeadID,
			Duplicates: dups[r.ID], Raw: r.Payload, SenderID: r.DeliveryID,
			PayloadRemoved: r.State != StateDeadLetter && len(r.Payload) == 0})
	}
	return page, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// duplicateCounts reads the duplicate arrivals counted on each delivery.
func duplicateCounts(ctx context.Context, x db.Ext, tenantID string, ids []string) (map[string]int, error) {
	if len(ids) == 0 {
		return map[string]int{}, nil
	}
	return db.KeyValuesIn[int](ctx, x, `SELECT id AS k, dup_count AS v FROM deliveries WHERE tenant_id = ? AND id IN (?)`, tenantID, ids)
}

// CountDeliveries counts a source's deliveries in one state (dead_letter:
// its dead letters).
func (a *Admin) CountDeliveries(ctx context.Context, tenantID, sourceID, state string) (int, error) {
	if !validStates[state] {
		return 0, apperr.InvalidFields(map[string]string{"state": "must be one of received, processed, failed, dead_letter"})
	}
	var n int
	var err error
	if state == StateDeadLetter {
		err = a.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM dead_letters WHERE tenant_id = ? AND source_id = ?`, tenantID, sourceID)
	} else {
		err = a.DB.GetContext(ctx, &n, `SELECT COUNT(*) FROM deliveries WHERE tenant_id = ? AND state = ? AND source_id = ?`, tenantID, state, sourceID)
	}
	return n, err
}

// Reprocess runs a delivery again: a failed one goes back to `received`
// and is queued; a received one is (re)queued; a processed one is left
// alone (its state is returned). A dead letter's id re-parses it under the
// source's current config (see reprocessDeadLetter).
func (a *Admin) Reprocess(ctx context.Context, tenantID, id string) (DeliveryItem, error) {
	if !ids.Valid(id) {
		return DeliveryItem{}, apperr.New(apperr.NotFound, "delivery not found")
	}
	var d Delivery
	err := a.DB.GetContext(ctx, &d, `SELECT id, state, received_at FROM deliveries WHERE tenant_id = ? AND id = ?`, tenantID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return a.reprocessDeadLetter(ctx, tenantID, id)
	}
	if err != nil {
		return DeliveryItem{}, err
	}
	if err := a.payloadKept(ctx, tenantID, id); err != nil {
		return DeliveryItem{}, err
	}
	switch d.State {
	case StateFailed:
		if _, err := a.reset(ctx, tenantID, []string{id}); err != nil {
			return DeliveryItem{}, err
		}
		fallthrough
	case StateReceived:
		if err := a.Processor.Requeue(ctx, tenantID, id); err != nil {
			return DeliveryItem{}, err
		}
		return DeliveryItem{ID: id, State: StateReceived}, nil
	}
	return DeliveryItem{ID: id, State: d.State}, nil
}

// reset moves failed deliveries back to received; it returns the ids it
// changed (another reprocess may have taken some first).
func (a *Admin) reset(ctx context.Context, tenantID string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var changed []string
	err := db.InTx(ctx, a.DB, func(tx *sqlx.Tx) error {
		changed = changed[:0]
		if err := db.SelectIn(ctx, tx, &changed, `SELECT id FROM deliveries WHERE tenant_id = ? AND id IN (?) AND state = 'failed' FOR UPDATE`, tenantID, ids); err != nil || len(changed) == 0 {
			return err
		}
		_, err := db.ExecIn(ctx, tx, `UPDATE deliveries SET state = 'received', processed_at = NULL WHERE tenant_id = ? AND id IN (?) AND state = 'failed'`, tenantID, changed)
		return err
	})
	return changed, err
}

// ReprocessSource reprocesses every failed delivery (state "failed") or
// every dead letter (state "dead_letter") of a source; it returns how
// many were queued. Twice in a row, the second finds nothing to do.
func (a *Admin) ReprocessSource(ctx context.Context, tenantID, sourceID, state string) (int, error) {
	src, err := a.source(ctx, tenantID, sourceID)
	if err != nil {
		return 0, err
	}
	switch state {
	case StateFailed:
	case StateDeadLetter:
		return a.reprocessDeadLetters(ctx, tenantID, src)
	default:
		return 0, apperr.InvalidFields(map[string]string{"state": `must be "failed" or "dead_letter"`})
	}
	n := 0
	var after *sweepCursor
	for {
		var page []Delivery
		if after == nil {
			err = a.DB.SelectContext(ctx, &page, `SELECT id, received_at FROM deliveries
				WHERE tenant_id = ? AND state = 'failed' AND source_id = ? ORDER BY received_at, id LIMIT 500`, tenantID, sourceID)
		} else {
			err = a.DB.SelectContext(ctx, &page, `SELECT id, received_at FROM deliveries
				WHERE tenant_id = ? AND state = 'failed' AND source_id = ? AND (received_at > ? OR (received_at = ? AND id > ?))
				ORDER BY received_at, id LIMIT 500`, tenantID, sourceID, after.at, after.at, after.id)
		}
		if err != nil || len(page) == 0 {
			return n, err
		}
		ids := make([]string, len(page))
		for i, p := range page {
			ids[i] = p.ID
		}
		changed, err := a.reset(ctx, tenantID, ids)
		if err != nil {
			return n, err
		}
		for _, id := range changed {
			if err := a.Processor.Requeue(ctx, tenantID, id); err != nil {
				// Left `received`: the sweeper queues it.
				a.Processor.Log.WarnContext(ctx, "reprocess enqueue failed; the sweeper will retry", "delivery", id, "err", err)
			}
			n++
		}
		last := page[len(page)-1]
		after = &sweepCursor{at: last.ReceivedAt, id: last.ID}
	}
}

type deadLetterRow struct {
	ID         string    `db:"id"`
	Reason     string    `db:"reason"`
	Headers    []byte    `db:"headers"`
	Body       []byte    `db:"body"`
	ReceivedAt time.Time `db:"received_at"`
}

func (r deadLetterRow) header() http.Header {
	h := http.Header{}
	var m map[string]string
	if json.Unmarshal(r.Headers, &m) == nil {
		for k, v := range m {
			h.Set(k, v)
		}
	}
	return h
}

func (a *Admin) reprocessDeadLetter(ctx context.Context, tenantID, id string) (DeliveryItem, error) {
	var dl deadLetterRow
	err := a.DB.GetContext(ctx, &dl, `SELECT id, reason, IFNULL(headers, '{}') AS headers, body, received_at FROM dead_letters
		WHERE tenant_id = ? AND id = ?`, tenantID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return DeliveryItem{}, apperr.New(apperr.NotFound, "delivery not found")
	}
	if err != nil {
		return DeliveryItem{}, err
	}
	var sourceID string
	if err := a.DB.GetContext(ctx, &sourceID, `SELECT source_id FROM dead_letters WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		return DeliveryItem{}, err
	}
	src, err := a.source(ctx, tenantID, sourceID)
	if err != nil {
		return DeliveryItem{}, err
	}
	items, err := a.claimDeadLetter(ctx, tenantID, src, dl)
	if err != nil {
		return DeliveryItem{}, err
	}
	return items[0], nil
}

func (a *Admin) reprocessDeadLetters(ctx context.Context, tenantID string, src sources.Source) (int, error) {
	n := 0
	var after *sweepCursor
	for {
		var page []deadLetterRow
		var err error
		if after == nil {
			err = a.DB.SelectContext(ctx, &page, `SELECT id, reason, IFNULL(headers, '{}') AS headers, body, received_at FROM dead_letters
				WHERE tenant_id = ? AND source_id = ? ORDER BY received_at, id LIMIT 100`, tenantID, src.ID)
		} else {
			err = a.DB.SelectContext(ctx, &page, `SELECT id, reason, IFNULL(headers, '{}') AS headers, body, received_at FROM dead_letters
				WHERE tenant_id = ? AND source_id = ? AND (received_at > ? OR (received_at = ? AND id > ?))
				ORDER BY received_at, id LIMIT 100`, tenantID, src.ID, after.at, after.at, after.id)
		}
		if err != nil || len(page) == 0 {
			return n, err
		}
		for _, dl := range page {
			items, err := a.claimDeadLetter(ctx, tenantID, src, dl)
			if apperr.Is(err, apperr.Invalid) {
				continue // still unusable: stays a dead letter
			}
			if err != nil {
				return n, err
			}
			for _, it := range items {
				if it.State == StateReceived {
					n++
				}
			}
		}
		last := page[len(page)-1]
		after = &sweepCursor{at: last.ReceivedAt, id: last.ID}
	}
}

// claimDeadLetter parses a dead letter under the source's current config;
// when it parses, each record's delivery id is claimed like a fresh
// delivery (new → queued; already accepted meanwhile → a duplicate of the
// original) and the dead letter is removed. Still unusable → Invalid.
func (a *Admin) claimDeadLetter(ctx context.Context, tenantID string, src sources.Source, dl deadLetterRow) ([]DeliveryItem, error) {
	k, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "the source's config does not work: %s", err.Error())
	}
	recs, err := k.Parse(dl.header(), dl.Body)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "the dead letter still cannot be used: %s", err.Error())
	}
	now := a.Processor.now()
	var out []DeliveryItem
	for _, rec := range recs {
		d := Delivery{TenantID: tenantID, SourceID: src.ID, ID: ids.New(), DeliveryID: rec.DeliveryID, Origin: "webhook",
			Payload: rec.Raw, ReceivedAt: now, State: StateReceived}
		isNew, original, err := a.Claimer.Claim(ctx, d)
		if err != nil {
			return nil, err
		}
		if !isNew {
			var st string
			if err := a.DB.GetContext(ctx, &st, `SELECT state FROM deliveries WHERE tenant_id = ? AND id = ?`, tenantID, original); err != nil {
				return nil, err
			}
			out = append(out, DeliveryItem{ID: original, State: st})
			continue
		}
		if err := a.Processor.Requeue(ctx, tenantID, d.ID); err != nil {
			a.Processor.Log.WarnContext(ctx, "reprocess enqueue failed; the sweeper will retry", "delivery", d.ID, "err", err)
		}
		out = append(out, DeliveryItem{ID: d.ID, State: StateReceived})
	}
	if _, err := a.DB.ExecContext(ctx, `DELETE FROM dead_letters WHERE tenant_id = ? AND id = ?`, tenantID, dl.ID); err != nil {
		return out, err
	}
	return out, nil
}

// Preview maps the source's last limit stored deliveries and dead letters
// under a proposed config, changing nothing. An invalid config is a 422
// naming its fields.
func (a *Admin) Preview(ctx context.Context, tenantID, sourceID string, config json.RawMessage, limit int) ([]PreviewItem, error) {
	src, err := a.source(ctx, tenantID, sourceID)
	if err != nil {
		return nil, err
	}
	if len(config) == 0 || string(config) == "null" {
		config = src.Config
	}
	if f := kinds.ValidateConfig(src.Kind, config); len(f) > 0 {
		return nil, apperr.InvalidFields(f)
	}
	k, err := kinds.New(src.Kind, config)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "%s", err.Error())
	}
	var ds []Delivery
	if err := a.DB.SelectContext(ctx, &ds, `SELECT id, delivery_id, state, received_at, payload FROM deliveries
		WHERE tenant_id = ? AND source_id = ? ORDER BY received_at DESC, id DESC LIMIT ?`, tenantID, sourceID, limit); err != nil {
		return nil, err
	}
	var dls []deadLetterRow
	if err := a.DB.SelectContext(ctx, &dls, `SELECT id, reason, IFNULL(headers, '{}') AS headers, body, received_at FROM dead_letters
		WHERE tenant_id = ? AND source_id = ? ORDER BY received_at DESC, id DESC LIMIT ?`, tenantID, sourceID, limit); err != nil {
		return nil, err
	}
	type entry struct {
		at   time.Time
		id   string
		item PreviewItem
	}
	var all []entry
	for _, d := range ds {
		it := previewRecord(k, d.ID, d.State, d.Payload)
		it.SenderID = d.DeliveryID
		all = append(all, entry{d.ReceivedAt, d.ID, it})
	}
	for _, dl := range dls {
		it := PreviewItem{DeliveryID: dl.ID, State: StateDeadLetter}
		recs, err := k.Parse(dl.header(), dl.Body)
		if err == nil && len(recs) > 0 {
			it = previewRecord(k, dl.ID, StateDeadLetter, recs[0].Raw)
		} else if err != nil {
			msg := err.Error()
			it.Error = &msg
		}
		all = append(all, entry{dl.ReceivedAt, dl.ID, it})
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].at.Equal(all[j].at) {
			return all[i].at.After(all[j].at)
		}
		return all[i].id > all[j].id
	})
	if len(all) > limit {
		all = all[:limit]
	}
	out := make([]PreviewItem, len(all))
	for i, e := range all {
		out[i] = e.item
	}
	return out, nil
}

func previewRecord(k kinds.Kind, id, state string, raw []byte) PreviewItem {
	it := PreviewItem{DeliveryID: id, State: state}
	if len(raw) == 0 {
		msg := PayloadRemoved
		it.Error = &msg
		return it
	}
	l, err := k.Map(raw)
	if err != nil {
		msg := err.Error()
		it.Error = &msg
		return it
	}
	ref := l.SourceRef
	it.NaturalKey = &ref
	it.Fields = map[string]string{}
	for name, v := range map[string]string{"email": l.Email, "name": l.Name, "phone": l.Phone, "company": l.Company} {
		if v != "" {
			it.Fields[name] = v
		}
	}
	if l.CreatedAt != nil {
		it.Fields["created_at"] = l.CreatedAt.UTC().Format(time.RFC3339)
	}
	if l.EventTime != nil {
		t := l.EventTime.UTC()
		it.EventTime = &t
	}
	return it
}

// DiscardDeadLetters deletes the given dead letters of a source (an admin
// decided they are junk); ids of other sources or tenants are ignored. It
// returns how many were removed.
func (a *Admin) DiscardDeadLetters(ctx context.Context, tenantID, sourceID string, deadIDs []string) (int, error) {
	if _, err := a.source(ctx, tenantID, sourceID); err != nil {
		return 0, err
	}
	valid := make([]string, 0, len(deadIDs))
	for _, id := range deadIDs {
		if ids.Valid(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return 0, nil
	}
	res, err := db.ExecIn(ctx, a.DB, `DELETE FROM dead_letters WHERE tenant_id = ? AND source_id = ? AND id IN (?)`, tenantID, sourceID, valid)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
