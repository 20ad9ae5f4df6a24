package sources

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/atrest"
	"leadpipe/internal/audit"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/reconcile/pull"
	"leadpipe/internal/tenants"
)

// Service manages sources. The kind-specific hooks are injected so this
// package does not depend on the webhook kinds or the outbound client.
type Service struct {
	DB      *sqlx.DB
	Box     *atrest.Box
	BaseURL string // LEADPIPE_BASE_URL
	clock   func() time.Time

	Checks

	// A short-lived cache of resolved sources for the ingest hot path.
	cacheMu  sync.Mutex
	cache    map[string]cachedResolved
	CacheTTL time.Duration
}

type cachedResolved struct {
	r   Resolved
	err error
	at  time.Time
}

// Checks are the kind-specific rules a source is saved under, given by the
// wiring (the webhook kinds, the outbound client's SSRF guard).
type Checks struct {
	// ValidateConfig returns field problems of a kind's config (generic).
	ValidateConfig func(kind string, config json.RawMessage) map[string]string
	// GenerateSecret makes a fresh secret in the kind's format.
	GenerateSecret func(kind string) string
	// ValidateSecret checks a user-supplied secret's format for the kind.
	ValidateSecret func(kind, secret string) error
	// CheckURL validates a reconcile base URL (SSRF guard); nil: syntax only.
	CheckURL func(raw string) error
}

// NewService returns a service.
// The time is read from now (nil: the wall clock).
func NewService(d *sqlx.DB, box *atrest.Box, baseURL string, checks Checks, now func() time.Time) *Service {
	return &Service{DB: d, Box: box, BaseURL: strings.TrimRight(baseURL, "/"), Checks: checks,
		clock: now, CacheTTL: 2 * time.Second}
}

func (s *Service) now() time.Time { return clock.Read(s.clock) }

func aad(tenantID, sourceID, purpose string) string { return tenantID + "/" + sourceID + "/" + purpose }

// WebhookURL is the URL senders post to.
func (s *Service) WebhookURL(tenantSlug, sourceSlug string) string {
	return s.BaseURL + "/hooks/" + tenantSlug + "/" + sourceSlug
}

// View renders a source for the API.
func (s *Service) View(tenantSlug string, src Source) View {
	v := View{ID: src.ID, Slug: src.Slug, Name: src.Name, Kind: src.Kind, Config: src.Config,
		WebhookURL: s.WebhookURL(tenantSlug, src.Slug), HasVerifyToken: len(src.VerifyTokenEnc) > 0,
		CreatedAt: src.CreatedAt, UpdatedAt: src.UpdatedAt}
	if src.ReconcileBaseURL != nil {
		v.Reconcile = &ReconcileView{BaseURL: *src.ReconcileBaseURL, FormID: deref(src.ReconcileFormID),
			ListPath: deref(src.ReconcileListPath), IntervalSeconds: src.ReconcileIntervalS,
			LookbackSeconds: src.ReconcileLookbackS, HasAccessToken: len(src.ReconcileTokenEnc) > 0,
			Cursor: src.ReconcileCursor}
	}
	return v
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Create adds a source and returns it with its (generated or given) secret.
func (s *Service) Create(ctx context.Context, tenantID string, in CreateInput) (Source, string, error) {
	return s.CreateOnce(ctx, tenantID, in, idempotency.Once[Source]{})
}

// CreateOnce is Create under a claimed idempotency key (a form's
// per-render key): the key completes in the transaction that inserts the
// source and its secret.
func (s *Service) CreateOnce(ctx context.Context, tenantID string, in CreateInput, once idempotency.Once[Source]) (Source, string, error) {
	in.Slug = strings.TrimSpace(in.Slug)
	in.Name = strings.TrimSpace(in.Name)
	f := map[string]string{}
	if !slugRE(in.Slug) {
		f["slug"] = "must match ^[a-z0-9][a-z0-9-]{1,62}$"
	}
	if in.Name == "" || len(in.Name) > 200 {
		f["name"] = "is required (at most 200 characters)"
	}
	if !slices.Contains(Kinds, in.Kind) {
		f["kind"] = "must be one of " + strings.Join(Kinds, ", ")
	}
	if len(in.Secret) > 512 {
		f["secret"] = "at most 512 characters"
	} else if in.Secret != "" && s.ValidateSecret != nil {
		if err := s.ValidateSecret(in.Kind, in.Secret); err != nil {
			f["secret"] = err.Error()
		}
	}
	if in.Kind != "meta" && in.VerifyToken != "" {
		f["verify_token"] = "only meta sources use a verify token"
	}
	if len(in.VerifyToken) > 256 {
		f["verify_token"] = "at most 256 characters"
	}
	cfg, cf := s.checkConfig(in.Kind, in.Config)
	for k, v := range cf {
		f[k] = v
	}
	now := s.now()
	src := Source{TenantID: tenantID, ID: ids.New(), Slug: in.Slug, Name: in.Name, Kind: in.Kind, Config: cfg,
		ReconcileIntervalS: 900, ReconcileLookbackS: 3600, CreatedAt: now, UpdatedAt: now}
	if in.VerifyToken != "" {
		src.VerifyTokenEnc = s.Box.Seal([]byte(in.VerifyToken), aad(tenantID, src.ID, "verify"))
	}
	if in.Reconcile != nil {
		for k, v := range s.applyReconcile(&src, in.Reconcile) {
			f[k] = v
		}
	}
	if len(f) > 0 {
		return Source{}, "", apperr.InvalidFields(f)
	}
	secret := in.Secret
	if secret == "" {
		secret = s.generateSecret(in.Kind)
	}
	src, err := idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Source, error) {
		// The audit row first: when the insert fails (a taken slug), the
		// transaction takes the row with it.
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "source.created", TargetType: "source", TargetID: src.ID,
			Detail: map[string]any{"slug": src.Slug, "name": src.Name, "kind": src.Kind}}); err != nil {
			return src, err
		}
		if err := insertSource(ctx, tx, src); err != nil {
			return src, err
		}
		return src, insertSecret(ctx, tx, tenantID, src.ID, ids.New(), s.Box.Seal([]byte(secret), aad(tenantID, src.ID, "secret")), now)
	})
	if err != nil {
		return Source{}, "", err
	}
	return src, secret, nil
}

