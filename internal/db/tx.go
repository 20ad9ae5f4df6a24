package db

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// Ext is what store helpers take so the same code runs on a DB or a Tx.
type Ext interface {
	sqlx.ExtContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

var (
	_ Ext = (*sqlx.DB)(nil)
	_ Ext = (*sqlx.Tx)(nil)
)

// SelectIn is SelectContext for a query with list arguments: sqlx.In
// expands each slice among args into as many placeholders.
func SelectIn(ctx context.Context, x Ext, dest any, query string, args ...any) error {
	q, a, err := sqlx.In(query, args...)
	if err != nil {
		return err
	}
	return x.SelectContext(ctx, dest, x.Rebind(q), a...)
}

// KeyValuesIn runs a SelectIn query whose rows are a key column k and a
// value column v, and maps each key to its value.
func KeyValuesIn[V any](ctx context.Context, x Ext, query string, args ...any) (map[string]V, error) {
	var rows []struct {
		K string `db:"k"`
		V V      `db:"v"`
	}
	if err := SelectIn(ctx, x, &rows, query, args...); err != nil {
		return nil, err
	}
	out := make(map[string]V, len(rows))
	for _, r := range rows {
		out[r.K] = r.V
	}
	return out, nil
}

// ExecIn is ExecContext for a statement with list arguments (SelectIn).
func ExecIn(ctx context.Context, x Ext, query string, args ...any) (sql.Result, error) {
	q, a, err := sqlx.In(query, args...)
	if err != nil {
		return nil, err
	}
	return x.ExecContext(ctx, x.Rebind(q), a...)
}

// GetIn is GetContext for a query with list arguments (SelectIn).
func GetIn(ctx context.Context, x Ext, dest any, query string, args ...any) error {
	q, a, err := sqlx.In(query, args...)
	if err != nil {
		return err
	}
	return x.GetContext(ctx, dest, x.Rebind(q), a...)
}

// ErrRetryTx is returned (wrapped) by store code that found its
// transaction raced by another one in a way a re-run resolves (e.g. a row
// it meant to insert was inserted meanwhile); InTx re-runs it.
var ErrRetryTx = errors.New("transaction raced; re-run it")

// Retryable reports whether err is a deadlock (1213, also what a Galera
// certification conflict gives at COMMIT), a lock wait timeout (1205) or a
// Galera node not ready (1047): the transaction was rolled back by the
// server and may be re-run.
func Retryable(err error) bool {
	if errors.Is(err, ErrRetryTx) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == ErLockDeadlock || me.Number == ErLockWaitTimeout || me.Number == ErWsrepNotReady
	}
	return false
}

// InTx runs fn in a transaction and commits; on deadlock, lock-wait
// timeout or a Galera certification conflict the whole function is re-run
// (up to 10 attempts), so fn must not have side effects outside the
// transaction. Ten, not five: on Galera, transactions on two nodes
// updating one hot row conflict at COMMIT, and five attempts left 1 of
// 240 such increments failed in the Galera test (docs/BENCHMARKS.md,
// "Galera"); the waits stay under 1.3 s each.
func InTx(ctx context.Context, d *sqlx.DB, fn func(tx *sqlx.Tx) error) error {
	return Retry(ctx, txAttempts, 5*time.Millisecond, func() error { return inTxOnce(ctx, d, fn) })
}

const txAttempts = 10

// Retry runs fn up to attempts times while it fails with a Retryable
// error, waiting before the n-th retry a random time up to base << (n-1):
// full jitter keeps racing retries from colliding again.
func Retry(ctx context.Context, attempts int, base time.Duration, fn func() error) error {
	var err error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(rand.Int64N(int64(base) << (attempt - 1)))):
			}
		}
		if err = fn(); err == nil || !Retryable(err) {
			return err
		}
	}
	return err
}

func inTxOnce(ctx context.Context, d *sqlx.DB, fn func(tx *sqlx.Tx) error) (err error) {
	// READ COMMITTED avoids the gap-lock deadlocks that REPEATABLE READ gives a
	// SELECT … FOR UPDATE on a missing key followed by an INSERT.
	tx, err := d.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
