package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Addrs returns the addresses a DSN names: "user@tcp(a:3306,b:3306)/db"
// lists the nodes of a Galera cluster (docs/SCALING.md, "Database"), one
// address is the usual single server. The DSN is returned with the first
// address only, which the driver parses.
func Addrs(dsn string) (first string, addrs []string) {
	i := strings.Index(dsn, "tcp(")
	if i < 0 {
		return dsn, nil
	}
	j := strings.Index(dsn[i:], ")")
	if j < 0 {
		return dsn, nil
	}
	list := dsn[i+4 : i+j]
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return dsn, nil
	}
	return dsn[:i+4] + addrs[0] + dsn[i+j:], addrs
}

// nodeConnector opens each new connection on the first of its nodes that
// accepts it and, on a Galera cluster, is ready to serve (wsrep_ready: a
// joining node or one without quorum answers error 1047). A node that
// failed is tried last for a while, so a dead host's connect timeout is
// paid once, not by every new connection.
type nodeConnector struct {
	nodes  []driver.Connector
	addrs  []string
	galera bool

	mu     sync.Mutex
	failed []time.Time // per node, when it last failed
}

// nodeRetryAfter is how long a failed node goes to the back of the order.
const nodeRetryAfter = 5 * time.Second

// nodeConnectTimeout bounds one node's whole connection attempt (dial,
// handshake, session variables, readiness) while another node is left to
// try. The DSN's timeout bounds only the dial: a mariadbd that is starting
// again (a killed Galera node rejoining) accepts TCP connections before it
// answers them, and a connection to it would otherwise wait for the
// driver's read timeout, with the request behind it (docs/SCALING.md,
// "Database"). The last node tried has the caller's context alone, so a
// machine too loaded to connect in time still connects.
const nodeConnectTimeout = 2 * time.Second

func newNodeConnector(cfg *mysql.Config, addrs []string, galera bool) (*nodeConnector, error) {
	if len(addrs) == 0 {
		addrs = []string{cfg.Addr}
	}
	nc := &nodeConnector{addrs: addrs, galera: galera, failed: make([]time.Time, len(addrs))}
	for _, a := range addrs {
		c := cfg.Clone()
		c.Addr = a
		conn, err := mysql.NewConnector(c)
		if err != nil {
			return nil, err
		}
		nc.nodes = append(nc.nodes, conn)
	}
	return nc, nil
}

func (nc *nodeConnector) order() []int {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	var ok, late []int
	for i, t := range nc.failed {
		if !t.IsZero() && time.Since(t) < nodeRetryAfter {
			late = append(late, i)
		} else {
			ok = append(ok, i)
		}
	}
	return append(ok, late...)
}

func (nc *nodeConnector) mark(i int, failed bool) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if failed {
		nc.failed[i] = time.Now()
	} else {
		nc.failed[i] = time.Time{}
	}
}

// Connect implements driver.Connector.
func (nc *nodeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var errs []error
	order := nc.order()
	for k, i := range order {
		conn, err := nc.connect(ctx, i, k < len(order)-1)
		if err == nil {
			nc.mark(i, false)
			return conn, nil
		}
		nc.mark(i, true)
		errs = append(errs, fmt.Errorf("%s: %w", nc.addrs[i], err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// connect opens a connection on node i and, on a Galera cluster, checks
// that the node serves; bounded by nodeConnectTimeout when another node
// follows.
func (nc *nodeConnector) connect(ctx context.Context, i int, more bool) (driver.Conn, error) {
	if more {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, nodeConnectTimeout)
		defer cancel()
	}
	conn, err := nc.nodes[i].Connect(ctx)
	if err != nil {
		return nil, err
	}
	if nc.galera {
		if err := nodeReady(ctx, conn); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// Driver implements driver.Connector.
func (nc *nodeConnector) Driver() driver.Driver { return &mysql.MySQLDriver{} }

// errNodeNotReady is the MySQL error a Galera node gives while it cannot
// serve; apperr.IsUnavailable maps it to 503.
var errNodeNotReady = &mysql.MySQLError{Number: ErWsrepNotReady, Message: "WSREP has not yet prepared node for application use"}

// nodeReady asks a Galera node whether it serves (wsrep_ready = ON, which
// it is only when Synced in the primary component); a server without
// Galera (@@wsrep_on = 0) serves.
func nodeReady(ctx context.Context, conn driver.Conn) error {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT IF(@@wsrep_on, COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY'), 'OFF'), 'ON')`, nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return errNodeNotReady
	}
	s := ""
	switch x := v[0].(type) {
	case []byte:
		s = string(x)
	case string:
		s = x
	}
	if !strings.EqualFold(s, "ON") {
		return errNodeNotReady
	}
	return nil
}

// Ready pings the database and, on a Galera node, checks that the node
// serves (wsrep_ready): a joining node or one without quorum answers
// error 1047 to every query, so /readyz says 503 rather than 200. A
// server without these status tables (MySQL 8) is ready when it answers.
func Ready(ctx context.Context, d interface {
	PingContext(ctx context.Context) error
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) error {
	if err := d.PingContext(ctx); err != nil {
		return err
	}
	var v string
	err := d.QueryRowContext(ctx, `SELECT COALESCE((SELECT s.VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS s
		JOIN information_schema.GLOBAL_VARIABLES v ON v.VARIABLE_NAME = 'WSREP_ON' AND v.VARIABLE_VALUE = 'ON'
		WHERE s.VARIABLE_NAME = 'WSREP_READY'), 'ON')`).Scan(&v)
	if n := errNumber(err); n != 0 && n != ErWsrepNotReady {
		return nil
	}
	if err != nil {
		return err
	}
	if !strings.EqualFold(v, "ON") {
		return errNodeNotReady
	}
	return nil
}
