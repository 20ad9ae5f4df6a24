package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/apperr"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
	"leadpipe/internal/monitor"
	"leadpipe/internal/sources"
	"leadpipe/internal/tracing"
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

	memory secretMemory // LinkedIn secrets for its validation GET (challenge.go)
}

// Call is one request to /hooks/{tenant}/{source} as the HTTP layer read
// it (internal/web/hooks.go answers it).
type Call struct {
	Tenant, Source string // the path's slugs
	Header         http.Header
	// Body is read here, up to MaxBody bytes: an unknown source costs no read.
	Body io.Reader
	// For the rejected-request inspector: the peer and the declared length.
	RemoteAddr    string
	ContentLength int64
	// What kinds that check more than headers need (kinds.Request): the
	// method, the public URI and the real client address.
	Method string
	// The public URI is BaseURL + RequestURI, joined only for the kinds
	// that read it.
	BaseURL, RequestURI string
	ClientAddr          netip.Addr
	// URLSecret is the last segment of a secret webhook URL
	// (/hooks/{tenant}/{source}/{url_secret}); "" for the plain URL.
	URLSecret string
}

// errNoEndpoint is the answer to an unknown source and to a wrong secret
// URL alike.
var errNoEndpoint = apperr.New(apperr.NotFound, "no such webhook endpoint")

// batchKind: one POST of the kind carries several deliveries, answered
// with one item each.
func batchKind(kind string) bool { return kind == kinds.Meta || kind == kinds.HubSpot }

// ItemResult is one record's answer in a batch (Meta's entries).
type ItemResult struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"`
}

// Ack statuses: the batch or delivery was stored now, or before.
const (
	AckAccepted  = "accepted"
	AckDuplicate = "duplicate"
)

// Ack is the answer to a stored webhook: one delivery id, or (Meta) one
// item per record.
type Ack struct {
	Status     string       `json:"status"`
	DeliveryID string       `json:"delivery_id,omitempty"`
	Items      []ItemResult `json:"items,omitempty"`
}

// Error messages a sender sees (the HTTP layer maps the codes).
var (
	errTooLarge   = apperr.New(apperr.TooLarge, "webhook body is larger than 1 MiB")
	errUnreadable = apperr.New(apperr.BadRequest, "could not read the request body")
	errHandshake  = apperr.New(apperr.Forbidden, "verification failed: hub.mode must be subscribe and hub.verify_token must match the source's verify token")
	// ErrNoHandshake: only Meta sources answer GET; the others take POST.
	ErrNoHandshake = apperr.New(apperr.MethodNotAllowed, "webhooks are delivered with POST")
)

func (in *Ingest) now() time.Time { return clock.Read(in.Now) }

