// Package dbtest gives each test package its own fresh, migrated MariaDB
// database on the real server, dropped at the end.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
)

// BaseDSN is the server tests use; LEADPIPE_TEST_MYSQL_DSN overrides it.
func BaseDSN() string {
	if v := os.Getenv("LEADPIPE_TEST_MYSQL_DSN"); v != "" {
		return v
	}
	return "root@tcp(127.0.0.1:3306)/leadpipe_test?parseTime=true&loc=UTC"
}

// DSN returns the base DSN pointed at a new unique database name.
func DSN(t testing.TB, prefix string) string {
	cfg, err := mysql.ParseDSN(BaseDSN())
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	cfg.DBName = fmt.Sprintf("lptest_%s_%s", strings.ReplaceAll(prefix, "-", "_"), hex.EncodeToString(b[:]))
	return cfg.FormatDSN()
}

// New creates, migrates and returns a fresh database; it is dropped when
// the test (or benchmark) ends.
func New(t testing.TB, prefix string) (*sqlx.DB, string) {
	t.Helper()
	ctx := context.Background()
	dsn := DSN(t, prefix)
	d, err := db.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("dbtest: open (is MariaDB running on 127.0.0.1:3306?): %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if os.Getenv("LEADPIPE_TEST_KEEP_DB") == "" {
			_ = db.DropDatabase(context.Background(), dsn)
		}
	})
	if err := db.Migrate(ctx, d, nil); err != nil {
		t.Fatalf("dbtest: migrate: %v", err)
	}
	return d, dsn
}
