package leads

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"time"

	"leadpipe/internal/db"
)

// Attribution is where a lead came from (docs/FORMS.md, "Attribution"):
// the first touch, set once and never changed, and the last touch, which
// follows the newest record. A touch maps utm_source, utm_medium,
// utm_campaign, utm_term, utm_content, gclid, fbclid, li_fat_id, referrer,
// landing_page, the ad keys (campaign_id, campaign_name, adset_id, ad_id,
// form_id), source_id and at (RFC 3339) to their values; empty ones are
// left out.
type Attribution struct {
	First map[string]string `json:"first,omitempty"`
	Last  map[string]string `json:"last,omitempty"`
}

// Consent is one consent record a person gave (docs/FORMS.md, "Consent").
type Consent struct {
	Purpose    string    `json:"purpose"`
	Text       string    `json:"text"`
	TextSHA256 string    `json:"text_sha256"`
	Granted    bool      `json:"granted"`
	At         time.Time `json:"at"`
	IP         string    `json:"ip"`
	FormID     string    `json:"form_id"`
}

// TouchRecord is what one sender record says of its lead's attribution
// and consent, applied by RecordTouches.
type TouchRecord struct {
	LeadID  string
	First   map[string]string // the visitor's first touch as the record knows it (may be nil)
	Last    map[string]string // this record's own touch (may be nil)
	Consent *Consent
}

// Extras is a lead's attribution and consents (GET /api/v1/leads/{id},
// the lead page, the person's export).
type Extras struct {
	Attribution *Attribution `json:"attribution"`
	Consents    []Consent    `json:"consents"`
}

type extrasRow struct {
	ID          string  `db:"id"`
	Attribution *string `db:"attribution"`
	Consents    *string `db:"consents"`
}

func (r extrasRow) extras() Extras {
	e := Extras{Consents: []Consent{}}
	if r.Attribution != nil {
		var a Attribution
		if json.Unmarshal([]byte(*r.Attribution), &a) == nil && (len(a.First) > 0 || len(a.Last) > 0) {
			e.Attribution = &a
		}
	}
	if r.Consents != nil {
		_ = json.Unmarshal([]byte(*r.Consents), &e.Consents)
		if e.Consents == nil {
			e.Consents = []Consent{}
		}
	}
	return e
}

// LeadExtras reads a lead's attribution and consents.
func LeadExtras(ctx context.Context, x db.Ext, tenantID, id string) (Extras, error) {
	var rows []extrasRow
	if err := x.SelectContext(ctx, &rows, `SELECT id, attribution, consents FROM leads WHERE tenant_id = ? AND id = ?`, tenantID, id); err != nil {
		return Extras{}, err
	}
	if len(rows) == 0 {
		return Extras{Consents: []Consent{}}, nil
	}
	return rows[0].extras(), nil
}

// Extras is LeadExtras on the service's database.
func (s *Service) Extras(ctx context.Context, tenantID, id string) (Extras, error) {
	return LeadExtras(ctx, s.DB, tenantID, id)
}

