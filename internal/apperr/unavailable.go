package apperr

import (
	"database/sql"
	"errors"
	"net"

	"github.com/go-sql-driver/mysql"
)

// IsUnavailable reports errors meaning the database cannot be reached, so
// the error mapping answers 503 with Retry-After rather than 500. It lives
// here, beside the codes, so that the one mapping (and anything else that
// classifies errors) needs no database package.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1040, 1053, 2002, 2003, 2006, 2013: // too many connections, shutdown, can't connect, gone away, lost
			return true
		case 1047: // a Galera node joining or without quorum: not ready
			return true
		}
	}
	return false
}
