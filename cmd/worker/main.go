// Command worker runs Leadpipe's Asynq worker and the scheduler (elected:
// one process at a time enqueues periodic tasks). Use it with
// LEADPIPE_WORKER=off on the servers to scale workers separately.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
	"leadpipe/internal/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "leadpipe worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	concurrency := fs.Int("concurrency", 64, "tasks handled at once (deliveries handled at once share batches: one transaction per batch)")
	batch := fs.Int("batch", 0, "deliveries per processing transaction at most (0: the default, 128)")
	runners := fs.Int("runners", 0, "processing transactions at once when batches are full, i.e. a backlog (0: the default, 2)")
	gather := fs.Duration("gather", 0, "how long a batch waits for more deliveries after its first (0: the default, 20ms; negative: never)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, os.Stderr).With("process", "worker")
	log.Info("CPUs running Go code (LEADPIPE_PROCS)", "gomaxprocs", app.SetProcs(cfg, getenv), "cpus", runtime.NumCPU())
	shutdown, err := tracing.Setup(ctx, getenv, "leadpipe-worker")
	if err != nil {
		return fmt.Errorf("tracing (OTEL_*): %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			// Safe to go on exiting: only the spans of the last moments
			// are lost.
			log.Warn("tracing: flushing the last spans failed", "err", err)
		}
	}()
	a, err := app.Open(ctx, cfg, log, app.WithBatch(*batch), app.WithRunners(*runners), app.WithGather(*gather))
	if err != nil {
		return err
	}
	defer a.Close()
	// The worker's own listener: /metrics (reconcile and processing counters
	// live in this process when it runs apart), /healthz, /readyz.
	ops := &http.Server{Addr: cfg.WorkerAddr, Handler: a.Web.OpsRoutes(), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", cfg.WorkerAddr)
	if err != nil {
		return fmt.Errorf("LEADPIPE_WORKER_ADDR %s: %w", cfg.WorkerAddr, err)
	}
	go func() {
		if err := ops.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("worker listener", "err", err)
		}
	}()
	log.Info("worker started", "concurrency", *concurrency, "addr", ln.Addr().String())
	err = a.RunWorker(ctx, *concurrency)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := ops.Shutdown(sctx); serr != nil {
		// Safe: the listener only serves /metrics and the health checks.
		log.Warn("worker listener: shutdown", "err", serr)
	}
	a.Shutdown(context.Background())
	return err
}
