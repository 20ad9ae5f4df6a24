package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/hibiken/asynq"

	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
	"leadpipe/internal/tracing"
	"leadpipe/internal/web"
	"leadpipe/internal/webhooks/kinds"

	"github.com/jmoiron/sqlx"
)

// MaxBody is the largest webhook body accepted (413 beyond).
const MaxBody = 1 << 20

// Enqueuer is the part of the Asynq client the ingest path uses.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Ingest is the webhook endpoint POST (and Meta's GET handshake)
// /hooks/{tenant}/{source}.
type Ingest struct {
	DB      *sqlx.DB
	Claimer *Claimer
	Sources *sources.Service
	// Dispatch enqueues each fresh delivery's task beside the response.
	Dispatch *Dispatcher
	Stats    monitor.Sink
	// Rejections keeps refused requests for inspection (nil: counted only).
	Rejections RejectionSink
	Log        *slog.Logger
	Now        func() time.Time
}

// Response bodies.
type itemResult struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"`
}

type ackBody struct {
	Status     string       `json:"status"`
	DeliveryID string       `json:"delivery_id,omitempty"`
	Items      []itemResult `json:"items,omitempty"`
}

func (in *Ingest) now() time.Time { return clock.Read(in.Now) }

// ServeHTTP implements the endpoint.
func (in *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	kindName, result := "unknown", "error"
	defer func() { in.Stats.ObserveIngest(kindName, result, time.Since(start)) }()

	res, err := in.Sources.Resolve(r.Context(), chi.URLParam(r, "tenant"), chi.URLParam(r, "source"))
	if err != nil {
		result = "not_found"
		web.WriteError(w, r, in.Log, err)
		return
	}
	src := res.Source
	kindName = src.Kind
	if r.Method == http.MethodGet && src.Kind == kinds.Meta {
		result = "handshake"
		in.handshake(w, r, src)
		return
	}
	if r.Method != http.MethodPost {
		result = "method"
		w.Header().Set("Allow", "POST")
		web.WriteProblem(w, r, http.StatusMethodNotAllowed, "webhooks are delivered with POST", nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			result = "too_large"
			in.recordRejection(r, res, kinds.ReasonTooLarge, nil, body, in.now())
			web.WriteProblem(w, r, http.StatusRequestEntityTooLarge, "webhook body is larger than 1 MiB", nil)
			return
		}
		result = "read_error"
		web.WriteProblem(w, r, http.StatusBadRequest, "could not read the request body", nil)
		return
	}
	k, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		in.recordRejection(r, res, "", err, body, in.now())
		web.WriteError(w, r, in.Log, err)
		return
	}
	now := in.now()
	traceRequest(r.Context(), res.TenantID, src)
	_, vspan := tracing.Start(r.Context(), "webhook.verify")
	err = k.Verify(r.Header, body, res.Secrets, now)
	endSpan(vspan, err)
	if err != nil {
		result = "rejected"
		in.Stats.Add(res.TenantID, src.ID, monitor.Rejected, 1, now)
		in.recordRejection(r, res, "", err, body, now)
		web.WriteProblem(w, r, http.StatusUnauthorized, signatureDetail(err), nil)
		return
	}
	// A duplicate this process has seen recently, recognised by a delivery
	// id in a header: it needs nothing from the body (the original was
	// checked and stored), so it is answered from memory or goes straight
	// to its count (ingest_fast.go).
	var records []kinds.Record
	if id := kinds.HeaderDeliveryID(k, r.Header); id != "" {
		orig, done := in.answerKnownDuplicate(w, r, res.TenantID, src.ID, id, now)
		if done {
			result = "duplicate"
			return
		}
		if orig != "" {
			records = []kinds.Record{{DeliveryID: id, Raw: body}}
		}
	}
	if records == nil {
		// Only what cannot be stored is a dead letter (unparseable, no
		// delivery id). A record the mapping cannot use (no natural key at
		// the configured path) is stored and fails in processing, where it
		// is listed, counted and can be reprocessed once the mapping is
		// fixed.
		records, err = k.Parse(r.Header, body)
		if err == nil && len(records) == 1 && src.Kind != kinds.Meta {
			if _, done := in.answerKnownDuplicate(w, r, res.TenantID, src.ID, records[0].DeliveryID, now); done {
				result = "duplicate"
				return
			}
		}
	}
	if err != nil {
		result = "dead_letter"
		if dlErr := in.deadLetter(r.Context(), res.TenantID, src, r.Header, body, err, now); dlErr != nil {
			web.WriteError(w, r, in.Log, dlErr)
			return
		}
		in.Stats.Add(res.TenantID, src.ID, monitor.DeadLetters, 1, now)
		web.WriteProblem(w, r, http.StatusUnprocessableEntity, err.Error()+"; the request was kept as a dead letter", nil)
		return
	}

	items := make([]itemResult, 0, len(records))
	var fresh []string
	cctx, cspan := tracing.Start(r.Context(), "webhook.claim")
	defer cspan.End()
	for _, rec := range records {
		d := Delivery{TenantID: res.TenantID, SourceID: src.ID, ID: ids.New(), DeliveryID: rec.DeliveryID,
			Origin: "webhook", Payload: rec.Raw, ReceivedAt: now}
		isNew, orig, err := in.Claimer.Claim(cctx, d)
		traceClaim(cspan, d, isNew, orig, err)
		if err != nil {
			web.WriteError(w, r, in.Log, db.MapErr(err, "", ""))
			return
		}
		in.Stats.Add(res.TenantID, src.ID, monitor.Deliveries, 1, now)
		if isNew {
			items = append(items, itemResult{DeliveryID: d.ID, Status: "accepted"})
			fresh = append(fresh, d.ID)
			continue
		}
		in.Stats.Add(res.TenantID, src.ID, monitor.Duplicates, 1, now)
		items = append(items, itemResult{DeliveryID: orig, Status: "duplicate"})
	}
	// Committed: now enqueue (a dispatcher does it beside the answer, off
	// its path). A Redis outage must not fail the sender: the sweeper
	// enqueues whatever is left unprocessed.
	in.Dispatch.DispatchTraced(res.TenantID, fresh, tracing.Traceparent(cctx))
	ack := ackBody{Status: "duplicate"}
	if len(fresh) > 0 {
		ack.Status = "accepted"
	}
	result = ack.Status
	if src.Kind == kinds.Meta {
		ack.Items = items
	} else {
		ack.DeliveryID = items[0].DeliveryID
	}
	web.WriteJSON(w, http.StatusOK, ack)
}

