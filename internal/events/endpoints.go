package events

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
)

// Endpoint is a tenant's subscription, as the API shows it.
type Endpoint struct {
	TenantID       string     `db:"tenant_id" json:"-"`
	ID             string     `db:"id" json:"id"`
	URL            string     `db:"url" json:"url"`
	Description    string     `db:"description" json:"description"`
	Events         []string   `db:"-" json:"events"`
	EventsJSON     string     `db:"events" json:"-"`
	Enabled        bool       `db:"enabled" json:"enabled"`
	DisabledReason *string    `db:"disabled_reason" json:"disabled_reason"`
	DisabledAt     *time.Time `db:"disabled_at" json:"disabled_at"`
	FailingSince   *time.Time `db:"failing_since" json:"failing_since"`
	LastSuccessAt  *time.Time `db:"last_success_at" json:"last_success_at"`
	LastFailureAt  *time.Time `db:"last_failure_at" json:"last_failure_at"`
	LastError      *string    `db:"last_error" json:"last_error"`
	CreatedAt      time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at" json:"updated_at"`
	// Secret is set only in the answers to create and rotate.
	Secret string `db:"-" json:"secret,omitempty"`
	// SecretExpiresAt is when the previous secret stops signing (rotate).
	PreviousSecretExpiresAt *time.Time `db:"-" json:"previous_secret_expires_at,omitempty"`
}

// Subscribes reports whether the endpoint wants events of type t.
func (e Endpoint) Subscribes(t string) bool { return slices.Contains(e.Events, t) }

// CreateInput is POST /api/v1/endpoints.
type CreateInput struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Enabled     *bool    `json:"enabled"`
	Secret      string   `json:"secret"`
}

// PatchInput is PATCH /api/v1/endpoints/{id}; absent fields are unchanged.
type PatchInput struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// RotateInput is POST /api/v1/endpoints/{id}/rotate-secret.
type RotateInput struct {
	Secret       string `json:"secret"`
	GraceSeconds *int   `json:"grace_seconds"`
}

const secretPrefix = "whsec_"

// GenerateSecret returns a fresh whsec_ secret (32 random bytes).
func GenerateSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return secretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// secretKey decodes a whsec_ secret into its HMAC key.
func secretKey(secret string) ([]byte, error) {
	if !strings.HasPrefix(secret, secretPrefix) {
		return nil, fmt.Errorf("must start with %s", secretPrefix)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return nil, fmt.Errorf("must be %s followed by standard base64", secretPrefix)
	}
	if len(k) < 24 || len(k) > 64 {
		return nil, fmt.Errorf("the key must be 24 to 64 bytes (got %d)", len(k))
	}
	return k, nil
}

func aad(tenantID, endpointID string) string { return tenantID + "/" + endpointID + "/endpoint-secret" }

func (s *Service) checkURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "is required"
	}
	if len(raw) > 2048 {
		return "at most 2048 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return "must be an absolute URL, like https://example.com/hooks/leadpipe"
	}
	if u.User != nil {
		return "must not carry a user name or password"
	}
	if u.Fragment != "" {
		return "must not have a #fragment"
	}
	if s.CheckURL != nil {
		if err := s.CheckURL(raw); err != nil {
			return strings.TrimPrefix(err.Error(), "outbound: ")
		}
	} else if u.Scheme != "https" {
		return "must use https"
	}
	return ""
}

