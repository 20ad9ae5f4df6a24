// Package db opens MySQL/MariaDB with the DSN flags Leadpipe relies on, applies
// migrations under a lock, runs transactions with deadlock retry and maps
// MySQL errors to domain errors at the store edge.
package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// Normalize forces the DSN flags every query in Leadpipe assumes: UTC
// times, parsed DATETIMEs, utf8mb4, strict SQL mode, client-side argument
// interpolation. READ COMMITTED is set per transaction by InTx (the session
// variable's name differs between MySQL and MariaDB).
func Normalize(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.Collation = "utf8mb4_unicode_ci"
	cfg.MultiStatements = false
	// Arguments are escaped into the statement by the driver (utf8mb4 is
	// safe for it): one round trip per query instead of prepare, execute
	// and close. A query whose placeholders don't match falls back to a
	// server-side prepare.
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	return cfg, nil
}

// Open connects, creating the database when it is missing and the user may.
func Open(ctx context.Context, dsn string) (*sqlx.DB, error) {
	cfg, err := Normalize(dsn)
	if err != nil {
		return nil, fmt.Errorf("db: parse DSN: %w", err)
	}
	if err := ensureDatabase(ctx, cfg); err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	sdb := sql.OpenDB(conn)
	sdb.SetMaxOpenConns(64)
	sdb.SetMaxIdleConns(64)
	sdb.SetConnMaxLifetime(30 * time.Minute)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	d := sqlx.NewDb(sdb, "mysql")
	if err := d.PingContext(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("db: ping %s: %w", cfg.Addr, err)
	}
	return d, nil
}

func ensureDatabase(ctx context.Context, cfg *mysql.Config) error {
	name := cfg.DBName
	if strings.ContainsAny(name, "`\x00") {
		return fmt.Errorf("db: bad database name %q", name)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	conn, err := mysql.NewConnector(admin)
	if err != nil {
		return err
	}
	sdb := sql.OpenDB(conn)
	defer sdb.Close()
	var one int
	err = sdb.QueryRowContext(ctx, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&one)
	if err == nil {
		return nil
	}
	if err != sql.ErrNoRows {
		return fmt.Errorf("db: connect to %s: %w", cfg.Addr, err)
	}
	if _, err := sdb.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return fmt.Errorf("db: database %q is missing and could not be created: %w", name, err)
	}
	return nil
}

// DropDatabase drops the named database (tests).
func DropDatabase(ctx context.Context, dsn string) error {
	cfg, err := Normalize(dsn)
	if err != nil {
		return err
	}
	name := cfg.DBName
	cfg.DBName = ""
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	sdb := sql.OpenDB(conn)
	defer sdb.Close()
	_, err = sdb.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	return err
}