func slugRE(s string) bool {
	if len(s) < 2 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (c == '-' && i > 0)
		if !ok {
			return false
		}
	}
	return true
}

func (s *Service) generateSecret(kind string) string {
	if s.GenerateSecret != nil {
		return s.GenerateSecret(kind)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Service) checkConfig(kind string, cfg json.RawMessage) (json.RawMessage, map[string]string) {
	f := map[string]string{}
	if len(cfg) == 0 || string(cfg) == "null" {
		if kind == "generic" && s.ValidateConfig != nil {
			return nil, s.ValidateConfig(kind, json.RawMessage(`{}`))
		}
		return nil, f
	}
	if kind != "generic" && kind != "token" {
		f["config"] = "only generic and token sources take a config"
		return nil, f
	}
	var obj map[string]any
	if err := json.Unmarshal(cfg, &obj); err != nil {
		f["config"] = "must be a JSON object"
		return nil, f
	}
	if s.ValidateConfig != nil {
		for k, v := range s.ValidateConfig(kind, cfg) {
			f[k] = v
		}
	}
	compact, _ := json.Marshal(obj)
	return compact, f
}

func (s *Service) applyReconcile(src *Source, in *ReconcileInput) map[string]string {
	f := map[string]string{}
	if !ReconcileKinds[src.Kind] {
		f["reconcile"] = "reconcile is available for typeform, meta, linkedin and generic sources"
		return f
	}
	if in.BaseURL != nil {
		u := strings.TrimRight(strings.TrimSpace(*in.BaseURL), "/")
		if u == "" {
			src.ReconcileBaseURL = nil
		} else {
			pu, err := url.Parse(u)
			switch {
			case err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "":
				f["reconcile.base_url"] = "must be an absolute http(s) URL"
			case s.CheckURL != nil:
				if err := s.CheckURL(u); err != nil {
					f["reconcile.base_url"] = err.Error()
				}
			}
			src.ReconcileBaseURL = &u
		}
	}
	if in.AccessToken != nil {
		if len(*in.AccessToken) > 2048 {
			f["reconcile.access_token"] = "at most 2048 characters"
		} else if *in.AccessToken == "" {
			src.ReconcileTokenEnc = nil
		} else {
			src.ReconcileTokenEnc = s.Box.Seal([]byte(*in.AccessToken), aad(src.TenantID, src.ID, "access_token"))
		}
	}
	if in.FormID != nil {
		v := strings.TrimSpace(*in.FormID)
		if len(v) > 255 || strings.ContainsAny(v, "/?#") {
			f["reconcile.form_id"] = "must be an id without / ? #"
		}
		src.ReconcileFormID = &v
	}
	if in.ListPath != nil {
		v := strings.TrimSpace(*in.ListPath)
		if v != "" && !strings.HasPrefix(v, "/") || len(v) > 1024 {
			f["reconcile.list_path"] = "must start with /"
		}
		src.ReconcileListPath = &v
	}
	if in.IntervalSeconds != nil {
		if *in.IntervalSeconds < 60 || *in.IntervalSeconds > 7*86400 {
			f["reconcile.interval_seconds"] = "must be between 60 and 604800"
		}
		src.ReconcileIntervalS = *in.IntervalSeconds
	}
	if in.LookbackSeconds != nil {
		if *in.LookbackSeconds < 0 || *in.LookbackSeconds > 30*86400 {
			f["reconcile.lookback_seconds"] = "must be between 0 and 2592000"
		}
		src.ReconcileLookbackS = *in.LookbackSeconds
	}
	if src.ReconcileBaseURL != nil {
		if (src.Kind == "typeform" || src.Kind == "meta" || src.Kind == "linkedin") && deref(src.ReconcileFormID) == "" {
			f["reconcile.form_id"] = "is required for " + src.Kind
		} else if src.Kind == "linkedin" && pull.ValidateLinkedInForms(deref(src.ReconcileFormID)) != nil {
			f["reconcile.form_id"] = "must be LinkedIn lead form ids separated by commas, each optionally as EVENT:<id> (or COMPANY, ORGANIZATION_PRODUCT, SPONSORED)"
		}
		if src.Kind == "generic" && deref(src.ReconcileListPath) == "" {
			f["reconcile.list_path"] = "is required for generic"
		}
	}
	return f
}

// Get returns one of the tenant's sources.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Source, error) {
	if !ids.Valid(id) {
		return Source{}, apperr.New(apperr.NotFound, "source not found")
	}
	return getSource(ctx, s.DB, tenantID, id)
}