func checkEvents(in []string) ([]string, string) {
	if len(in) == 0 {
		return nil, "subscribe to at least one of " + strings.Join(Types, ", ")
	}
	var out []string
	for _, t := range in {
		if !KnownType(t) {
			return nil, fmt.Sprintf("unknown event type %q; known: %s", t, strings.Join(Types, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, ""
}

// Create adds an endpoint and returns it with its secret (given or generated).
func (s *Service) Create(ctx context.Context, tenantID string, in CreateInput) (Endpoint, error) {
	return s.CreateOnce(ctx, tenantID, in, idempotency.Once[Endpoint]{})
}

// CreateOnce is Create whose idempotency key (a UI form's per-render key)
// completes in the transaction that stores the endpoint.
func (s *Service) CreateOnce(ctx context.Context, tenantID string, in CreateInput, once idempotency.Once[Endpoint]) (Endpoint, error) {
	f := map[string]string{}
	if msg := s.checkURL(in.URL); msg != "" {
		f["url"] = msg
	}
	evs, msg := checkEvents(in.Events)
	if msg != "" {
		f["events"] = msg
	}
	in.Description = strings.TrimSpace(in.Description)
	if len(in.Description) > 500 {
		f["description"] = "at most 500 characters"
	}
	secret := chooseSecret(in.Secret, f)
	if len(f) > 0 {
		return Endpoint{}, apperr.InvalidFields(f)
	}
	now := s.now()
	ep := Endpoint{TenantID: tenantID, ID: ids.New(), URL: strings.TrimSpace(in.URL), Description: in.Description,
		Events: evs, Enabled: in.Enabled == nil || *in.Enabled, CreatedAt: now, UpdatedAt: now}
	ep, err := idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (Endpoint, error) {
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "endpoint.created", TargetType: "endpoint", TargetID: ep.ID,
			Detail: map[string]any{"host": urlHost(ep.URL), "events": ep.Events, "enabled": ep.Enabled}}); err != nil {
			return ep, err
		}
		if err := insertEndpoint(ctx, tx, ep); err != nil {
			return ep, err
		}
		return ep, insertSecret(ctx, tx, tenantID, ep.ID, ids.New(), s.Box.Seal([]byte(secret), aad(tenantID, ep.ID)), now, nil)
	})
	if err != nil {
		return Endpoint{}, db.MapErr(err, "endpoint not found", "endpoint already exists")
	}
	ep.Secret = secret
	return ep, nil
}

// List returns the tenant's endpoints, newest first.
func (s *Service) List(ctx context.Context, tenantID string) ([]Endpoint, error) {
	out, err := listEndpoints(ctx, s.DB, tenantID)
	if out == nil {
		out = []Endpoint{}
	}
	return out, err
}

// Get returns one endpoint; another tenant's is not found.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Endpoint, error) {
	if !ids.Valid(id) {
		return Endpoint{}, apperr.New(apperr.NotFound, "endpoint not found")
	}
	ep, err := getEndpoint(ctx, s.DB, tenantID, id, false)
	return ep, db.MapErr(err, "endpoint not found", "")
}

// Patch changes url, events, description or enabled. Re-enabling clears
// the failure record and resolves the endpoint_disabled alert; what the
// endpoint missed is recovered with Recover.
func (s *Service) Patch(ctx context.Context, tenantID, id string, in PatchInput) (Endpoint, error) {
	if !ids.Valid(id) {
		return Endpoint{}, apperr.New(apperr.NotFound, "endpoint not found")
	}
	f := map[string]string{}
	if in.URL != nil {
		if msg := s.checkURL(*in.URL); msg != "" {
			f["url"] = msg
		}
	}
	var evs []string
	if in.Events != nil {
		var msg string
		if evs, msg = checkEvents(*in.Events); msg != "" {
			f["events"] = msg
		}
	}
	if in.Description != nil && len(strings.TrimSpace(*in.Description)) > 500 {
		f["description"] = "at most 500 characters"
	}
	if len(f) > 0 {
		return Endpoint{}, apperr.InvalidFields(f)
	}
	now := s.now()
	var out Endpoint
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		ep, err := getEndpoint(ctx, tx, tenantID, id, true)
		if err != nil {
			return err
		}
		before := ep
		wasEnabled := ep.Enabled
		if in.URL != nil {
			ep.URL = strings.TrimSpace(*in.URL)
		}
		if in.Events != nil {
			ep.Events = evs
		}
		if in.Description != nil {
			ep.Description = strings.TrimSpace(*in.Description)
		}
		if in.Enabled != nil {
			ep.Enabled = *in.Enabled
		}
		switch {
		case ep.Enabled && !wasEnabled:
			ep.DisabledReason, ep.DisabledAt, ep.FailingSince, ep.LastError = nil, nil, nil, nil
		case !ep.Enabled && wasEnabled:
			reason := "disabled by a user"
			ep.DisabledReason, ep.DisabledAt = &reason, &now
		}
		ep.UpdatedAt = now
		if err := updateEndpoint(ctx, tx, ep); err != nil {
			return err
		}
		if !ep.Enabled && wasEnabled {
			if err := failOpenDeliveries(ctx, tx, tenantID, id, "endpoint disabled", now); err != nil {
				return err
			}
		}
		if ep.Enabled && !wasEnabled && s.Alerts != nil {
			if err := s.Alerts.ResolveEndpointAlert(ctx, tx, tenantID, ep.ID); err != nil {
				return err
			}
		}
		out = ep
		return recordChange(ctx, tx, tenantID, before, ep)
	})
	return out, db.MapErr(err, "endpoint not found", "")
}

