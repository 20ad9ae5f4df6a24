package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/go-sql-driver/mysql"
)

// claimConn is one of the claimer's own connections with its server-side
// prepared statements, one per statement shape (a batch size). A prepared
// INSERT sends its payloads as binary parameters, which the server neither
// lexes nor escapes: the cheapest way for MariaDB and MySQL to take a
// batch. The statements live as long as the connection; a shape count per
// connection is bounded, so a process holds at most
// Workers × maxClaimStmts of the server's max_prepared_stmt_count.
type claimConn struct {
	conn   *sql.Conn
	stmts  map[string]*sql.Stmt
	opened time.Time
}

const (
	maxClaimStmts   = 256
	claimConnMaxAge = 10 * time.Minute // as the pool would recycle it
)

func openClaimConn(ctx context.Context, d *sql.DB) (*claimConn, error) {
	c, err := d.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &claimConn{conn: c, stmts: map[string]*sql.Stmt{}, opened: time.Now()}, nil
}

func (cc *claimConn) close() {
	for _, s := range cc.stmts {
		s.Close()
	}
	cc.stmts = nil
	cc.conn.Close()
}

// stmt returns the statement for q, prepared on first use; nil when the
// server refuses to prepare it (the caller then sends q as text).
func (cc *claimConn) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := cc.stmts[q]; ok {
		return s, nil
	}
	if len(cc.stmts) >= maxClaimStmts {
		for k, s := range cc.stmts {
			s.Close()
			delete(cc.stmts, k)
		}
	}
	s, err := cc.conn.PrepareContext(ctx, q)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) { // e.g. 1461, max_prepared_stmt_count reached
			return nil, nil
		}
		return nil, err
	}
	cc.stmts[q] = s
	return s, nil
}

func (cc *claimConn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	s, err := cc.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return cc.conn.ExecContext(ctx, q, args...)
	}
	return s.ExecContext(ctx, args...)
}

func (cc *claimConn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s, err := cc.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return cc.conn.QueryContext(ctx, q, args...)
	}
	return s.QueryContext(ctx, args...)
}

// serverError reports an error the server answered with, after which the
// connection is still good; anything else (a broken or timed-out
// connection) retires it.
func serverError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}
