package db

import (
	"database/sql"
	"errors"

	"github.com/go-sql-driver/mysql"

	"leadpipe/internal/apperr"
)

// MySQL error numbers Leadpipe acts on.
const (
	ErDupEntry        = 1062
	ErLockDeadlock    = 1213
	ErLockWaitTimeout = 1205
	ErDataTooLong     = 1406
	// ErWsrepNotReady: a Galera node that is joining or has lost quorum
	// ("WSREP has not yet prepared node for application use").
	ErWsrepNotReady = 1047
)

// IsDuplicate reports a unique-key violation.
func IsDuplicate(err error) bool { return errNumber(err) == ErDupEntry }

func errNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// MapErr translates no-rows and duplicate-key errors into domain errors
// with the given client-safe messages; other errors pass through, with an
// unreachable database becoming Unavailable.
func MapErr(err error, notFound, duplicate string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return apperr.New(apperr.NotFound, "%s", notFound)
	case IsDuplicate(err):
		return apperr.Wrap(apperr.Conflict, err, "%s", duplicate)
	case apperr.IsUnavailable(err):
		return apperr.Wrap(apperr.Unavailable, err, "database unavailable")
	}
	return err
}
