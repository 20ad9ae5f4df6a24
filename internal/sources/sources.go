// Package sources manages a tenant's webhook sources: their kind, config,
// signing secrets (encrypted, rotated with a grace period) and reconcile
// settings (access token encrypted).
package sources

import (
	"encoding/json"
	"time"
)

// Kinds lists the source kinds (docs/API.md, "Sources").
var Kinds = []string{"standard", "timestamped", "typeform", "meta", "google-ads", "generic",
	"linkedin", "hubspot", "webflow", "tally", "tiktok", "token"}

// ReconcileKinds can be pulled from their sender's API.
var ReconcileKinds = map[string]bool{"typeform": true, "meta": true, "linkedin": true, "generic": true}

// Source is one webhook sender configuration.
type Source struct {
	TenantID  string          `db:"tenant_id" json:"-"`
	ID        string          `db:"id" json:"id"`
	Slug      string          `db:"slug" json:"slug"`
	Name      string          `db:"name" json:"name"`
	Kind      string          `db:"kind" json:"kind"`
	Config    json.RawMessage `db:"config" json:"config,omitempty"`
	CreatedAt time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt time.Time       `db:"updated_at" json:"updated_at"`

	VerifyTokenEnc []byte `db:"verify_token_enc" json:"-"`

	ReconcileBaseURL   *string    `db:"reconcile_base_url" json:"-"`
	ReconcileTokenEnc  []byte     `db:"reconcile_token_enc" json:"-"`
	ReconcileFormID    *string    `db:"reconcile_form_id" json:"-"`
	ReconcileListPath  *string    `db:"reconcile_list_path" json:"-"`
	ReconcileIntervalS int        `db:"reconcile_interval_s" json:"-"`
	ReconcileLookbackS int        `db:"reconcile_lookback_s" json:"-"`
	ReconcileCursor    *time.Time `db:"reconcile_cursor" json:"-"`
}

// ReconcileEnabled reports whether the source has pull settings.
func (s Source) ReconcileEnabled() bool {
	return ReconcileKinds[s.Kind] && s.ReconcileBaseURL != nil && *s.ReconcileBaseURL != ""
}

// View is a source as the API shows it.
type View struct {
	ID         string          `json:"id"`
	Slug       string          `json:"slug"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	WebhookURL string          `json:"webhook_url"`
	Config     json.RawMessage `json:"config,omitempty"`
	Reconcile  *ReconcileView  `json:"reconcile"`
	Secret     string          `json:"secret,omitempty"` // only in the create and rotate responses
	// SecretWebhookURL: token sources only, for senders that can set no
	// header (create, rotate and the single source's GET).
	SecretWebhookURL string    `json:"secret_webhook_url,omitempty"`
	HasVerifyToken   bool      `json:"has_verify_token,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// ReconcileView never shows the access token.
type ReconcileView struct {
	BaseURL         string     `json:"base_url"`
	FormID          string     `json:"form_id,omitempty"`
	ListPath        string     `json:"list_path,omitempty"`
	IntervalSeconds int        `json:"interval_seconds"`
	LookbackSeconds int        `json:"lookback_seconds"`
	HasAccessToken  bool       `json:"has_access_token"`
	Cursor          *time.Time `json:"cursor"`
}

// ReconcileInput sets pull settings. A nil AccessToken keeps the stored one.
type ReconcileInput struct {
	BaseURL         *string `json:"base_url"`
	AccessToken     *string `json:"access_token"`
	FormID          *string `json:"form_id"`
	ListPath        *string `json:"list_path"`
	IntervalSeconds *int    `json:"interval_seconds"`
	LookbackSeconds *int    `json:"lookback_seconds"`
}

// CreateInput is POST /api/v1/sources.
type CreateInput struct {
	Slug        string          `json:"slug"`
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	Secret      string          `json:"secret"`
	VerifyToken string          `json:"verify_token"`
	Config      json.RawMessage `json:"config"`
	Reconcile   *ReconcileInput `json:"reconcile"`
}

// PatchInput is PATCH /api/v1/sources/{id} (merge-patch: absent = keep).
type PatchInput struct {
	Name        *string         `json:"name"`
	Config      json.RawMessage `json:"config"`
	VerifyToken *string         `json:"verify_token"`
	Reconcile   *ReconcileInput `json:"reconcile"`
}

// RotateInput is POST /api/v1/sources/{id}/rotate-secret.
type RotateInput struct {
	Secret       string `json:"secret"`
	GraceSeconds *int   `json:"grace_seconds"`
}

// Resolved is what the ingest path needs per request.
type Resolved struct {
	TenantID string
	Source   Source
	Secrets  []string // current first, then in-grace
}

// PullSettings is what the reconciler needs, with the token decrypted.
type PullSettings struct {
	Kind, BaseURL, AccessToken, FormID, ListPath string
	Interval, Lookback                           time.Duration
	Cursor                                       *time.Time
}
