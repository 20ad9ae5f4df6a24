package forms

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"leadpipe/internal/apperr"
	"leadpipe/internal/atrest"
	"leadpipe/internal/audit"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/monitor"
	"leadpipe/internal/outbound"
	"leadpipe/internal/rejections"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks"
)

// Receiver stores a checked submission through the webhook ingest's claim
// (webhooks.Ingest.ReceiveForm).
type Receiver interface {
	ReceiveForm(ctx context.Context, s webhooks.FormSubmission) (webhooks.Ack, error)
}

// RejectionSink keeps refused submissions for the rejected-request
// inspector (rejections.Recorder).
type RejectionSink interface {
	Offer(tenantID, sourceID string, q rejections.Request)
}

// Service manages forms and takes their submissions.
type Service struct {
	DB         *sqlx.DB
	Box        *atrest.Box
	Sources    *sources.Service
	Tenants    *tenants.Service
	In         Receiver
	Rejections RejectionSink // nil: counted only
	Stats      monitor.Sink
	BaseURL    string
	Log        *slog.Logger
	Now        func() time.Time

	captcha captchaVerifier
	limits  *sharedLimiter

	cacheMu sync.Mutex
	cache   map[string]cachedPage
	gen     uint64             // bumped by invalidate: a load begun before a change is not shared after it
	loads   singleflight.Group // one database load per form at a time
}

// Options are the service's settings besides its dependencies.
type Options struct {
	// Client makes the captcha checks (outbound.New with a short timeout
	// when nil). VerifyURLs overrides the providers' siteverify URLs
	// (tests point them at a fake provider).
	Client     *outbound.Client
	VerifyURLs map[string]string
	// Now is the clock (nil: the wall clock).
	Now func() time.Time
	// Redis keeps the rate limits' counts, shared by every server (nil:
	// each server counts its own). Close sends the last counts.
	Redis redis.UniversalClient
}

// NewService returns a service.
func NewService(d *sqlx.DB, box *atrest.Box, src *sources.Service, ten *tenants.Service, in Receiver, rej RejectionSink,
	stats monitor.Sink, baseURL string, log *slog.Logger, o Options) *Service {
	if o.Client == nil {
		o.Client = outbound.New(outbound.Options{ConnectTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, MaxAttempts: 1})
	}
	if stats == nil {
		stats = monitor.Discard{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{DB: d, Box: box, Sources: src, Tenants: ten, In: in, Rejections: rej, Stats: stats,
		BaseURL: strings.TrimRight(baseURL, "/"), Log: log, Now: o.Now, captcha: captchaVerifier{client: o.Client, urls: o.VerifyURLs},
		limits: &sharedLimiter{rdb: o.Redis, log: log}}
}

// Close stops the rate limits' flush loop and sends the submissions it
// counted since its last flush to Redis. Submissions after it are still
// limited, each with a round trip to Redis.
func (s *Service) Close(ctx context.Context) error { return s.limits.close(ctx) }

func (s *Service) now() time.Time { return clock.Read(s.Now).UTC().Truncate(time.Microsecond) }

func captchaAAD(tenantID, formID string) string { return tenantID + "/" + formID + "/captcha" }

// withURLs fills in the form's public URLs.
func (s *Service) withURLs(tenantSlug string, f Form) Form {
	if tenantSlug != "" {
		f.URL = s.BaseURL + "/f/" + tenantSlug + "/" + f.Slug
		f.EmbedURL = f.URL + "/embed.js"
	}
	return f
}

// Create stores a form and its source (kind form) in one transaction.
func (s *Service) Create(ctx context.Context, tenantID, tenantSlug string, in Input) (Form, error) {
	f := Form{TenantID: tenantID, ID: ids.New(), AllowedOrigins: []string{}}
	secret, problems := apply(&f, in, true)
	if len(problems) > 0 {
		return Form{}, apperr.InvalidFields(problems)
	}
	now := s.now()
	f.CreatedAt, f.UpdatedAt = now, now
	var enc []byte
	if secret != "" {
		enc = s.Box.Seal([]byte(secret), captchaAAD(tenantID, f.ID))
	}
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		// A form of this slug deleted earlier left its source (its
		// deliveries and leads): the new form takes it up again.
		src, err := s.Sources.FormSourceTx(ctx, tx, tenantID, f.Slug)
		switch {
		case apperr.Is(err, apperr.NotFound):
			src, err = s.Sources.CreateFormSourceTx(ctx, tx, tenantID, f.Slug, f.Name)
		case err == nil:
			err = s.Sources.RenameFormSourceTx(ctx, tx, tenantID, src.ID, f.Name)
		}
		if err != nil {
			if apperr.Is(err, apperr.Conflict) {
				return apperr.New(apperr.Conflict, "a source named %s already exists", sources.FormSourceSlug(f.Slug))
			}
			return err
		}
		f.SourceID = src.ID
		if err := insertForm(ctx, tx, f, enc); err != nil {
			return err
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "form.created", TargetType: "form", TargetID: f.ID,
			Detail: map[string]any{"slug": f.Slug, "name": f.Name}})
	})
	if err != nil {
		return Form{}, err
	}
	if f.Captcha != nil {
		f.Captcha.Secret, f.Captcha.HasSecret = "", true
	}
	s.invalidate()
	return s.withURLs(tenantSlug, f), nil
}

