// Command seed fills a tenant with many leads quickly (multi-row INSERTs),
// for benchmarks and demos:
//
//	go run ./cmd/seed -tenant bench -n 1000000
//
// The tenant is provisioned when missing (its admin login and API token
// are printed once). Migrations are applied first.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/leads"
	"leadpipe/internal/tenants"
)

const defaultDSN = "root@tcp(127.0.0.1:3306)/leadpipe?parseTime=true&loc=UTC"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	dsnDefault := getenv("LEADPIPE_MYSQL_DSN")
	if dsnDefault == "" {
		dsnDefault = defaultDSN
	}
	dsn := fs.String("dsn", dsnDefault, "MySQL DSN (default $LEADPIPE_MYSQL_DSN)")
	slug := fs.String("tenant", "bench", "tenant slug (provisioned when missing)")
	n := fs.Int("n", 1_000_000, "number of leads to insert")
	batch := fs.Int("batch", 2000, "rows per INSERT (at most 3000)")
	workers := fs.Int("workers", 2, "parallel inserters")
	seed := fs.Uint64("seed", 1, "random seed for names")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 0 || *batch <= 0 || *workers <= 0 {
		return errors.New("-n, -batch and -workers must be positive")
	}
	d, err := db.Open(ctx, *dsn)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := db.Migrate(ctx, d, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return err
	}

	ts := tenants.NewService(d, nil)
	t, err := ts.TenantBySlug(ctx, *slug)
	if apperr.Is(err, apperr.NotFound) {
		var pw [12]byte
		_, _ = rand.Read(pw[:])
		in := tenants.ProvisionInput{Slug: *slug, Name: *slug, AdminEmail: "admin@" + *slug + ".test",
			AdminPassword: hex.EncodeToString(pw[:])}
		p, perr := ts.Provision(ctx, in)
		if perr != nil {
			return fmt.Errorf("provision %s: %w", *slug, perr)
		}
		t = p.Tenant
		fmt.Fprintf(stdout, "tenant %s provisioned: login %s / %s, API token %s\n", *slug, in.AdminEmail, in.AdminPassword, p.APIToken)
	} else if err != nil {
		return err
	}

	start := time.Now()
	last := start
	got, err := leads.Seed(ctx, d, t.ID, leads.SeedOptions{N: *n, Batch: *batch, Workers: *workers, RandSeed: *seed,
		Progress: func(done int) {
			if time.Since(last) > 5*time.Second {
				last = time.Now()
				fmt.Fprintf(stdout, "  %d leads…\n", done)
			}
		}})
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("after %d leads: %w", got, err)
	}
	rate := float64(got) / max(took.Seconds(), 0.001)
	fmt.Fprintf(stdout, "inserted %d leads into tenant %s (%s) in %s (%.0f rows/s)\n", got, *slug, t.ID, took.Round(time.Millisecond), rate)
	return nil
}
