package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"leadpipe/internal/app"
	"leadpipe/internal/apperr"
	"leadpipe/internal/config"
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
	{Slug: "linkedin", Name: "LinkedIn Lead Gen Forms", Kind: "linkedin", Secret: "leadpipe-demo-linkedin-client-secret"},
	{Slug: "hubspot", Name: "HubSpot contacts", Kind: "hubspot", Secret: "leadpipe-demo-hubspot-client-secret"},
	{Slug: "webflow", Name: "Webflow site forms", Kind: "webflow", Secret: "leadpipe-demo-webflow-client-secret"},
	{Slug: "tally", Name: "Tally survey", Kind: "tally", Secret: "leadpipe-demo-tally-signing-secret"},
	{Slug: "tiktok", Name: "TikTok lead ads", Kind: "tiktok", Secret: "leadpipe-demo-tiktok-client-secret"},
	{Slug: "zapier", Name: "Zapier (token)", Kind: "token", Secret: "leadpipe-demo-zapier-token-secret",
		Config: kinds.SampleConfig("token")},
}

// Meta sends only a lead's id by webhook; its fields come from the Graph
// API. The demo's Facebook source fetches them from demoGraph, a stand-in
// on a loopback port, with this token.
const (
	demoGraphToken = "leadpipe-demo-graph-token"
	demoFormID     = "560000000000001"
)

// demoDefaults adjusts a configuration for the local demo when the
// environment does not say otherwise: the base URL follows LEADPIPE_ADDR's
// port (so printed URLs work), and outbound calls may reach loopback (the
// stand-in Graph API).
func demoDefaults(cfg *config.Config, getenv func(string) string) {
	if getenv("LEADPIPE_BASE_URL") == "" {
		if _, port, err := net.SplitHostPort(cfg.Addr); err == nil && port != "" && port != "8080" {
			cfg.BaseURL = "http://localhost:" + port
		}
	}
	if getenv("LEADPIPE_ALLOW_PRIVATE_TARGETS") == "" {
		cfg.AllowPrivateTargets = true
	}
}

// quietRequests logs the per-request "http" lines at debug, so the demo's
// banner stays on screen while deliveries pour in (LEADPIPE_LOG_LEVEL=debug
// shows them again).
type quietRequests struct{ slog.Handler }

func (h quietRequests) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "http" && r.Level == slog.LevelInfo {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietRequests) WithAttrs(as []slog.Attr) slog.Handler {
	return quietRequests{h.Handler.WithAttrs(as)}
}

func (h quietRequests) WithGroup(name string) slog.Handler {
	return quietRequests{h.Handler.WithGroup(name)}
}

// demoPerson is the made-up person behind a demo lead, the same for every
// kind and for the stand-in Graph API: demo-send and demoGraph agree on
// who a leadgen id is without sharing anything but the id.
func demoPerson(ref string, i int) kinds.Lead {
	h := fnv.New64a()
	h.Write([]byte(ref))
	r := rand.New(rand.NewPCG(h.Sum64(), 0))
	fn, ln := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
	return kinds.Lead{Name: fn + " " + ln, Email: strings.ToLower(fn+"."+ln) + fmt.Sprintf("+%d@example.com", i),
		Phone: fmt.Sprintf("+1555%07d", r.IntN(10000000)), Company: companies[r.IntN(len(companies))]}
}

// demoRefIndex reads i back from a demo-send natural key "lead-<run>-<i>".
func demoRefIndex(ref string) int {
	i := strings.LastIndexByte(ref, '-')
	n, err := strconv.Atoi(ref[i+1:])
	if err != nil {
		return 0 // a key demo-send did not make: any made-up person will do
	}
	return n
}

// startDemoGraph serves GET /v21.0/{leadgen_id} (a Graph lead object with
// the demo person's field data) and GET /v21.0/{form_id}/leads (empty) on
// a loopback port until ctx ends, and returns its base URL.
func startDemoGraph(ctx context.Context, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v21.0/{id}/leads", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, `{"data":[],"paging":{}}`); err != nil {
			return // the client went away: it sees the failed read itself
		}
	})
	mux.HandleFunc("GET /v21.0/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("access_token") != demoGraphToken {
			http.Error(w, `{"error":{"message":"Invalid OAuth access token","type":"OAuthException","code":190}}`, http.StatusBadRequest)
			return
		}
		id := r.PathValue("id")
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write(kinds.SampleMetaLead(id, demoPerson(id, demoRefIndex(id)), time.Now())); err != nil {
			return // as above
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo Graph API stopped: Facebook leads keep waiting for their details", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() {
		if err := srv.Close(); err != nil {
			log.Warn("demo Graph API: close", "err", err) // at exit: nothing depends on it
		}
	})
	return "http://" + ln.Addr().String() + "/v21.0", nil
}

