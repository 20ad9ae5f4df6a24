package db

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"

	"leadpipe/internal/ids"
	"leadpipe/migrations"
)

// The migration lease: one row that a process takes by an UPDATE, renews
// while it migrates and gives back. GET_LOCK would be simpler, but a named
// lock is per server: on a Galera cluster three servers starting at once
// on three nodes would each take "the" lock and run the same migrations.
// A row update is certified cluster-wide: of two nodes taking the free
// lease at once, one commits and the other gets a conflict (or, retried by
// the node, finds the lease held). docs/SCALING.md, "Database".
const (
	migrateLease      = 60 * time.Second // a holder that died frees it after this
	migrateLeaseRenew = 15 * time.Second
	migrateWait       = 5 * time.Minute
)

// Migrate applies every pending migration. Replicas starting together
// serialise on the migration lease, so each migration runs exactly once.
func Migrate(ctx context.Context, d *sqlx.DB, log *slog.Logger) error {
	return MigrateFS(ctx, d, migrations.FS, log)
}

// MigrateFS is Migrate with another set of files (tests).
func MigrateFS(ctx context.Context, d *sqlx.DB, fsys fs.FS, log *slog.Logger) error {
	release, err := takeMigrateLease(ctx, d)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer release()

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

// takeMigrateLease waits until this process holds the migration lease and
// returns the function that gives it back. While held, it is renewed.
func takeMigrateLease(ctx context.Context, d *sqlx.DB) (release func(), err error) {
	create := func() error {
		if _, err := d.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrate_lock (
			id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
			holder VARCHAR(32) NOT NULL,
			expires_at DATETIME(3) NOT NULL
		) ENGINE=InnoDB`); err != nil {
			return err
		}
		_, err := d.ExecContext(ctx, `INSERT IGNORE INTO migrate_lock (id, holder, expires_at) VALUES (1, '', '1970-01-01')`)
		return err
	}
	if err := Retry(ctx, 20, 50*time.Millisecond, create); err != nil {
		return nil, fmt.Errorf("migration lease table: %w", err)
	}
	me := ids.New()
	deadline := time.Now().Add(migrateWait)
	for {
		res, err := d.ExecContext(ctx, `UPDATE migrate_lock SET holder = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
			WHERE id = 1 AND (holder = '' OR expires_at < UTC_TIMESTAMP(3))`, me, int(migrateLease/time.Second))
		if err == nil {
			if n, _ := res.RowsAffected(); n == 1 {
				break
			}
		} else if !Retryable(err) {
			return nil, fmt.Errorf("migration lease: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("could not take the migration lease within %s (held by another process; it frees itself %s after its holder dies)", migrateWait, migrateLease)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100*time.Millisecond + rand.N(200*time.Millisecond)):
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(migrateLeaseRenew)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_, _ = d.ExecContext(context.WithoutCancel(ctx), `UPDATE migrate_lock SET expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND WHERE id = 1 AND holder = ?`,
					int(migrateLease/time.Second), me)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		_ = Retry(context.WithoutCancel(ctx), 5, 20*time.Millisecond, func() error {
			_, err := d.ExecContext(context.WithoutCancel(ctx), `UPDATE migrate_lock SET holder = '', expires_at = '1970-01-01' WHERE id = 1 AND holder = ?`, me)
			return err
		})
	}, nil
}
