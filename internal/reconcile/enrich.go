package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/outbound"
	"leadpipe/internal/reconcile/pull"
	"leadpipe/internal/sources"
	"leadpipe/internal/webhooks"
	"leadpipe/internal/webhooks/kinds"
)

// TypeEnrich fetches the person of a lead whose webhook carried only its
// id: a Meta lead's field data (Graph, GET /{leadgen_id}) or a LinkedIn
// lead form response (GET /leadFormResponses/{id}). The name predates
// LinkedIn and stays, so tasks already queued keep their handler.
const TypeEnrich = "meta:enrich"

// leadgenIDPattern is what Graph and LinkedIn issue (and what
// pull.FetchMetaLead and pull.FetchLinkedInLead accept); anything else can
// never be fetched, so it is not retried.
var leadgenIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// enrichPayload is TypeEnrich's payload. LeadgenID is the sender's id of
// the lead (the lead's source_ref): Meta's leadgen id, LinkedIn's lead
// form response id.
type enrichPayload struct {
	TenantID  string `json:"tenant_id"`
	SourceID  string `json:"source_id"`
	LeadID    string `json:"lead_id"`
	LeadgenID string `json:"leadgen_id"`
}

// enrichKinds are the kinds whose webhooks name a lead without its person.
var enrichKinds = map[string]bool{kinds.Meta: true, kinds.LinkedIn: true}

// CanEnrich reports whether a source's webhook leads can be enriched: a
// meta or linkedin source with an API base URL and an access token.
func CanEnrich(src sources.Source) bool {
	return enrichKinds[src.Kind] && src.ReconcileEnabled() && len(src.ReconcileTokenEnc) > 0
}

// fetchLead asks the source's sender for one lead by its id.
func (s *Service) fetchLead(ctx context.Context, kind string, ps sources.PullSettings, id string) (json.RawMessage, error) {
	if kind == kinds.LinkedIn {
		return pull.FetchLinkedInLead(ctx, s.Client, ps.BaseURL, ps.AccessToken, id)
	}
	return pull.FetchMetaLead(ctx, s.Client, ps.BaseURL, ps.AccessToken, id)
}

// AfterWebhookUpsert is the webhooks.Enricher of the processor: a meta or
// linkedin webhook lead gets an enrichment task. The lead exists already
// (created from its id when the webhook was processed); enrichment only
// fills in the sender-owned fields. Enqueue failures are logged: the lead
// still gets its fields from the next scheduled reconcile.
func (s *Service) AfterWebhookUpsert(ctx context.Context, tenantID string, src sources.Source, leadID string, lead kinds.Lead) {
	if !CanEnrich(src) || lead.SourceRef == "" {
		return
	}
	b, _ := json.Marshal(enrichPayload{TenantID: tenantID, SourceID: src.ID, LeadID: leadID, LeadgenID: lead.SourceRef})
	t := asynq.NewTask(TypeEnrich, b)
	_, err := s.Queue.EnqueueContext(ctx, t, asynq.TaskID("enrich:"+leadID), asynq.Queue(jobs.QueueDefault),
		asynq.MaxRetry(8), asynq.Timeout(s.enrichTimeout()+30*time.Second))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		s.log().WarnContext(ctx, "enqueue enrichment failed; the next reconcile fills the lead in",
			"tenant_id", tenantID, "lead_id", leadID, "err", err)
	}
}

// Enrich fetches a lead from its sender's API (Meta's Graph, LinkedIn's
// lead form responses) and applies it through the webhook upsert path,
// filling email, name, phone and company. Errors wrapping asynq.SkipRetry
// are permanent (no such lead, bad token, refused address); others are
// worth retrying.
func (s *Service) Enrich(ctx context.Context, tenantID, sourceID, leadgenID string) (webhooks.Result, error) {
	if !leadgenIDPattern.MatchString(leadgenID) {
		return webhooks.Result{}, fmt.Errorf("malformed lead id %q: %w", leadgenID, asynq.SkipRetry)
	}
	src, err := s.Sources.Get(ctx, tenantID, sourceID)
	if apperr.Is(err, apperr.NotFound) {
		return webhooks.Result{}, fmt.Errorf("source gone: %w", asynq.SkipRetry)
	}
	if err != nil {
		return webhooks.Result{}, err
	}
	if !CanEnrich(src) {
		return webhooks.Result{}, fmt.Errorf("source %s has no API access any more: %w", src.ID, asynq.SkipRetry)
	}
	ps, err := s.Sources.Pull(src)
	if err != nil {
		return webhooks.Result{}, fmt.Errorf("decrypt access token: %v: %w", err, asynq.SkipRetry)
	}
	fctx, cancel := context.WithTimeout(ctx, s.enrichTimeout())
	defer cancel()
	raw, err := s.fetchLead(fctx, src.Kind, ps, leadgenID)
	if err != nil {
		msg := redact(err.Error(), ps.AccessToken)
		if permanentFetchError(err) {
			return webhooks.Result{}, fmt.Errorf("%s: %w", msg, asynq.SkipRetry)
		}
		return webhooks.Result{}, errors.New(msg)
	}
	kind, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		return webhooks.Result{}, fmt.Errorf("%v: %w", err, asynq.SkipRetry)
	}
	l, err := kind.Map(raw)
	if err != nil {
		return webhooks.Result{}, fmt.Errorf("%s lead %s: %v: %w", src.Kind, leadgenID, err, asynq.SkipRetry)
	}
	if l.SourceRef != kinds.NormalizeID(leadgenID) {
		// Applying it would write some other lead.
		return webhooks.Result{}, fmt.Errorf("%s answered lead %q for %q: %w", src.Kind, l.SourceRef, leadgenID, asynq.SkipRetry)
	}
	var res webhooks.Result
	err = db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		var err error
		res, err = s.Apply(ctx, tx, tenantID, src, raw, s.now())
		return err
	})
	return res, err
}

// permanentFetchError: retrying cannot help a refused address, a malformed
// id or a 4xx other than 408/429 (Graph answers 400 for unknown leads and
// bad tokens, LinkedIn 404 and 401).
func permanentFetchError(err error) bool {
	if errors.Is(err, outbound.ErrForbiddenTarget) {
		return true
	}
	var se *outbound.StatusError
	if errors.As(err, &se) {
		return se.Status >= 400 && se.Status < 500 && se.Status != http.StatusRequestTimeout && se.Status != http.StatusTooManyRequests
	}
	var syn *json.SyntaxError
	return errors.As(err, &syn)
}

// HandleEnrich is TypeEnrich's handler.
func (s *Service) HandleEnrich(ctx context.Context, t *asynq.Task) error {
	var p enrichPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || !ids.Valid(p.TenantID) || !ids.Valid(p.SourceID) || p.LeadgenID == "" {
		return fmt.Errorf("%s: undecodable payload %q: %w", TypeEnrich, t.Payload(), asynq.SkipRetry)
	}
	_, err := s.Enrich(ctx, p.TenantID, p.SourceID, p.LeadgenID)
	if err != nil {
		return fmt.Errorf("%s lead %s: %w", TypeEnrich, p.LeadID, err)
	}
	return nil
}