func signatureDetail(err error) string {
	msg := err.Error()
	if !strings.Contains(msg, "signature") && !strings.Contains(msg, "timestamp") {
		return "invalid signature"
	}
	return msg
}

func (in *Ingest) handshake(w http.ResponseWriter, r *http.Request, src sources.Source) {
	token, err := in.Sources.VerifyToken(src)
	if err != nil {
		web.WriteError(w, r, in.Log, err)
		return
	}
	challenge, ok := kinds.MetaVerifyHandshake(r.URL.Query(), token)
	if !ok {
		web.WriteProblem(w, r, http.StatusForbidden, "verification failed: hub.mode must be subscribe and hub.verify_token must match the source's verify token", nil)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, challenge)
}

func (in *Ingest) deadLetter(ctx context.Context, tenantID string, src sources.Source, h http.Header, body []byte, cause error, now time.Time) error {
	stripped, err := kinds.StripSecrets(src.Kind, body)
	if err != nil {
		stripped = body
	}
	keep := map[string]string{}
	for name, vals := range h {
		switch strings.ToLower(name) {
		case "authorization", "cookie", "proxy-authorization":
			continue
		}
		keep[name] = strings.Join(vals, ", ")
	}
	hj, _ := json.Marshal(keep)
	reason := leads.Clip(cause.Error(), 1000)
	err = insertDeadLetter(ctx, in.DB, DeadLetter{TenantID: tenantID, SourceID: src.ID, ID: ids.New(), Reason: reason,
		Headers: hj, Body: stripped, ReceivedAt: now})
	return db.MapErr(err, "", "")
}

// TypeProcessDelivery is the task that maps a stored delivery to a lead.
const TypeProcessDelivery = "delivery:process"

// ProcessPayload names the delivery to process.
type ProcessPayload struct {
	TenantID   string `json:"tenant_id"`
	DeliveryID string `json:"delivery_id"` // our row id
	// Runs is the delivery's attempts when the task was queued. The
	// task's final failure marks the delivery failed only while attempts
	// still says so: once a reprocess has reset a failed delivery (its
	// failure counted an attempt), a late failure of the old task (the
	// error handler, the archive settle) leaves it alone.
	Runs int `json:"runs,omitempty"`
}

// NewProcessTask builds the task of a delivery whose attempts are runs;
// its TaskID is the delivery row id, so the ingest path and the sweeper
// never queue one delivery twice.
func NewProcessTask(tenantID, deliveryRowID string, runs int) (*asynq.Task, []asynq.Option) {
	b, _ := json.Marshal(ProcessPayload{TenantID: tenantID, DeliveryID: deliveryRowID, Runs: runs})
	return asynq.NewTask(TypeProcessDelivery, b), []asynq.Option{
		asynq.TaskID(deliveryRowID), asynq.Queue(jobs.QueueCritical), asynq.MaxRetry(12), asynq.Timeout(time.Minute),
	}
}

// TypeProcessBatch is the task that maps a batch of one tenant's stored
// deliveries to leads (the dispatcher's; the sweeper, a reprocess and the
// tasks of older versions queue TypeProcessDelivery).
const TypeProcessBatch = "delivery:process-batch"

// BatchPayload names one tenant's deliveries to process.
type BatchPayload struct {
	TenantID string   `json:"tenant_id"`
	IDs      []string `json:"ids"` // our row ids
	// Runs is each delivery's attempts when the task was queued (see
	// ProcessPayload.Runs); nil means 0 for all.
	Runs []int `json:"runs,omitempty"`
	// Traces is each delivery's W3C traceparent (the request that claimed
	// it; internal/tracing), nil when none was traced.
	Traces []string `json:"traces,omitempty"`
}

// each returns the batch as one ProcessPayload per delivery.
func (b BatchPayload) each() []ProcessPayload {
	out := make([]ProcessPayload, len(b.IDs))
	for i, id := range b.IDs {
		out[i] = ProcessPayload{TenantID: b.TenantID, DeliveryID: id}
		if i < len(b.Runs) {
			out[i].Runs = b.Runs[i]
		}
	}
	return out
}

// NewBatchTask builds the task of a batch of one tenant's deliveries
// (runs: see BatchPayload.Runs). It has no TaskID: a delivery in two
// tasks is processed once (the rows are locked, one no longer `received`
// is skipped).
func NewBatchTask(tenantID string, ids []string, runs []int) (*asynq.Task, []asynq.Option) {
	return newBatchTask(BatchPayload{TenantID: tenantID, IDs: ids, Runs: runs})
}

func newBatchTask(p BatchPayload) (*asynq.Task, []asynq.Option) {
	b, _ := json.Marshal(p)
	return asynq.NewTask(TypeProcessBatch, b), []asynq.Option{
		asynq.Queue(jobs.QueueCritical), asynq.MaxRetry(12), asynq.Timeout(time.Minute),
	}
}
