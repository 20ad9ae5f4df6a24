// Command worker runs Leadpipe's Asynq worker and the scheduler (elected:
// one process at a time enqueues periodic tasks). Use it with
// LEADPIPE_WORKER=off on the servers to scale workers separately.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, os.Stderr).With("process", "worker")
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	log.Info("worker started", "concurrency", *concurrency)
	err = a.RunWorker(ctx, *concurrency)
	a.Shutdown(context.Background())
	return err
}