// List returns the tenant's sources.
func (s *Service) List(ctx context.Context, tenantID string) ([]Source, error) {
	return listSources(ctx, s.DB, tenantID)
}

// Patch changes name, config, verify token and reconcile settings.
func (s *Service) Patch(ctx context.Context, tenantID, id string, in PatchInput) (Source, error) {
	var out Source
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		src, err := getSource(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		before := src
		f := map[string]string{}
		if in.Name != nil {
			n := strings.TrimSpace(*in.Name)
			if n == "" || len(n) > 200 {
				f["name"] = "is required (at most 200 characters)"
			}
			src.Name = n
		}
		if in.Config != nil {
			cfg, cf := s.checkConfig(src.Kind, in.Config)
			for k, v := range cf {
				f[k] = v
			}
			src.Config = cfg
		}
		if in.VerifyToken != nil {
			if src.Kind != "meta" {
				f["verify_token"] = "only meta sources use a verify token"
			} else if *in.VerifyToken == "" {
				src.VerifyTokenEnc = nil
			} else {
				src.VerifyTokenEnc = s.Box.Seal([]byte(*in.VerifyToken), aad(tenantID, src.ID, "verify"))
			}
		}
		if in.Reconcile != nil {
			for k, v := range s.applyReconcile(&src, in.Reconcile) {
				f[k] = v
			}
		}
		if len(f) > 0 {
			return apperr.InvalidFields(f)
		}
		src.UpdatedAt = s.now()
		out = src
		if err := updateSource(ctx, tx, src); err != nil {
			return err
		}
		if changed := changedFields(before, src); len(changed) > 0 {
			detail := map[string]any{"changed": changed}
			if src.Name != before.Name {
				detail["name"] = src.Name
			}
			return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "source.changed", TargetType: "source", TargetID: id, Detail: detail})
		}
		return nil
	})
	s.invalidate()
	return out, err
}

