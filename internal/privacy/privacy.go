// Package privacy serves a person's rights over a lead (docs/ARCHITECTURE.md, "Personal data"):
// the export of everything held about it and its erasure. It owns no
// table: each area that holds a part of a person's data (leads, the
// ingest tables, the outbox, idempotency keys, the audit log) exports the
// functions that read or blank it in a caller's transaction, and this
// package runs them in one.
package privacy

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/events"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/notify"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// Audit actions.
const (
	ActionExported = "lead.exported"
	ActionErased   = "lead.erased"
)

// Service exports and erases leads.
type Service struct {
	DB      *sqlx.DB
	Leads   *leads.Service
	Sources *sources.Service
	Now     func() time.Time
}

// NewService returns a service on d.
func NewService(d *sqlx.DB, l *leads.Service, src *sources.Service, now func() time.Time) *Service {
	return &Service{DB: d, Leads: l, Sources: src, Now: now}
}

func (s *Service) now() time.Time { return clock.Read(s.Now).UTC().Truncate(time.Microsecond) }

// Export is everything held about one lead.
type Export struct {
	ExportedAt  time.Time              `json:"exported_at"`
	Lead        leads.Lead             `json:"lead"`
	Attribution *leads.Attribution     `json:"attribution"` // where the lead came from (web forms)
	Consents    []leads.Consent        `json:"consents"`    // what the person agreed to, and when
	Notes       []leads.Note           `json:"notes"`
	Timeline    []leads.TimelineEntry  `json:"timeline"`
	Deliveries  []Delivery             `json:"deliveries"`
	DeadLetters []DeadLetter           `json:"dead_letters"`
	Events      []events.ResourceEvent `json:"events"`
}

// Delivery is one delivery that reached the lead, with its raw payload.
type Delivery struct {
	webhooks.Delivery
	Payload any `json:"payload"` // the JSON as received, or the bytes as text
}

// DeadLetter is a dead letter that carries the lead's record.
type DeadLetter struct {
	webhooks.DeadLetterBody
	Body any `json:"body"`
}

// raw shows stored bytes as they came: JSON as JSON, anything else as text.
func raw(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	return string(b)
}

// Export gathers everything held about a lead and records the export in
// the audit log (who exported which lead; never the data) in the
// transaction that read it. Another tenant's lead is 404.
func (s *Service) Export(ctx context.Context, tenantID, leadID string) (Export, error) {
	if !ids.Valid(leadID) {
		return Export{}, apperr.New(apperr.NotFound, "lead not found")
	}
	timeline, err := s.Leads.Timeline(ctx, tenantID, leadID)
	if err != nil {
		return Export{}, err
	}
	var out Export
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		l, err := leads.Get(ctx, tx, tenantID, leadID)
		if err != nil {
			return err
		}
		out = Export{ExportedAt: s.now(), Lead: l, Timeline: timeline, Deliveries: []Delivery{}, DeadLetters: []DeadLetter{}}
		if out.Notes, err = leads.AllNotes(ctx, tx, tenantID, leadID); err != nil {
			return err
		}
		ex, err := leads.LeadExtras(ctx, tx, tenantID, leadID)
		if err != nil {
			return err
		}
		out.Attribution, out.Consents = ex.Attribution, ex.Consents
		ds, err := webhooks.PayloadsForLead(ctx, tx, tenantID, leadID)
		if err != nil {
			return err
		}
		for _, d := range ds {
			out.Deliveries = append(out.Deliveries, Delivery{Delivery: d, Payload: raw(d.Payload)})
		}
		dls, err := s.deadLettersOf(ctx, tx, tenantID, l)
		if err != nil {
			return err
		}
		for _, d := range dls {
			out.DeadLetters = append(out.DeadLetters, DeadLetter{DeadLetterBody: d, Body: raw(d.Body)})
		}
		if out.Events, err = events.AboutResource(ctx, tx, tenantID, leadID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: ActionExported, TargetType: "lead", TargetID: leadID,
			Detail: map[string]any{"deliveries": len(out.Deliveries), "dead_letters": len(out.DeadLetters),
				"notes": len(out.Notes), "events": len(out.Events)}})
	})
	if err != nil {
		return Export{}, err
	}
	return out, nil
}

// Erased is the answer to an erasure.
type Erased struct {
	ID       string    `json:"id"`
	ErasedAt time.Time `json:"erased_at"`
}

// Erase removes a lead and the person's data everywhere it is held, in one
// transaction with once's Idempotency-Key (if any): the lead, its notes
// and timeline; the payloads of its deliveries, of failed deliveries and
// dead letters of its source that carry it; the bodies of the outbound
// events about it and their attempts' responses; stored API responses and
// audit details that hold its email, name or phone. A tombstone keeps a
// hash of its source and natural key, so a later delivery of the record
// is dropped (leads.UpsertFromSenderBatch), and the audit log gets
// lead.erased with counts only. Another tenant's lead, or one already
// erased, is 404.
func (s *Service) Erase(ctx context.Context, tenantID, leadID string, once idempotency.Once[Erased]) (Erased, error) {
	if !ids.Valid(leadID) {
		return Erased{}, apperr.New(apperr.NotFound, "lead not found")
	}
	return idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Erased, error) {
		return s.erase(ctx, tx, tenantID, leadID)
	})
}

