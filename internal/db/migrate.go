package db

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"

	"leadpipe/migrations"
)

const migrateLock = "leadpipe_migrate"

// Migrate applies every pending migration. Replicas starting together
// serialise on a MySQL named lock (GET_LOCK blocks efficiently, unlike a
// polling lock table), so each migration runs exactly once.
func Migrate(ctx context.Context, d *sqlx.DB, log *slog.Logger) error {
	return MigrateFS(ctx, d, migrations.FS, log)
}

// MigrateFS is Migrate with another set of files (tests).
func MigrateFS(ctx context.Context, d *sqlx.DB, fsys fs.FS, log *slog.Logger) error {
	conn, err := d.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	var got int
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 300)", migrateLock).Scan(&got); err != nil || got != 1 {
		return fmt.Errorf("migrate: could not take the migration lock within 300 s (got %d): %v", got, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", migrateLock) //nolint:errcheck

	p, err := goose.NewProvider(goose.DialectMySQL, d.DB, fsys,
		goose.WithAllowOutofOrder(true),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range results {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
		}
	}
	return nil
}