// Rotate installs a new secret; the old ones stay valid for the grace
// period (0 revokes them at once). Returns the new secret.
func (s *Service) Rotate(ctx context.Context, tenantID, id string, in RotateInput) (Source, string, error) {
	grace := 86400
	if in.GraceSeconds != nil {
		grace = *in.GraceSeconds
	}
	f := map[string]string{}
	if grace < 0 || grace > 30*86400 {
		f["grace_seconds"] = "must be between 0 and 2592000"
	}
	if len(in.Secret) > 512 {
		f["secret"] = "at most 512 characters"
	}
	if len(f) > 0 {
		return Source{}, "", apperr.InvalidFields(f)
	}
	var src Source
	secret := in.Secret
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		var err error
		if src, err = getSource(ctx, tx, tenantID, id); err != nil {
			return err
		}
		if secret == "" {
			secret = s.generateSecret(src.Kind)
		} else if s.ValidateSecret != nil {
			if err := s.ValidateSecret(src.Kind, secret); err != nil {
				return apperr.InvalidFields(map[string]string{"secret": err.Error()})
			}
		}
		now := s.now()
		if err := expireCurrent(ctx, tx, tenantID, id, now.Add(time.Duration(grace)*time.Second)); err != nil {
			return err
		}
		if err := purgeSecrets(ctx, tx, tenantID, id, now.Add(-7*24*time.Hour)); err != nil {
			return err
		}
		// A distinct created_at keeps "newest first" ordering strict.
		if err := insertSecret(ctx, tx, tenantID, id, ids.New(), s.Box.Seal([]byte(secret), aad(tenantID, id, "secret")), now.Add(time.Microsecond)); err != nil {
			return err
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "source.secret_rotated", TargetType: "source", TargetID: id,
			Detail: map[string]any{"slug": src.Slug, "grace_seconds": grace, "secret_given": in.Secret != ""}})
	})
	s.invalidate()
	return src, secret, err
}

// Secrets returns the live secrets (current first, then in grace) at now.
func (s *Service) Secrets(ctx context.Context, tenantID, sourceID string) ([]string, error) {
	rows, err := liveSecrets(ctx, s.DB, tenantID, sourceID, s.now())
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		pt, err := s.Box.Open(r.SecretEnc, aad(tenantID, sourceID, "secret"))
		if err != nil {
			return nil, err
		}
		out = append(out, string(pt))
	}
	return out, nil
}

// VerifyToken returns the meta handshake token ("" when unset).
func (s *Service) VerifyToken(src Source) (string, error) {
	if len(src.VerifyTokenEnc) == 0 {
		return "", nil
	}
	pt, err := s.Box.Open(src.VerifyTokenEnc, aad(src.TenantID, src.ID, "verify"))
	return string(pt), err
}

// Pull returns the source's decrypted reconcile settings.
func (s *Service) Pull(src Source) (PullSettings, error) {
	p := PullSettings{Kind: src.Kind, BaseURL: deref(src.ReconcileBaseURL), FormID: deref(src.ReconcileFormID),
		ListPath: deref(src.ReconcileListPath), Interval: time.Duration(src.ReconcileIntervalS) * time.Second,
		Lookback: time.Duration(src.ReconcileLookbackS) * time.Second, Cursor: src.ReconcileCursor}
	if len(src.ReconcileTokenEnc) > 0 {
		pt, err := s.Box.Open(src.ReconcileTokenEnc, aad(src.TenantID, src.ID, "access_token"))
		if err != nil {
			return p, err
		}
		p.AccessToken = string(pt)
	}
	return p, nil
}

// SetCursor stores the reconcile cursor of a source.
func (s *Service) SetCursor(ctx context.Context, tenantID, id string, cursor time.Time) error {
	_, err := s.DB.ExecContext(ctx, `UPDATE sources SET reconcile_cursor = ? WHERE tenant_id = ? AND id = ?`, cursor, tenantID, id)
	return err
}

