package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// OpenOneTrip opens a small second pool whose connections accept several
// statements in one query (the driver's multiStatements): a short
// transaction of its own sent in one round trip (OneTrip). Only OneTrip
// uses it; everything else goes through Open's pool, where a stray ';'
// stays an error.
func OpenOneTrip(ctx context.Context, dsn string, conns int) (*sqlx.DB, error) {
	cfg, addrs, err := normalize(dsn)
	if err != nil {
		return nil, fmt.Errorf("db: parse DSN: %w", err)
	}
	cfg.MultiStatements = true
	probe, err := connector(cfg, addrs, false)
	if err != nil {
		return nil, err
	}
	pdb := sql.OpenDB(probe)
	galera := isGalera(ctx, pdb)
	pdb.Close()
	return pool(cfg, addrs, galera, conns)
}

// OneTrip runs stmts as one transaction in one round trip on a pool from
// OpenOneTrip: "START TRANSACTION; s1; s2; …; COMMIT", the arguments
// interpolated by the driver (args holds each statement's in order). It
// returns each statement's rows affected and last insert id (the OK
// packet's: LAST_INSERT_ID(expr) hands a value back through it). A
// failure anywhere discards the connection, so a transaction it left
// open is rolled back by the server and never reaches another caller.
func OneTrip(ctx context.Context, d *sqlx.DB, stmts []string, args ...any) (affected, insertIDs []int64, err error) {
	for _, s := range stmts {
		if strings.Contains(s, ";") {
			return nil, nil, fmt.Errorf("db: a statement of OneTrip holds a ';': %.40q", s)
		}
	}
	q := "START TRANSACTION; " + strings.Join(stmts, "; ") + "; COMMIT"
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, nil, fmt.Errorf("db: OneTrip argument %d: %w", i, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	conn, err := d.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	var runErr error
	err = conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			runErr = errors.New("db: OneTrip needs the MySQL driver")
			return nil
		}
		res, err := ex.ExecContext(ctx, q, named)
		if err != nil {
			runErr = err
			return driver.ErrBadConn // closed: the server rolls back
		}
		r, ok := res.(mysql.Result)
		if !ok {
			runErr = errors.New("db: OneTrip needs the MySQL driver's results")
			return driver.ErrBadConn
		}
		all, ids := r.AllRowsAffected(), r.AllLastInsertIds()
		if len(all) != len(stmts)+2 || len(ids) != len(stmts)+2 {
			// Fewer results than statements: the pool does not run
			// several statements per query (not opened by OpenOneTrip).
			runErr = fmt.Errorf("db: OneTrip got %d results for %d statements (a pool from OpenOneTrip?)", len(all), len(stmts)+2)
			return driver.ErrBadConn
		}
		affected, insertIDs = all[1:len(all)-1], ids[1:len(ids)-1]
		return nil
	})
	if runErr != nil {
		return nil, nil, runErr
	}
	return affected, insertIDs, err
}
