package db

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
)

// Reads chooses where a read that tolerates lag runs: lists, charts and
// exports go to a replica (LEADPIPE_MYSQL_READ_DSN) while it is reachable,
// replicating, and no more than MaxLag behind; otherwise, and when a query
// on it fails for want of a connection, to the primary. A read that must
// see its own write (a lead after its PATCH, a merge, an import's
// progress) never goes through Reads: it uses the primary pool directly.
// docs/SCALING.md, "Database".
type Reads struct {
	Primary *sqlx.DB
	Replica *sqlx.DB // nil: every read on the primary
	MaxLag  time.Duration

	mu      sync.Mutex
	checked time.Time
	usable  bool
}

// readsCheckEvery is how long a replica's health is trusted.
const readsCheckEvery = time.Second

// NewReads returns the read router; replica may be nil.
func NewReads(primary, replica *sqlx.DB, maxLag time.Duration) *Reads {
	return &Reads{Primary: primary, Replica: replica, MaxLag: maxLag}
}

// Run runs fn on the replica when it is usable, else on the primary; a
// replica that fails fn for want of a connection is marked unusable and
// fn runs again on the primary (fn must be a read).
func (r *Reads) Run(ctx context.Context, fn func(d *sqlx.DB) error) error {
	if r == nil {
		return errors.New("db: no read pool")
	}
	if r.Replica == nil || !r.replicaUsable(ctx) {
		return fn(r.Primary)
	}
	err := fn(r.Replica)
	if err == nil || !replicaDown(err) || ctx.Err() != nil {
		return err
	}
	r.mu.Lock()
	r.usable, r.checked = false, time.Now()
	r.mu.Unlock()
	return fn(r.Primary)
}

// OnReplica reports whether reads go to the replica now (tests, /readyz).
func (r *Reads) OnReplica(ctx context.Context) bool {
	return r != nil && r.Replica != nil && r.replicaUsable(ctx)
}

// replicaDown: the replica could not be reached or could not serve the
// query (any MySQL error: a replica still applying a migration may lack a
// table or column the primary has).
func replicaDown(err error) bool { return apperr.IsUnavailable(err) || errNumber(err) != 0 }

func (r *Reads) replicaUsable(ctx context.Context) bool {
	r.mu.Lock()
	if time.Since(r.checked) < readsCheckEvery {
		ok := r.usable
		r.mu.Unlock()
		return ok
	}
	r.mu.Unlock()
	// One check at a time would be tidier; a few concurrent ones each
	// second cost nothing and never block a read behind another.
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	lag, err := ReplicaLag(cctx, r.Replica)
	ok := err == nil && lag >= 0 && (r.MaxLag <= 0 || lag <= r.MaxLag)
	r.mu.Lock()
	r.usable, r.checked = ok, time.Now()
	r.mu.Unlock()
	return ok
}

// ReplicaLag is the replica's Seconds_Behind_Master; -1 when it is not
// replicating (no replication configured, or its IO or SQL thread
// stopped: how far behind it falls is then unbounded).
func ReplicaLag(ctx context.Context, d *sqlx.DB) (time.Duration, error) {
	rows, err := d.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	if !rows.Next() {
		return -1, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return 0, err
	}
	get := func(name string) sql.NullString {
		for i, c := range cols {
			if c == name {
				return vals[i]
			}
		}
		return sql.NullString{}
	}
	if get("Slave_IO_Running").String != "Yes" || get("Slave_SQL_Running").String != "Yes" {
		return -1, nil
	}
	behind := get("Seconds_Behind_Master")
	if !behind.Valid {
		return -1, nil
	}
	d2, err := time.ParseDuration(behind.String + "s")
	if err != nil {
		return -1, nil
	}
	return d2, nil
}

// OpenReplica opens the read replica's pool without connecting: a replica
// that is down when the process starts is read once it answers, and the
// primary serves meanwhile.
func OpenReplica(dsn string) (*sqlx.DB, error) {
	cfg, addrs, err := normalize(dsn)
	if err != nil {
		return nil, err
	}
	return pool(cfg, addrs, false, 32)
}
