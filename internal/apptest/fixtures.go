package apptest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

// StaffPassword is the password of every user Staff makes.
const StaffPassword = "staff-password-1"

// Source creates a source through the service and returns it with its
// signing secret.
func (e *Env) Source(tenantID string, in sources.CreateInput) (sources.Source, string) {
	e.T.Helper()
	src, secret, err := e.App.Sources.Create(context.Background(), tenantID, in)
	if err != nil {
		e.T.Fatalf("apptest: source %s: %v", in.Slug, err)
	}
	return src, secret
}

// Staff adds a staff user (password StaffPassword) to a tenant.
func (e *Env) Staff(tenantID, email, name string) tenants.User {
	e.T.Helper()
	u, err := e.App.Tenants.CreateUser(context.Background(), tenantID, tenants.CreateUserInput{Email: email, Name: name,
		Password: StaffPassword, Role: tenants.RoleStaff})
	if err != nil {
		e.T.Fatalf("apptest: staff %s: %v", email, err)
	}
	return u
}

// Hook posts signed deliveries to one source's webhook URL as its sender
// would.
type Hook struct {
	T      testing.TB
	URL    string // the full webhook URL
	Kind   string
	Config []byte // the source's kind configuration (generic, token)
	Secret string
	Client *http.Client // nil: http.DefaultClient
}

// Hook is the sender of the source at /hooks/{tenant}/{source}.
func (e *Env) Hook(tenantSlug, sourceSlug, kind, secret string) Hook {
	return Hook{T: e.T, URL: e.URL + "/hooks/" + tenantSlug + "/" + sourceSlug, Kind: kind, Secret: secret}
}

// SourceHook creates a source of the tenant through the service and
// returns it with its sender.
func (e *Env) SourceHook(ten Tenant, in sources.CreateInput) (sources.Source, Hook) {
	e.T.Helper()
	src, secret := e.Source(ten.ID, in)
	return src, e.Hook(ten.Slug, in.Slug, in.Kind, secret)
}

// Post sends one delivery of the kind's sample body for ref and returns
// the status.
func (h Hook) Post(deliveryID, ref string, l kinds.Lead) int {
	h.T.Helper()
	now := time.Now()
	return h.PostBody(deliveryID, kinds.SampleBody(h.Kind, deliveryID, ref, l, now), now)
}

// PostBody signs body as sent at now and posts it, returning the status.
func (h Hook) PostBody(deliveryID string, body []byte, now time.Time) int {
	h.T.Helper()
	st, _, err := h.Try(deliveryID, body, now)
	if err != nil {
		h.T.Fatal(err)
	}
	return st
}

// Try is PostBody that returns the answer's body too, and its error
// instead of failing the test: for goroutines, which must not call Fatal.
func (h Hook) Try(deliveryID string, body []byte, now time.Time) (int, []byte, error) {
	hdr, b, err := kinds.Sign(h.Kind, h.Config, h.Secret, deliveryID, body, now)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, h.URL, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header = hdr
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// MustPost is Post that fails the test unless the answer is 200.
func (h Hook) MustPost(deliveryID, ref string, l kinds.Lead) {
	h.T.Helper()
	if st := h.Post(deliveryID, ref, l); st != http.StatusOK {
		h.T.Fatalf("apptest: webhook %s: %d", deliveryID, st)
	}
}