// ensureDemo creates (once) the demo tenant, an admin, a staff user and one
// source per kind, points the Facebook source at the stand-in Graph API,
// then prints how to use them: last, once the start-up lines are out, so
// the logins and commands stay on screen.
func ensureDemo(ctx context.Context, a *app.App, out io.Writer) error {
	began := time.Now()
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
		src, _, err := a.Sources.Create(ctx, t.ID, in)
		if err != nil && !apperr.Is(err, apperr.Conflict) {
			return fmt.Errorf("demo source %s: %w", ds.Slug, err)
		}
		have[ds.Slug] = src
	}
	graph := "off: set LEADPIPE_ALLOW_PRIVATE_TARGETS=true so the demo's Facebook source can fetch lead details"
	if a.Cfg.AllowPrivateTargets {
		// The stand-in's port is new each start: point the source at it.
		base, err := startDemoGraph(ctx, a.Log)
		if err != nil {
			return err
		}
		token, form := demoGraphToken, demoFormID
		if _, err := a.Sources.Patch(ctx, t.ID, have["facebook"].ID, sources.PatchInput{Reconcile: &sources.ReconcileInput{
			BaseURL: &base, AccessToken: &token, FormID: &form}}); err != nil {
			return fmt.Errorf("demo source facebook: %w", err)
		}
		graph = base + " (a stand-in: Facebook leads get their names from it)"
	}
	_, token, err := a.Tenants.CreateToken(ctx, t.ID, "demo", nil)
	if err != nil {
		return err
	}
	// The worker's and scheduler's start-up lines first: they come within a
	// second of the start, which the setup above has often used up already.
	time.Sleep(time.Second - time.Since(began))
	printDemoBanner(out, a, token, graph)
	return nil
}

// defaultBaseURL is LEADPIPE_BASE_URL's default: demo-send needs -url
// only for another address.
const defaultBaseURL = "http://localhost:8080"

func printDemoBanner(out io.Writer, a *app.App, token, graph string) {
	base := a.Cfg.BaseURL
	fmt.Fprintf(out, "\n  Leadpipe demo is running.\n\n")
	fmt.Fprintf(out, "  Log in:    %s/login\n", base)
	fmt.Fprintf(out, "             admin  %s / %s\n", demoAdminEmail, demoAdminPassword)
	fmt.Fprintf(out, "             staff  %s / %s\n", demoStaffEmail, demoStaffPassword)
	fmt.Fprintf(out, "  API token: %s   (new each start)\n", token)
	fmt.Fprintf(out, "  Graph API: %s\n", graph)
	if a.Cfg.SMTPURL == "" {
		fmt.Fprintf(out, "  E-mail:    not sent (no LEADPIPE_SMTP_URL); every message is in the preview at %s/settings/mail (admin)\n\n", base)
	} else {
		fmt.Fprintf(out, "  E-mail:    sent over SMTP; what went out (and what failed) at %s/settings/mail (admin)\n\n", base)
	}
	fmt.Fprintf(out, "  Demo sources (fixed demo secrets; each kind signs as its sender does):\n")
	for _, ds := range demoSources {
		fmt.Fprintf(out, "    %-12s %s\n", ds.Kind, a.Sources.WebhookURL(demoSlug, ds.Slug))
		fmt.Fprintf(out, "    %-12s secret %s\n", "", ds.Secret)
	}
	fmt.Fprintf(out, "\n  Post one lead by hand (Google Ads puts its key in the body, no signature):\n")
	fmt.Fprintf(out, "    curl -s %s -H 'Content-Type: application/json' \\\n", a.Sources.WebhookURL(demoSlug, "google-ads"))
	fmt.Fprintf(out, "      -d '{\"lead_id\":\"curl-1\",\"google_key\":\"%s\",\"user_column_data\":[{\"column_id\":\"FULL_NAME\",\"string_value\":\"Casey Curl\"},{\"column_id\":\"EMAIL\",\"string_value\":\"casey@example.com\"}]}'\n", demoGoogleKey())
	fmt.Fprintf(out, "\n  Send signed deliveries of every kind (10%% duplicates) from another terminal:\n")
	fmt.Fprintf(out, "    %s\n\n", demoSendCommand(base))
}

// demoSendCommand is the demo-send command line for a server at base.
func demoSendCommand(base string) string {
	cmd := "go run ./cmd/server demo-send -n 60 -dup 0.1"
	if base != defaultBaseURL {
		cmd += " -url " + base
	}
	return cmd
}

func demoGoogleKey() string {
	for _, ds := range demoSources {
		if ds.Kind == "google-ads" {
			return ds.Secret
		}
	}
	return ""
}
