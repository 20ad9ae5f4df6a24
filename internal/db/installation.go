package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/ids"
)

// InstallationID returns the id of the installation this database belongs
// to, creating it on first use. Every process on the database (servers,
// workers, replicas) reads the same id; concurrent first starts agree on
// the row the primary key let in.
func InstallationID(ctx context.Context, d *sqlx.DB) (string, error) {
	if _, err := d.ExecContext(ctx, `INSERT IGNORE INTO installation (k, id, created_at) VALUES ('self', ?, ?)`,
		ids.New(), time.Now().UTC()); err != nil {
		return "", fmt.Errorf("installation id: %w", err)
	}
	var id string
	if err := d.GetContext(ctx, &id, `SELECT id FROM installation WHERE k = 'self'`); err != nil {
		return "", fmt.Errorf("installation id: %w", err)
	}
	return id, nil
}
