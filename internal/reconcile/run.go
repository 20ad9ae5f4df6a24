package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"go.opentelemetry.io/otel/trace"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/reconcile/pull"
	"leadpipe/internal/sources"
	"leadpipe/internal/tracing"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// maxErrorLen fits reconcile_runs.last_error.
const maxErrorLen = 1024

// execute performs a claimed run and records its outcome. It returns an
// error only when the outcome could not be recorded (the database is down),
// so the task is retried and resumes the run; everything that goes wrong
// with the sender is recorded on the run instead.
func (s *Service) execute(ctx context.Context, run Run) (err error) {
	ctx, span := tracing.StartKind(ctx, "reconcile.run", trace.SpanKindConsumer)
	defer func() { endRunSpan(span, run, err) }()
	log := s.log().With("tenant_id", run.TenantID, "source_id", run.SourceID, "run_id", run.ID)
	start := s.now()
	// Counters restart: a resumed run re-reads its window, and the upserts
	// already done count as known the second time.
	run.Pages, run.Records, run.New, run.Known, run.Changed, run.Errors, run.LastError = 0, 0, 0, 0, 0, 0, nil
	run.HeartbeatAt = start

	src, err := s.Sources.Get(ctx, run.TenantID, run.SourceID)
	if apperr.Is(err, apperr.NotFound) {
		return s.finish(ctx, &run, StateFailed, "the source was deleted", "")
	}
	if err != nil {
		return err
	}
	if !src.ReconcileEnabled() {
		return s.finish(ctx, &run, StateFailed, "the source has no reconcile settings (base URL) any more", "")
	}
	ps, err := s.Sources.Pull(src)
	if err != nil {
		return s.finish(ctx, &run, StateFailed, "cannot decrypt the stored access token; enter it again", "")
	}
	puller, err := pull.NewPuller(pull.Settings{Kind: src.Kind, BaseURL: ps.BaseURL, AccessToken: ps.AccessToken,
		FormID: ps.FormID, ListPath: ps.ListPath, PageSize: s.PageSize}, s.Client)
	if err != nil {
		return s.finish(ctx, &run, StateFailed, err.Error(), ps.AccessToken)
	}
	kind, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		return s.finish(ctx, &run, StateFailed, err.Error(), ps.AccessToken)
	}

	since := start.Add(-max(ps.Lookback, s.initialLookback()))
	if ps.Cursor != nil {
		since = ps.Cursor.UTC().Add(-ps.Lookback)
	}
	// Before a source's first completed run, every record found is its
	// history (back-fill), not webhook loss.
	succeeded, err := hasSucceeded(ctx, s.DB, run.TenantID, run.SourceID)
	if err != nil {
		return err
	}
	rc := &runContext{backfill: !succeeded, settleCutoff: start.Add(-s.settleDelay())}
	// A run cut off part-way (deadline, page limit) left its place: go on
	// from there instead of starting the window over.
	place, err := lastRunPlace(ctx, s.DB, run.TenantID, run.SourceID, run.ID)
	if err != nil {
		return err
	}
	var cursor string
	var newest time.Time
	resumed := place != nil
	if resumed {
		since = place.Since.UTC()
		cursor = *place.PageCursor
		if place.Newest != nil {
			newest = place.Newest.UTC()
		}
		run.Newest = place.Newest
	}
	run.Since = &since
	run.PageCursor = cursor
	if err := saveProgress(ctx, s.DB, &run); err != nil {
		return err
	}

	rctx, cancel := context.WithTimeout(ctx, s.runTimeout())
	defer cancel()
	var failure error
	for {
		if run.Pages >= s.maxPages() {
			failure = fmt.Errorf("stopped after %d pages; the rest is left for the next run", run.Pages)
			break
		}
		page, err := puller.FetchPage(rctx, since, cursor)
		if err != nil {
			failure = s.describeFetchError(rctx, err)
			if resumed && run.Pages == 0 && rctx.Err() == nil {
				// The saved page token no longer works (expired at the
				// sender): the next run starts the window over.
				run.PageCursor = ""
				failure = fmt.Errorf("resuming the window failed, the next run starts it over: %w", failure)
			}
			break
		}
		out, err := s.applyPage(rctx, &run, src, kind, page.Records, storableCursor(page.Next), rc)
		if err != nil {
			if rctx.Err() != nil {
				err = s.describeFetchError(rctx, err)
			}
			failure = fmt.Errorf("storing page %d: %w", run.Pages+1, err)
			break
		}
		if out.newest.After(newest) {
			newest = out.newest
		}
		at := s.now()
		if out.new > 0 {
			s.stats().Add(run.TenantID, run.SourceID, monitor.ReconcileNew, int64(out.new), at)
		}
		if out.known > 0 {
			s.stats().Add(run.TenantID, run.SourceID, monitor.ReconcileKnown, int64(out.known), at)
		}
		if out.backfill > 0 {
			s.stats().Add(run.TenantID, run.SourceID, monitor.Backfill, int64(out.backfill), at)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}

	if failure != nil {
		log.WarnContext(ctx, "reconcile run failed", "err", redact(failure.Error(), ps.AccessToken), "pages", run.Pages)
		return s.finish(ctx, &run, StateFailed, failure.Error(), ps.AccessToken)
	}
	// The cursor only moves after a complete run, so a failed one is
	// repeated in full by the next. It follows the newest record seen (the
	// sender's clock), or this run's start when the window was empty; it
	// never moves back and never past our own clock.
	next := start
	if !newest.IsZero() && newest.Before(start) {
		next = newest
	}
	if rc.deferred > 0 && next.After(rc.settleCutoff) {
		// Records still settling were left for the next run: its window
		// must reach back to them.
		next = rc.settleCutoff
	}
	if ps.Cursor != nil && ps.Cursor.After(next) {
		next = ps.Cursor.UTC()
	}
	if err := s.Sources.SetCursor(context.WithoutCancel(ctx), run.TenantID, run.SourceID, next); err != nil {
		return err
	}
	return s.finish(ctx, &run, StateSucceeded, "", ps.AccessToken)
}

