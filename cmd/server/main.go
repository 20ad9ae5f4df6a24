// Command server runs Leadpipe's HTTP server (UI, API, webhooks, metrics)
// and, by default, the Asynq worker and scheduler in the same process. It
// also carries the operator subcommands; run `server help`.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
	"leadpipe/internal/tracing"
	"leadpipe/internal/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "leadpipe:", err)
		os.Exit(1)
	}
}

const usage = `Usage: server [command] [flags]

Commands:
  serve                      run the HTTP server (default); LEADPIPE_WORKER=inprocess also runs the worker
  demo                       ensure a demo tenant with users and one source per kind, print how to use it, then serve
  demo-send                  post signed deliveries of every kind to a running server (sender simulator)
  migrate                    apply database migrations and exit
  tenant create              --slug acme --name Acme --admin-email a@acme.test --admin-password '...'
  tenant list                list tenants
  user create                --tenant acme --email b@acme.test --name Bea --password '...' --role staff|admin
  token create               --tenant acme --name ci   (prints the token once)
  config                     print the configuration variables
  healthcheck                GET /healthz on LEADPIPE_ADDR (for container health checks)
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if cmd == "healthcheck" {
		return healthcheck(ctx, getenv)
	}
	if cmd == "config" {
		for _, v := range config.Vars {
			fmt.Fprintf(stdout, "%-32s default %-50q %s\n", v.Name, v.Default, v.Help)
		}
		return nil
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, stderr)
	if cmd == "serve" || cmd == "demo" {
		log.Info("CPUs running Go code (LEADPIPE_PROCS)", "gomaxprocs", app.SetProcs(cfg, getenv), "cpus", runtime.NumCPU())
	}
	if cmd == "serve" || cmd == "demo" {
		stop, err := startTracing(ctx, getenv, "leadpipe-server", log)
		if err != nil {
			return err
		}
		defer stop()
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, log, nil)
	case "demo":
		demoDefaults(cfg, getenv)
		log = slog.New(quietRequests{log.Handler()})
		return serve(ctx, cfg, log, func(ctx context.Context, a *app.App) error { return ensureDemo(ctx, a, stdout) })
	case "demo-send":
		return demoSend(ctx, cfg, args, getenv, stdout)
	case "migrate":
		a, err := app.Open(ctx, cfg, log)
		if err != nil {
			return err
		}
		a.Close()
		fmt.Fprintln(stdout, "migrations applied")
		return nil
	case "tenant", "user", "token":
		return adminCommand(ctx, cfg, log, cmd, args, stdout)
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

// serve listens at once (so /healthz answers while migrations run), opens
// the app with retries until MySQL is reachable, then swaps in the real
// handler. afterOpen runs once the app is ready (the demo setup).
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, afterOpen func(context.Context, *app.App) error) error {
	if cfg.SecretKeyIsDev {
		log.Warn("LEADPIPE_SECRET_KEY is not set: using the built-in DEVELOPMENT key. Stored secrets and sessions are NOT protected. Set LEADPIPE_SECRET_KEY (openssl rand -base64 32) in production.")
	}
	var current atomic.Pointer[http.Handler]
	var starting http.Handler = startingHandler()
	current.Store(&starting)
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (LEADPIPE_ADDR): %w", cfg.Addr, err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "base_url", cfg.BaseURL)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	a, err := openWithRetry(ctx, cfg, log)
	if err != nil {
		if cerr := srv.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the listener: %w", cerr))
		}
		return err
	}
	defer a.Close()
	h := a.Handler()
	current.Store(&h)
	log.Info("ready")

	workerDone := make(chan struct{})
	wctx, cancelWorker := context.WithCancel(context.WithoutCancel(ctx))
	if cfg.Worker == "inprocess" {
		go func() {
			defer close(workerDone)
			if err := a.RunWorker(wctx, 0); err != nil {
				log.Error("worker stopped", "err", err)
			}
		}()
	} else {
		close(workerDone)
	}
	if afterOpen != nil {
		if err := afterOpen(ctx, a); err != nil {
			log.Error("setup failed", "err", err)
		}
	}

	select {
	case err := <-serveErr:
		cancelWorker()
		<-workerDone
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	cancelWorker()
	<-workerDone
	a.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func openWithRetry(ctx context.Context, cfg *config.Config, log *slog.Logger) (*app.App, error) {
	for attempt := 1; ; attempt++ {
		a, err := app.Open(ctx, cfg, log)
		if err == nil {
			return a, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Error("cannot start yet; retrying in 2 s", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// startingHandler answers while the app is still opening.
func startingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		case "/readyz":
			w.Header().Set("Retry-After", "2")
			web.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "starting",
				"down": map[string]string{"migrations": "not applied yet (or MySQL unreachable)"}})
		default:
			w.Header().Set("Retry-After", "2")
			web.WriteProblem(w, r, http.StatusServiceUnavailable, "Leadpipe is starting, retry shortly", nil)
		}
	})
}

// healthcheck lets a container without curl check the server.
func healthcheck(ctx context.Context, getenv func(string) string) error {
	addr := getenv("LEADPIPE_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz answered %d", res.StatusCode)
	}
	return nil
}

// startTracing turns OpenTelemetry tracing on when the OTEL_* variables
// ask for it (docs/OPERATING.md, "Tracing"); the returned function flushes it.
func startTracing(ctx context.Context, getenv func(string) string, service string, log *slog.Logger) (func(), error) {
	shutdown, err := tracing.Setup(ctx, getenv, service)
	if err != nil {
		return nil, fmt.Errorf("tracing (OTEL_*): %w", err)
	}
	if tracing.Enabled() {
		log.Info("tracing on", "endpoint", cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")),
			"sampler", cmp.Or(getenv("OTEL_TRACES_SAMPLER"), "parentbased_always_on"), "sampler_arg", getenv("OTEL_TRACES_SAMPLER_ARG"))
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("flushing traces failed", "err", err)
		}
	}, nil
}