// RecordTouches applies records' attribution and consent to their leads
// in the caller's transaction (the worker's batch, whose upsert locked the
// leads): a lead's first touch is set once, from the first record that
// has one; its last touch is replaced by a record whose touch is newer
// (its "at"); a consent is added unless the lead holds the same record
// already (a reprocessed delivery adds nothing). Records in the order the
// caller gives them; one read and at most one write per lead.
func RecordTouches(ctx context.Context, x db.Ext, tenantID string, recs []TouchRecord) error {
	var leadIDs []any
	seen := map[string]bool{}
	for _, r := range recs {
		if r.LeadID == "" || (len(r.First) == 0 && len(r.Last) == 0 && r.Consent == nil) || seen[r.LeadID] {
			continue
		}
		seen[r.LeadID] = true
		leadIDs = append(leadIDs, r.LeadID)
	}
	if len(leadIDs) == 0 {
		return nil
	}
	var rows []extrasRow
	if err := x.SelectContext(ctx, &rows, `SELECT id, attribution, consents FROM leads WHERE tenant_id = ? AND id IN (?`+
		strings.Repeat(", ?", len(leadIDs)-1)+`) ORDER BY id FOR UPDATE`, append([]any{tenantID}, leadIDs...)...); err != nil {
		return err
	}
	state := map[string]*Extras{}
	before := map[string]string{}
	for _, row := range rows {
		e := row.extras()
		state[row.ID] = &e
		before[row.ID] = marshalExtras(e)
	}
	for _, r := range recs {
		e := state[r.LeadID]
		if e == nil {
			continue
		}
		applyTouch(e, r)
	}
	for _, row := range rows {
		e := state[row.ID]
		after := marshalExtras(*e)
		if after == before[row.ID] {
			continue
		}
		var attr, cons any
		if e.Attribution != nil {
			b, _ := json.Marshal(e.Attribution)
			attr = string(b)
		}
		if len(e.Consents) > 0 {
			b, _ := json.Marshal(e.Consents)
			cons = string(b)
		}
		if _, err := x.ExecContext(ctx, `UPDATE leads SET attribution = ?, consents = ? WHERE tenant_id = ? AND id = ?`,
			attr, cons, tenantID, row.ID); err != nil {
			return err
		}
	}
	return nil
}

func marshalExtras(e Extras) string {
	b, _ := json.Marshal(e)
	return string(b)
}

func applyTouch(e *Extras, r TouchRecord) {
	first, last := clean(r.First), clean(r.Last)
	if first == nil {
		first = last
	}
	if first != nil || last != nil {
		if e.Attribution == nil {
			e.Attribution = &Attribution{}
		}
		switch {
		case len(e.Attribution.First) == 0 && first != nil:
			e.Attribution.First = first
		case sameTouch(e.Attribution.First, first):
			e.Attribution.First = fillTouch(e.Attribution.First, first)
		case sameTouch(e.Attribution.First, last):
			e.Attribution.First = fillTouch(e.Attribution.First, last)
		}
		switch {
		case last == nil:
		case len(e.Attribution.Last) == 0 || touchTime(last).After(touchTime(e.Attribution.Last)):
			e.Attribution.Last = last
		case sameTouch(e.Attribution.Last, last):
			e.Attribution.Last = fillTouch(e.Attribution.Last, last)
		}
	}
	if c := r.Consent; c != nil {
		for _, have := range e.Consents {
			if have.FormID == c.FormID && have.At.Equal(c.At) && have.TextSHA256 == c.TextSHA256 && have.Granted == c.Granted {
				return
			}
		}
		e.Consents = append(e.Consents, *c)
	}
}

// clean drops empty values; nil when nothing is left.
func clean(t map[string]string) map[string]string {
	var out map[string]string
	for k, v := range t {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = Clip(v, 2000)
	}
	return out
}

// sameTouch reports whether t is the touch have already holds: the same
// time and source (a Meta lead's webhook, then the Graph lead the
// enrichment fetches, which says more of the same ad).
func sameTouch(have, t map[string]string) bool {
	return len(have) > 0 && len(t) > 0 && have["at"] != "" && have["at"] == t["at"] && have["source_id"] == t["source_id"]
}

// fillTouch adds to have the keys only t has; a value have holds is
// never changed (the first touch is set once).
func fillTouch(have, t map[string]string) map[string]string {
	var out map[string]string
	for k, v := range t {
		if _, ok := have[k]; ok {
			continue
		}
		if out == nil {
			out = maps.Clone(have)
		}
		out[k] = v
	}
	if out == nil {
		return have
	}
	return out
}

func touchTime(t map[string]string) time.Time {
	at, err := time.Parse(time.RFC3339Nano, t["at"])
	if err != nil {
		return time.Time{}
	}
	return at
}