// Resolve finds a source by tenant and source slug, with its live secrets,
// for the ingest path. Unknown tenant and unknown source are the same
// NotFound. Results are cached for CacheTTL.
func (s *Service) Resolve(ctx context.Context, tenantSlug, sourceSlug string) (Resolved, error) {
	if !slugRE(tenantSlug) || !slugRE(sourceSlug) {
		return Resolved{}, apperr.New(apperr.NotFound, "no such webhook endpoint")
	}
	key := tenantSlug + "/" + sourceSlug
	now := time.Now()
	if s.CacheTTL > 0 {
		s.cacheMu.Lock()
		c, ok := s.cache[key]
		s.cacheMu.Unlock()
		if ok && now.Sub(c.at) < s.CacheTTL {
			return c.r, c.err
		}
	}
	r, err := s.resolve(ctx, tenantSlug, sourceSlug)
	if err != nil && apperr.Is(err, apperr.NotFound) {
		err = apperr.New(apperr.NotFound, "no such webhook endpoint")
	} else if err != nil {
		return r, err // do not cache outages
	}
	if s.CacheTTL > 0 {
		s.cacheMu.Lock()
		if s.cache == nil || len(s.cache) > 10000 {
			s.cache = map[string]cachedResolved{}
		}
		s.cache[key] = cachedResolved{r: r, err: err, at: now}
		s.cacheMu.Unlock()
	}
	return r, err
}

func (s *Service) resolve(ctx context.Context, tenantSlug, sourceSlug string) (Resolved, error) {
	tenantID, err := tenants.IDBySlug(ctx, s.DB, tenantSlug, "no such webhook endpoint")
	if err != nil {
		return Resolved{}, err
	}
	src, err := getSourceBySlug(ctx, s.DB, tenantID, sourceSlug)
	if err != nil {
		return Resolved{}, err
	}
	if src.Kind == KindImport { // takes no webhooks: answered as an unknown source
		return Resolved{}, apperr.New(apperr.NotFound, "source not found")
	}
	secrets, err := s.Secrets(ctx, tenantID, src.ID)
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{TenantID: tenantID, Source: src, Secrets: secrets}, nil
}

func (s *Service) invalidate() {
	s.cacheMu.Lock()
	s.cache = nil
	s.cacheMu.Unlock()
}

// changedFields names what a patch changed, for the audit log: names only,
// never a value (a verify token or an access token is a secret; a config
// or a base URL may carry one).
func changedFields(a, b Source) []string {
	var out []string
	add := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	add("name", a.Name != b.Name)
	add("config", string(a.Config) != string(b.Config))
	add("verify_token", !bytes.Equal(a.VerifyTokenEnc, b.VerifyTokenEnc))
	add("reconcile.base_url", deref(a.ReconcileBaseURL) != deref(b.ReconcileBaseURL))
	add("reconcile.access_token", !bytes.Equal(a.ReconcileTokenEnc, b.ReconcileTokenEnc))
	add("reconcile.form_id", deref(a.ReconcileFormID) != deref(b.ReconcileFormID))
	add("reconcile.list_path", deref(a.ReconcileListPath) != deref(b.ReconcileListPath))
	add("reconcile.interval_seconds", a.ReconcileIntervalS != b.ReconcileIntervalS)
	add("reconcile.lookback_seconds", a.ReconcileLookbackS != b.ReconcileLookbackS)
	return out
}

// KindImport is the kind of a tenant's CSV import source (internal/imports):
// imported rows are its records, keyed by the import's natural-key column.
// It takes no webhooks (no kind verifies it) and is made by ImportSource,
// never through the sources API.
const KindImport = "import"

// ImportSource returns the tenant's import source, creating it on first
// use (slug "import", or "import-<id>" when a webhook source already took
// that slug). Concurrent first uses agree on one source: the loser of the
// slug race reads the winner's.
func (s *Service) ImportSource(ctx context.Context, tenantID string) (Source, error) {
	for attempt := 0; attempt < 3; attempt++ {
		src, err := importSource(ctx, s.DB, tenantID)
		if err == nil || !apperr.Is(err, apperr.NotFound) {
			return src, err
		}
		now := s.now()
		src = Source{TenantID: tenantID, ID: ids.New(), Slug: KindImport, Name: "CSV import", Kind: KindImport,
			ReconcileIntervalS: 900, ReconcileLookbackS: 3600, CreatedAt: now, UpdatedAt: now}
		if taken, err := getSourceBySlug(ctx, s.DB, tenantID, KindImport); err == nil && taken.Kind != KindImport {
			src.Slug = "import-" + strings.ToLower(src.ID[len(src.ID)-8:])
		}
		err = insertSource(ctx, s.DB, src)
		if err == nil {
			s.invalidate()
			return src, nil
		}
		if !apperr.Is(err, apperr.Conflict) {
			return Source{}, err
		}
	}
	return Source{}, apperr.New(apperr.Unavailable, "the import source could not be created; try again")
}