// describeFetchError names the run deadline when that is what cut the run off.
func (s *Service) describeFetchError(rctx context.Context, err error) error {
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("run deadline of %s exceeded: %w", s.runTimeout(), err)
	}
	return err
}

// finish records the run's final state. msg (when not empty) is the last
// error; any occurrence of the access token is blanked out first.
func (s *Service) finish(ctx context.Context, run *Run, state, msg, token string) error {
	now := s.now()
	run.State = state
	run.FinishedAt = &now
	run.HeartbeatAt = now
	if msg != "" {
		run.Errors++
		run.LastError = ptr(leads.Clip(redact(msg, token), maxErrorLen))
	}
	// The run's own deadline may be what ended it; recording the outcome
	// must still happen.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return finishRun(wctx, s.DB, run)
}

// pageOutcome counts one committed page.
type pageOutcome struct {
	new, known, changed, backfill int
	newest                        time.Time
}

// runContext is what applyPage needs to judge loss honestly.
type runContext struct {
	backfill     bool      // the source's first run: new records are back-fill
	settleCutoff time.Time // records newer than this (sender time) are not judged yet
	deferred     int       // records left for a later run because they were still settling
	pending      map[string]string
	loaded       bool
}

// storableCursor is a page token fit to store: Meta's paging URL carries
// the access token, which must never land in the database (the puller
// adds it again).
func storableCursor(next string) string {
	if next == "" {
		return ""
	}
	if u, err := url.Parse(next); err == nil && u.Scheme != "" {
		q := u.Query()
		if q.Has("access_token") {
			q.Del("access_token")
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return next
}

// recordError marks the record that failed a page's transaction.
type recordError struct {
	index int
	err   error
}

func (e *recordError) Error() string { return e.err.Error() }
func (e *recordError) Unwrap() error { return e.err }

type mappedRecord struct {
	index int
	raw   json.RawMessage
	lead  kinds.Lead
}

// applyPage upserts one page in one transaction through Apply (the webhook
// path) and saves the run's counters in the same transaction, so the run
// record never disagrees with the leads. Records that cannot be mapped, or
// that the database refuses, count as errors and the rest of the page still
// commits.
//
// Timeline: a "reconcile" event is written for a new lead (the webhook was
// lost) and for a known lead whose sender fields changed, not for the
// records that were already known as they are. A source reconciled every
// 15 minutes with a one-hour look-back sees each lead four times; touching
// the timeline each time would bury the human history under noise.
func (s *Service) applyPage(ctx context.Context, run *Run, src sources.Source, kind kinds.Kind, records []json.RawMessage, nextCursor string, rc *runContext) (pageOutcome, error) {
	var mapped []mappedRecord
	var badErrs []string
	for i, raw := range records {
		l, err := kind.Map(raw)
		if err != nil {
			badErrs = append(badErrs, fmt.Sprintf("page %d, record %d: %v", run.Pages+1, i+1, err))
			continue
		}
		mapped = append(mapped, mappedRecord{index: i, raw: raw, lead: l})
	}
	refs := make([]string, 0, len(mapped))
	for _, m := range mapped {
		refs = append(refs, m.lead.SourceRef)
	}

	if !rc.backfill && !rc.loaded && len(mapped) > 0 {
		// The deliveries not yet turned into leads, by natural key: a
		// record one of them carries was delivered, whatever its state.
		p, err := webhooks.PendingRefs(ctx, s.DB, run.TenantID, src.ID, func(b []byte) string {
			l, err := kind.Map(b)
			if err != nil {
				return ""
			}
			return l.SourceRef
		})
		if err != nil {
			return pageOutcome{}, err
		}
		rc.pending, rc.loaded = p, true
	}

	skip := map[int]bool{}
	for {
		var out pageOutcome
		var created []webhooks.Result
		deferred := 0
		next := *run
		err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
			out = pageOutcome{}
			created = created[:0]
			next = *run
			now := s.now()
			before, err := leads.SenderFieldsByRef(ctx, tx, run.TenantID, src.ID, refs)
			if err != nil {
				return err
			}
			deferred = 0
			for _, m := range mapped {
				if skip[m.index] {
					continue
				}
				_, known := before[m.lead.SourceRef]
				delivered := ""
				if !known && !rc.backfill {
					if c := m.lead.CreatedAt; c != nil && c.After(rc.settleCutoff) {
						deferred++ // its webhook may still be in flight: judge it later
						continue
					}
					delivered = rc.pending[m.lead.SourceRef]
					if delivered == "received" {
						out.known++ // queued or in a backlog: its delivery makes the lead
						continue
					}
				}
				res, err := s.Apply(ctx, tx, run.TenantID, src, m.raw, now)
				if err != nil {
					return &recordError{index: m.index, err: err}
				}
				if res.Outcome == leads.OutcomeErased {
					out.known++ // its lead was erased: known, and dropped
					continue
				}
				if c := res.Lead.CreatedAt; c != nil && c.After(out.newest) {
					out.newest = *c
				}
				var detail map[string]any
				if res.New {
					created = append(created, res)
					switch {
					case rc.backfill:
						out.backfill++
					case delivered != "":
						out.known++ // the webhook brought it; its processing failed
					default:
						out.new++
					}
					detail = map[string]any{"run_id": run.ID, "new": true}
				} else {
					out.known++
					if prev, ok := before[res.Lead.SourceRef]; ok {
						if changed := changedFields(prev, res.Lead); len(changed) > 0 {
							out.changed++
							detail = map[string]any{"run_id": run.ID, "new": false, "changed": changed}
						}
					}
				}
				if detail != nil {
					if err := leads.AddEvent(ctx, tx, run.TenantID, res.LeadID, leads.EventReconcile, "", src.Name, detail, now); err != nil {
						return err
					}
				}
			}
			next.Pages++
			next.Records += len(records)
			next.PageCursor = nextCursor
			if !out.newest.IsZero() && (next.Newest == nil || out.newest.After(*next.Newest)) {
				n := out.newest
				next.Newest = &n
			}
			next.Backfill += out.backfill
			next.New += out.new
			next.Known += out.known
			next.Changed += out.changed
			next.Errors += len(badErrs) // mapping failures and records the database refused
			if len(badErrs) > 0 {
				next.LastError = ptr(leads.Clip(badErrs[len(badErrs)-1], maxErrorLen))
			}
			next.HeartbeatAt = now
			return saveProgress(ctx, tx, &next)
		})
		var re *recordError
		if err != nil && errors.As(err, &re) && !db.Retryable(re.err) && !apperr.IsUnavailable(re.err) && ctx.Err() == nil {
			// One record the database refuses must not hold the whole
			// source back: drop it and commit the rest of the page.
			skip[re.index] = true
			badErrs = append(badErrs, fmt.Sprintf("page %d, record %d: %v", run.Pages+1, re.index+1, re.err))
			continue
		}
		if err != nil {
			return out, err
		}
		if s.Committed != nil {
			for _, res := range created {
				s.Committed(run.TenantID, res)
			}
		}
		*run = next
		rc.deferred += deferred
		return out, nil
	}
}

// changedFields lists the sender-owned fields the record changes. Empty
// values never blank a stored one (see leads.UpsertFromSender), so they are
// no change; values are compared as the columns store them.
func changedFields(prev leads.SenderFields, l kinds.Lead) []string {
	var out []string
	for _, f := range []struct {
		name      string
		old, next string
		width     int
	}{
		{"email", prev.Email, l.Email, 320},
		{"name", prev.Name, l.Name, 255},
		{"phone", prev.Phone, l.Phone, 64},
		{"company", prev.Company, l.Company, 255},
	} {
		if f.next != "" && leads.Clip(f.next, f.width) != f.old {
			out = append(out, f.name)
		}
	}
	return out
}

// redact blanks the access token wherever an error message might repeat it.
// Outbound errors already redact URLs; this covers anything else.
func redact(msg, token string) string {
	if len(token) < 4 {
		return msg
	}
	return strings.ReplaceAll(msg, token, "REDACTED")
}

func ptr[T any](v T) *T { return &v }