func (s *Service) erase(ctx context.Context, tx *sqlx.Tx, tenantID, leadID string) (Erased, error) {
	now := s.now()
	l, err := leads.EraseTx(ctx, tx, tenantID, leadID, now)
	if err != nil {
		return Erased{}, err
	}
	needles := Needles(l)
	detail := map[string]any{}
	n, err := webhooks.BlankLeadPayloads(ctx, tx, tenantID, l.ID)
	if err != nil {
		return Erased{}, err
	}
	detail["deliveries"] = n
	if l.SourceID != "" {
		dls, err := s.deadLettersOf(ctx, tx, tenantID, l)
		if err != nil {
			return Erased{}, err
		}
		dlIDs := make([]string, len(dls))
		for i, d := range dls {
			dlIDs[i] = d.ID
		}
		if detail["dead_letters"], err = webhooks.BlankDeadLetters(ctx, tx, tenantID, dlIDs); err != nil {
			return Erased{}, err
		}
		if detail["failed_deliveries"], err = webhooks.BlankFailedPayloads(ctx, tx, tenantID, l.SourceID, needles); err != nil {
			return Erased{}, err
		}
	}
	ev, err := events.EraseResource(ctx, tx, tenantID, l.ID, now)
	if err != nil {
		return Erased{}, err
	}
	detail["events"], detail["attempts"] = ev.Events, ev.Attempts
	if detail["messages"], err = notify.EraseLead(ctx, tx, tenantID, l.ID, needles); err != nil {
		return Erased{}, err
	}
	// A note's stored response names its lead; a created lead's holds the
	// fields themselves.
	if detail["stored_responses"], err = idempotency.ScrubResponses(ctx, tx, tenantID,
		append(jsonForms(needles), `"lead_id":"`+l.ID+`"`)); err != nil {
		return Erased{}, err
	}
	if detail["audit_rows"], err = audit.Redact(ctx, tx, tenantID, needles); err != nil {
		return Erased{}, err
	}
	if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: ActionErased, TargetType: "lead", TargetID: l.ID, At: now,
		Detail: detail}); err != nil {
		return Erased{}, err
	}
	return Erased{ID: l.ID, ErasedAt: now}, nil
}

// minNeedle is the shortest value searched for outside the lead's own
// rows: a two-letter name would match unrelated text everywhere.
const minNeedle = 3

// Needles are the values that identify the person outside the lead's own
// rows: the email (as stored and lower-cased), the name and the phone.
func Needles(l leads.Lead) []string {
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < minNeedle {
			return
		}
		for _, o := range out {
			if o == v {
				return
			}
		}
		out = append(out, v)
	}
	add(l.Email)
	add(strings.ToLower(l.Email))
	add(l.Name)
	add(l.Phone)
	return out
}

// jsonForms adds each needle as a JSON encoder writes it inside a string
// (it escapes <, >, & and quotes), where that differs.
func jsonForms(needles []string) []string {
	out := append([]string(nil), needles...)
	for _, n := range needles {
		b, err := json.Marshal(n)
		if err != nil {
			continue
		}
		if esc := string(b[1 : len(b)-1]); esc != n {
			out = append(out, esc)
		}
	}
	return out
}

// deadLetterPage is how many dead letters are read at a time.
const deadLetterPage = 200

// deadLettersOf finds the dead letters of the lead's source that carry its
// record: the body maps (with the source's kind) to its natural key, or,
// when it does not map at all, contains its email. A manual lead has none.
func (s *Service) deadLettersOf(ctx context.Context, x db.Ext, tenantID string, l leads.Lead) ([]webhooks.DeadLetterBody, error) {
	if l.SourceID == "" {
		return nil, nil
	}
	var k kinds.Kind
	src, err := s.Sources.Get(ctx, tenantID, l.SourceID)
	switch {
	case err == nil:
		k, _ = kinds.New(src.Kind, src.Config) // an invalid config: match by email only
	case !apperr.Is(err, apperr.NotFound):
		return nil, err
	}
	email := []byte(strings.ToLower(strings.TrimSpace(l.Email)))
	var out []webhooks.DeadLetterBody
	after := ""
	for {
		page, err := webhooks.DeadLetterBodies(ctx, x, tenantID, l.SourceID, after, deadLetterPage)
		if err != nil {
			return nil, err
		}
		for _, d := range page {
			if carries(k, d.Body, l.SourceRef, email) {
				out = append(out, d)
			}
		}
		if len(page) < deadLetterPage {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}

// carries reports whether a dead letter's body is the lead's record.
func carries(k kinds.Kind, body []byte, ref string, email []byte) bool {
	if len(body) == 0 {
		return false
	}
	if k != nil {
		if m, err := k.Map(body); err == nil {
			return leads.Clip(m.SourceRef, 191) == ref
		}
	}
	return len(email) >= minNeedle && bytes.Contains(bytes.ToLower(body), email)
}