// Get returns one form.
func (s *Service) Get(ctx context.Context, tenantID, tenantSlug, id string) (Form, error) {
	if !ids.Valid(id) {
		return Form{}, errNotFound
	}
	r, err := getForm(ctx, s.DB, tenantID, id, false)
	if err != nil {
		return Form{}, err
	}
	return s.withURLs(tenantSlug, r.form()), nil
}

// List returns the tenant's forms by name.
func (s *Service) List(ctx context.Context, tenantID, tenantSlug string) ([]Form, error) {
	rs, err := listForms(ctx, s.DB, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]Form, len(rs))
	for i, r := range rs {
		out[i] = s.withURLs(tenantSlug, r.form())
	}
	return out, nil
}

// Patch changes a form (absent members are kept; the slug cannot change:
// pages and sites link to it).
func (s *Service) Patch(ctx context.Context, tenantID, tenantSlug, id string, in Input) (Form, error) {
	if !ids.Valid(id) {
		return Form{}, errNotFound
	}
	var f Form
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		r, err := getForm(ctx, tx, tenantID, id, true)
		if err != nil {
			return err
		}
		f = r.form()
		if in.Slug != nil && *in.Slug != f.Slug {
			return apperr.InvalidFields(map[string]string{"slug": "cannot change (pages and sites link to it)"})
		}
		oldName, oldProvider := f.Name, ""
		if f.Captcha != nil {
			oldProvider = f.Captcha.Provider
		}
		secret, problems := apply(&f, in, false)
		enc := r.SecretEnc
		switch {
		case f.Captcha == nil:
			enc = nil
		case secret != "":
			enc = s.Box.Seal([]byte(secret), captchaAAD(tenantID, f.ID))
		case len(enc) == 0 || oldProvider != f.Captcha.Provider:
			problems["captcha.secret"] = "is required"
		}
		if len(problems) > 0 {
			return apperr.InvalidFields(problems)
		}
		f.UpdatedAt = s.now()
		if err := updateForm(ctx, tx, f, enc); err != nil {
			return err
		}
		if f.Captcha != nil {
			f.Captcha.Secret, f.Captcha.HasSecret = "", len(enc) > 0
		}
		if f.Name != oldName {
			if err := s.Sources.RenameFormSourceTx(ctx, tx, tenantID, f.SourceID, f.Name); err != nil {
				return err
			}
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "form.updated", TargetType: "form", TargetID: f.ID,
			Detail: map[string]any{"slug": f.Slug}})
	})
	if err != nil {
		return Form{}, err
	}
	s.invalidate()
	return s.withURLs(tenantSlug, f), nil
}

// Delete removes a form: its page answers 404 from now on. Its source,
// deliveries and leads stay (the leads came from it).
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	if !ids.Valid(id) {
		return errNotFound
	}
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		ok, err := deleteForm(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if !ok {
			return errNotFound
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "form.deleted", TargetType: "form", TargetID: id})
	})
	s.invalidate()
	return err
}

// apply merges in into f (create: every member that is absent takes its
// default) and validates the result. It returns the captcha secret given
// (to be sealed) and the problems.
func apply(f *Form, in Input, create bool) (string, map[string]string) {
	p := map[string]string{}
	if in.Slug != nil {
		f.Slug = strings.TrimSpace(*in.Slug)
	}
	if in.Name != nil {
		f.Name = *in.Name
	}
	if in.Fields != nil {
		f.Fields = *in.Fields
	}
	mergeNullable(in.Consent, &f.Consent, p, "consent", "must be an object {text, required}")
	if in.Success != nil {
		f.Success = *in.Success
	}
	if in.AllowedOrigins != nil {
		f.AllowedOrigins = *in.AllowedOrigins
		if f.AllowedOrigins == nil {
			f.AllowedOrigins = []string{}
		}
	}
	secret := ""
	if c := mergeNullable(in.Captcha, &f.Captcha, p, "captcha", "must be an object {provider, site_key, secret}"); c != nil {
		secret = strings.TrimSpace(c.Secret)
		if len(secret) > 512 {
			p["captcha.secret"] = "at most 512 characters"
		}
		c.Secret, c.HasSecret = "", false
		if create && secret == "" {
			p["captcha.secret"] = "is required"
		}
	}
	if in.Limits != nil {
		f.Limits = *in.Limits
	}
	for k, v := range validate(f) {
		p[k] = v
	}
	return secret, p
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

// mergeNullable merges a member that may be absent (*dst stays), null
// (*dst is cleared) or an object (*dst is set to it, and returned). An
// object that does not decode leaves *dst and sets p[name] to want.
func mergeNullable[T any](raw json.RawMessage, dst **T, p map[string]string, name, want string) *T {
	if len(raw) == 0 {
		return nil
	}
	if isNull(raw) {
		*dst = nil
		return nil
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		p[name] = want
		return nil
	}
	*dst = v
	return v
}
