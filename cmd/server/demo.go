package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"leadpipe/internal/app"
	"leadpipe/internal/apperr"
	"leadpipe/internal/sources"
	"leadpipe/internal/tenants"
	"leadpipe/internal/webhooks/kinds"
)

// The demo tenant's fixed credentials and source secrets. They are for a
// local demo only (printed on start) and let `demo-send` sign deliveries
// without reading the database.
const (
	demoSlug          = "demo"
	demoAdminEmail    = "admin@demo.leadpipe.test"
	demoAdminPassword = "leadpipe-demo-admin"
	demoStaffEmail    = "staff@demo.leadpipe.test"
	demoStaffPassword = "leadpipe-demo-staff"
	demoVerifyToken   = "leadpipe-demo-verify"
)

type demoSource struct {
	Slug, Name, Kind, Secret string
	Config                   json.RawMessage
}

var demoSources = []demoSource{
	{Slug: "standard", Name: "Landing page (Standard Webhooks)", Kind: "standard",
		Secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("leadpipe-demo-standard-key!"))},
	{Slug: "stripe-style", Name: "Checkout (Stripe-style signature)", Kind: "timestamped", Secret: "whsec_leadpipe_demo_timestamped"},
	{Slug: "typeform", Name: "Typeform contact form", Kind: "typeform", Secret: "leadpipe-demo-typeform"},
	{Slug: "facebook", Name: "Facebook Lead Ads", Kind: "meta", Secret: "leadpipe-demo-meta-app-secret"},
	{Slug: "google-ads", Name: "Google Ads lead form", Kind: "google-ads", Secret: "leadpipe-demo-google-key"},
	{Slug: "generic", Name: "Partner CRM (generic HMAC)", Kind: "generic", Secret: "leadpipe-demo-generic",
		Config: kinds.SampleConfig("generic")},
}

// ensureDemo creates (once) the demo tenant, an admin, a staff user and one
// source per kind, then prints how to use them.
func ensureDemo(ctx context.Context, a *app.App, out io.Writer) error {
	t, err := a.Tenants.TenantBySlug(ctx, demoSlug)
	if apperr.Is(err, apperr.NotFound) {
		p, perr := a.Tenants.Provision(ctx, tenants.ProvisionInput{Slug: demoSlug, Name: "Demo Company",
			AdminEmail: demoAdminEmail, AdminPassword: demoAdminPassword, AdminName: "Avery Admin"})
		if perr != nil && !apperr.Is(perr, apperr.Conflict) {
			return perr
		}
		t = p.Tenant
		if perr != nil {
			t, err = a.Tenants.TenantBySlug(ctx, demoSlug)
		} else {
			err = nil
		}
		if _, uerr := a.Tenants.CreateUser(ctx, t.ID, tenants.CreateUserInput{Email: demoStaffEmail, Name: "Sam Sales",
			Password: demoStaffPassword, Role: tenants.RoleStaff}); uerr != nil && !apperr.Is(uerr, apperr.Conflict) {
			return uerr
		}
	}
	if err != nil {
		return err
	}
	existing, err := a.Sources.List(ctx, t.ID)
	if err != nil {
		return err
	}
	have := map[string]sources.Source{}
	for _, s := range existing {
		have[s.Slug] = s
	}
	for _, ds := range demoSources {
		if _, ok := have[ds.Slug]; ok {
			continue
		}
		in := sources.CreateInput{Slug: ds.Slug, Name: ds.Name, Kind: ds.Kind, Secret: ds.Secret, Config: ds.Config}
		if ds.Kind == "meta" {
			in.VerifyToken = demoVerifyToken
		}
		if _, _, err := a.Sources.Create(ctx, t.ID, in); err != nil && !apperr.Is(err, apperr.Conflict) {
			return fmt.Errorf("demo source %s: %w", ds.Slug, err)
		}
	}
	_, token, err := a.Tenants.CreateToken(ctx, t.ID, "demo", nil)
	if err != nil {
		return err
	}
	base := a.Cfg.BaseURL
	fmt.Fprintf(out, "\n  Leadpipe demo is running.\n\n")
	fmt.Fprintf(out, "  Log in:    %s/login\n", base)
	fmt.Fprintf(out, "             admin  %s / %s\n", demoAdminEmail, demoAdminPassword)
	fmt.Fprintf(out, "             staff  %s / %s\n", demoStaffEmail, demoStaffPassword)
	fmt.Fprintf(out, "  API token: %s   (new each start)\n\n", token)
	fmt.Fprintf(out, "  Webhook URLs (secrets are the demo's fixed ones, see cmd/server/demo.go):\n")
	for _, ds := range demoSources {
		fmt.Fprintf(out, "    %-12s %-12s %s\n", ds.Kind, ds.Slug, a.Sources.WebhookURL(demoSlug, ds.Slug))
	}
	fmt.Fprintf(out, "\n  Send signed test deliveries of every kind (10%% duplicates):\n")
	fmt.Fprintf(out, "    go run ./cmd/server demo-send -n 50 -dup 0.1\n\n")
	return nil
}