// recordChange audits what a patch changed (nothing when nothing did):
// field names, the new host and the new enabled state, never the URL's
// path or query, which may carry the receiver's own token.
func recordChange(ctx context.Context, tx db.Ext, tenantID string, a, b Endpoint) error {
	var changed []string
	detail := map[string]any{}
	if a.URL != b.URL {
		changed = append(changed, "url")
		detail["host"] = urlHost(b.URL)
	}
	if !slices.Equal(a.Events, b.Events) {
		changed = append(changed, "events")
		detail["events"] = b.Events
	}
	if a.Description != b.Description {
		changed = append(changed, "description")
	}
	if a.Enabled != b.Enabled {
		changed = append(changed, "enabled")
		detail["enabled"] = b.Enabled
	}
	if len(changed) == 0 {
		return nil
	}
	detail["changed"] = changed
	return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "endpoint.changed", TargetType: "endpoint", TargetID: b.ID, Detail: detail})
}

// urlHost is the host an endpoint URL points at: what the audit log keeps
// of it.
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// Delete removes an endpoint with its secrets, deliveries and attempts.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	if !ids.Valid(id) {
		return apperr.New(apperr.NotFound, "endpoint not found")
	}
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		ep, err := getEndpoint(ctx, tx, tenantID, id, true)
		if err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "endpoint.deleted", TargetType: "endpoint", TargetID: id,
			Detail: map[string]any{"host": urlHost(ep.URL)}}); err != nil {
			return err
		}
		return deleteEndpoint(ctx, tx, tenantID, id)
	})
	return db.MapErr(err, "endpoint not found", "")
}

// Rotate makes a new current secret; the previous ones keep signing (every
// delivery then carries one signature per secret) for grace_seconds
// (default 86400; 0 revokes them at once).
func (s *Service) Rotate(ctx context.Context, tenantID, id string, in RotateInput) (Endpoint, error) {
	if !ids.Valid(id) {
		return Endpoint{}, apperr.New(apperr.NotFound, "endpoint not found")
	}
	f := map[string]string{}
	grace := 86400
	if in.GraceSeconds != nil {
		grace = *in.GraceSeconds
	}
	if grace < 0 || grace > 30*86400 {
		f["grace_seconds"] = "must be between 0 and 2592000 (30 days)"
	}
	secret := chooseSecret(in.Secret, f)
	if len(f) > 0 {
		return Endpoint{}, apperr.InvalidFields(f)
	}
	now := s.now()
	until := now.Add(time.Duration(grace) * time.Second)
	var out Endpoint
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		ep, err := getEndpoint(ctx, tx, tenantID, id, true)
		if err != nil {
			return err
		}
		if err := expireSecrets(ctx, tx, tenantID, id, until, now); err != nil {
			return err
		}
		if err := insertSecret(ctx, tx, tenantID, id, ids.New(), s.Box.Seal([]byte(secret), aad(tenantID, id)), now, nil); err != nil {
			return err
		}
		ep.Secret = secret
		if grace > 0 {
			ep.PreviousSecretExpiresAt = &until
		}
		out = ep
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "endpoint.secret_rotated", TargetType: "endpoint", TargetID: id,
			Detail: map[string]any{"host": urlHost(ep.URL), "grace_seconds": grace, "secret_given": in.Secret != ""}})
	})
	return out, db.MapErr(err, "endpoint not found", "")
}

// liveSecrets returns the HMAC keys that sign deliveries at now: the
// current secret and those still in their grace period.
func (s *Service) liveSecrets(ctx context.Context, x db.Ext, tenantID, endpointID string, now time.Time) ([][]byte, error) {
	rows, err := listSecrets(ctx, x, tenantID, endpointID, now)
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, 0, len(rows))
	for _, r := range rows {
		plain, err := s.Box.Open(r.SecretEnc, aad(tenantID, endpointID))
		if err != nil {
			return nil, fmt.Errorf("events: opening secret %s of endpoint %s: %w", r.ID, endpointID, err)
		}
		k, err := secretKey(string(plain))
		if err != nil {
			return nil, fmt.Errorf("events: secret %s of endpoint %s: %w", r.ID, endpointID, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func encodeEvents(evs []string) string {
	b, _ := json.Marshal(evs)
	return string(b)
}

func decodeEvents(ep *Endpoint) {
	_ = json.Unmarshal([]byte(ep.EventsJSON), &ep.Events)
	if ep.Events == nil {
		ep.Events = []string{}
	}
}

// chooseSecret is the given signing secret, or a new one when none is
// given; a malformed one is noted in f under "secret".
func chooseSecret(given string, f map[string]string) string {
	if given == "" {
		return GenerateSecret()
	}
	if _, err := secretKey(given); err != nil {
		f["secret"] = err.Error()
	}
	return given
}