// Receive verifies, stores and acknowledges one webhook: the answer is
// returned only once every delivery in it is committed (or known to be).
// Errors carry apperr codes: not_found (no such tenant or source),
// unauthorized (signature or timestamp), too_large, invalid (a body kept as
// a dead letter), internal.
func (in *Ingest) Receive(ctx context.Context, c Call) (Ack, error) {
	start := time.Now()
	kindName, result := "unknown", "error"
	defer func() { in.Stats.ObserveIngest(kindName, result, time.Since(start)) }()

	res, err := in.Sources.Resolve(ctx, c.Tenant, c.Source)
	if err != nil {
		result = "not_found"
		return Ack{}, err
	}
	src := res.Source
	kindName = src.Kind
	in.rememberSecrets(c.Tenant, c.Source, res)
	req := kinds.Request{Header: c.Header, Method: c.Method, ClientAddr: c.ClientAddr}
	if src.Kind == kinds.HubSpot || src.Kind == kinds.Token {
		req.URI = c.BaseURL + c.RequestURI
	}
	if c.URLSecret != "" {
		k, kerr := kinds.New(src.Kind, src.Config)
		if kerr != nil || !kinds.VerifyURLToken(k, req, c.URLSecret, res.Secrets) {
			result = "not_found"
			return Ack{}, errNoEndpoint
		}
	}
	body, err := io.ReadAll(io.LimitReader(c.Body, MaxBody+1))
	if len(body) > MaxBody {
		result = "too_large"
		in.recordRejection(c, res, kinds.ReasonTooLarge, nil, body[:MaxBody], in.now())
		return Ack{}, errTooLarge
	}
	if err != nil {
		var tl interface{ TooLarge() bool }
		if errors.As(err, &tl) && tl.TooLarge() {
			result = "too_large"
			in.recordRejection(c, res, kinds.ReasonTooLarge, nil, body, in.now())
			return Ack{}, errTooLarge
		}
		result = "read_error"
		return Ack{}, errUnreadable
	}
	k, err := kinds.New(src.Kind, src.Config)
	if err != nil {
		in.recordRejection(c, res, "", err, body, in.now())
		return Ack{}, err
	}
	now := in.now()
	traceRequest(ctx, res.TenantID, src)
	_, vspan := tracing.Start(ctx, "webhook.verify")
	if c.URLSecret == "" { // a secret URL already proved the sender
		err = kinds.VerifyRequest(k, req, body, res.Secrets, now)
	}
	tracing.End(vspan, err)
	if err != nil {
		result = "rejected"
		in.Stats.Add(res.TenantID, src.ID, monitor.Rejected, 1, now)
		in.recordRejection(c, res, "", err, body, now)
		return Ack{}, apperr.Wrap(apperr.Unauthorized, err, "%s", signatureDetail(err))
	}
	// A form body becomes the JSON object that is stored (its signature,
	// where there is one, was checked on the raw bytes above).
	if ct := c.Header.Get("Content-Type"); kinds.IsFormBody(ct) {
		obj, ferr := kinds.FormJSON(ct, body)
		if ferr != nil {
			result = "rejected"
			in.Stats.Add(res.TenantID, src.ID, monitor.Rejected, 1, now)
			in.recordRejection(c, res, "", ferr, body, now)
			return Ack{}, formError(ferr)
		}
		body = obj
	}
	// A duplicate this process has seen recently, recognised by a delivery
	// id in a header: it needs nothing from the body (the original was
	// checked and stored), so it is answered from memory or goes straight
	// to its count (ingest_fast.go).
	var records []kinds.Record
	if id := kinds.HeaderDeliveryID(k, c.Header); id != "" {
		orig, done := in.answerKnownDuplicate(ctx, res.TenantID, src.ID, id, now)
		if done {
			result = AckDuplicate
			return Ack{Status: AckDuplicate, DeliveryID: orig}, nil
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
		records, err = k.Parse(c.Header, body)
		if err == nil && len(records) == 1 && !batchKind(src.Kind) {
			if orig, done := in.answerKnownDuplicate(ctx, res.TenantID, src.ID, records[0].DeliveryID, now); done {
				result = AckDuplicate
				return Ack{Status: AckDuplicate, DeliveryID: orig}, nil
			}
		}
	}
	if err != nil {
		result = "dead_letter"
		if dlErr := in.deadLetter(ctx, res.TenantID, src, c.Header, body, err, now); dlErr != nil {
			return Ack{}, dlErr
		}
		in.Stats.Add(res.TenantID, src.ID, monitor.DeadLetters, 1, now)
		return Ack{}, apperr.Wrap(apperr.Invalid, err, "%s; the request was kept as a dead letter", err.Error())
	}

	items := make([]ItemResult, 0, len(records))
	var fresh []string
	cctx, cspan := tracing.Start(ctx, "webhook.claim")
	defer cspan.End()
	for _, rec := range records {
		d := Delivery{TenantID: res.TenantID, SourceID: src.ID, ID: ids.New(), DeliveryID: rec.DeliveryID,
			Origin: "webhook", Payload: rec.Raw, ReceivedAt: now}
		isNew, orig, err := in.Claimer.Claim(cctx, d)
		traceClaim(cspan, d, isNew, orig, err)
		if err != nil {
			return Ack{}, db.MapErr(err, "", "")
		}
		in.Stats.Add(res.TenantID, src.ID, monitor.Deliveries, 1, now)
		if isNew {
			items = append(items, ItemResult{DeliveryID: d.ID, Status: AckAccepted})
			fresh = append(fresh, d.ID)
			continue
		}
		in.Stats.Add(res.TenantID, src.ID, monitor.Duplicates, 1, now)
		items = append(items, ItemResult{DeliveryID: orig, Status: AckDuplicate})
	}
	// Committed: now enqueue (a dispatcher does it beside the answer, off
	// its path). A Redis outage must not fail the sender: the sweeper
	// enqueues whatever is left unprocessed.
	in.Dispatch.DispatchTraced(res.TenantID, fresh, tracing.Traceparent(cctx))
	ack := Ack{Status: AckDuplicate}
	if len(fresh) > 0 {
		ack.Status = AckAccepted
	}
	result = ack.Status
	if batchKind(src.Kind) {
		ack.Items = items
	} else {
		ack.DeliveryID = items[0].DeliveryID
	}
	return ack, nil
}

// formError maps a refused form body to its status: a file part is an
// unsupported media type, too many or too large fields too large, anything
// else a bad request.
func formError(err error) error {
	switch {
	case errors.Is(err, kinds.ErrFormFile):
		return apperr.Wrap(apperr.UnsupportedMediaType, err, "%s", err.Error())
	case errors.Is(err, kinds.ErrFormFields), errors.Is(err, kinds.ErrFormFieldSize):
		return apperr.Wrap(apperr.TooLarge, err, "%s", err.Error())
	}
	return apperr.Wrap(apperr.BadRequest, err, "%s", err.Error())
}

func signatureDetail(err error) string {
	msg := err.Error()
	if errors.Is(err, kinds.ErrSecretInQuery) || errors.Is(err, kinds.ErrAddressNotAllowed) {
		return msg
	}
	if !strings.Contains(msg, "signature") && !strings.Contains(msg, "timestamp") {
		return "invalid signature"
	}
	return msg
}

// HandshakeAnswer is the body of a GET handshake's 200.
type HandshakeAnswer struct {
	Body string
	JSON bool // LinkedIn's answer is JSON; Meta's is the bare challenge
}

var errNoChallengeCode = apperr.New(apperr.BadRequest, "challengeCode is missing: LinkedIn validates the URL with GET ?challengeCode=<uuid>")

// Handshake answers a sender's GET check: Meta's subscription check
// (hub.mode, hub.verify_token, hub.challenge: the challenge to echo, or
// forbidden) and LinkedIn's URL validation (?challengeCode=: the HMAC
// answer in JSON). Other kinds answer GET with ErrNoHandshake.
func (in *Ingest) Handshake(ctx context.Context, tenant, source string, query url.Values) (HandshakeAnswer, error) {
	start := time.Now()
	kindName, result := "unknown", "error"
	defer func() { in.Stats.ObserveIngest(kindName, result, time.Since(start)) }()
	// LinkedIn re-validates every 2 hours and blocks the URL after three
	// failures: a source this process has seen answers from memory, so the
	// answer holds while the database is down (docs/SENDERS.md).
	if secrets, ok := in.knownSecrets(ctx, tenant, source); ok {
		kindName, result = kinds.LinkedIn, "handshake"
		return linkedinAnswer(query, secrets)
	}
	res, err := in.Sources.Resolve(ctx, tenant, source)
	if err != nil {
		result = "not_found"
		return HandshakeAnswer{}, err
	}
	kindName = res.Source.Kind
	switch res.Source.Kind {
	case kinds.LinkedIn:
		in.rememberSecrets(tenant, source, res)
		result = "handshake"
		return linkedinAnswer(query, res.Secrets)
	case kinds.Meta:
	default:
		result = "method"
		return HandshakeAnswer{}, ErrNoHandshake
	}
	result = "handshake"
	token, err := in.Sources.VerifyToken(res.Source)
	if err != nil {
		return HandshakeAnswer{}, err
	}
	challenge, ok := kinds.MetaVerifyHandshake(query, token)
	if !ok {
		return HandshakeAnswer{}, errHandshake
	}
	return HandshakeAnswer{Body: challenge}, nil
}

func linkedinAnswer(query url.Values, secrets []string) (HandshakeAnswer, error) {
	b, ok := kinds.LinkedInChallenge(query.Get("challengeCode"), secrets)
	if !ok {
		return HandshakeAnswer{}, errNoChallengeCode
	}
	return HandshakeAnswer{Body: string(b), JSON: true}, nil
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
