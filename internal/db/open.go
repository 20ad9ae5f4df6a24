// Package db opens MySQL/MariaDB with the DSN flags Leadpipe relies on, applies
// migrations under a lock, runs transactions with deadlock retry and maps
// MySQL errors to domain errors at the store edge.
package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
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
	cfg, _, err := normalize(dsn)
	return cfg, err
}

// normalize is Normalize that also returns the node addresses of a DSN
// naming several (Addrs).
func normalize(dsn string) (*mysql.Config, []string, error) {
	first, addrs := Addrs(dsn)
	cfg, err := mysql.ParseDSN(first)
	if err != nil {
		return nil, nil, err
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
	// Times are sent to the microsecond, DATETIME(6)'s precision. Go's
	// nanoseconds, interpolated as nine fraction digits, make MariaDB read
	// the literal as no DATETIME it can compare with an index: a range on
	// created_at then scans every row of the tenant (2.9 s against 59 ms
	// for 30 days of 1,000,000 leads, docs/BENCHMARKS.md).
	if !strings.Contains(dsn, "timeTruncate=") {
		if err := cfg.Apply(mysql.TimeTruncate(time.Microsecond)); err != nil {
			return nil, nil, err
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	return cfg, addrs, nil
}

// Open connects, creating the database when it is missing and the user may.
// A DSN may name several nodes of a Galera cluster ("tcp(a:3306,b:3306)"):
// each new connection goes to the first that is up and ready (Addrs).
func Open(ctx context.Context, dsn string) (*sqlx.DB, error) {
	cfg, addrs, err := normalize(dsn)
	if err != nil {
		return nil, fmt.Errorf("db: parse DSN: %w", err)
	}
	galera, err := ensureDatabase(ctx, cfg, addrs)
	if err != nil {
		return nil, err
	}
	d, err := pool(cfg, addrs, galera, 64)
	if err != nil {
		return nil, err
	}
	if err := d.PingContext(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("db: ping %s: %w", cfg.Addr, err)
	}
	return d, nil
}

// pool opens a pool of at most conns connections without connecting.
func pool(cfg *mysql.Config, addrs []string, galera bool, conns int) (*sqlx.DB, error) {
	conn, err := connector(cfg, addrs, galera)
	if err != nil {
		return nil, err
	}
	sdb := sql.OpenDB(conn)
	sdb.SetMaxOpenConns(conns)
	sdb.SetMaxIdleConns(conns)
	sdb.SetConnMaxLifetime(30 * time.Minute)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	return sqlx.NewDb(sdb, "mysql"), nil
}

// connector opens the pool's connections. On a Galera cluster every
// session waits, before each read, until its node has applied what the
// cluster committed before it (wsrep_sync_wait=1): a row written through
// another node is never "not found" here. A DSN that sets
// wsrep_sync_wait itself keeps its value.
func connector(cfg *mysql.Config, addrs []string, galera bool) (driver.Connector, error) {
	if galera {
		cfg = cfg.Clone()
		if _, set := cfg.Params["wsrep_sync_wait"]; !set {
			cfg.Params["wsrep_sync_wait"] = "1"
		}
	}
	if len(addrs) <= 1 && !galera {
		return mysql.NewConnector(cfg)
	}
	// A list of nodes is a Galera cluster's: skip a node that is not
	// ready even before @@wsrep_on was read (ensureDatabase).
	return newNodeConnector(cfg, addrs, galera || len(addrs) > 1)
}

// isGalera reports whether the server replicates through Galera
// (@@wsrep_on; a server without the variable is not).
func isGalera(ctx context.Context, sdb *sql.DB) bool {
	var on int
	return sdb.QueryRowContext(ctx, "SELECT @@wsrep_on").Scan(&on) == nil && on == 1
}

// ensureDatabase creates the database when it is missing and reports
// whether the server is a Galera node.
func ensureDatabase(ctx context.Context, cfg *mysql.Config, addrs []string) (galera bool, err error) {
	name := cfg.DBName
	if strings.ContainsAny(name, "`\x00") {
		return false, fmt.Errorf("db: bad database name %q", name)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	conn, err := connector(admin, addrs, false)
	if err != nil {
		return false, err
	}
	sdb := sql.OpenDB(conn)
	defer sdb.Close()
	var one int
	err = sdb.QueryRowContext(ctx, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&one)
	if err != nil && err != sql.ErrNoRows {
		return false, fmt.Errorf("db: connect to %s: %w", cfg.Addr, err)
	}
	galera = isGalera(ctx, sdb)
	if err == nil {
		return galera, nil
	}
	if _, err := sdb.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return false, fmt.Errorf("db: database %q is missing and could not be created: %w", name, err)
	}
	return galera, nil
}

// DropDatabase drops the named database (tests).
func DropDatabase(ctx context.Context, dsn string) error {
	cfg, addrs, err := normalize(dsn)
	if err != nil {
		return err
	}
	name := cfg.DBName
	cfg.DBName = ""
	conn, err := connector(cfg, addrs, false)
	if err != nil {
		return err
	}
	sdb := sql.OpenDB(conn)
	defer sdb.Close()
	_, err = sdb.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	return err
}
