package db_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
)

// Galera replicates row events by primary key: a table without one is
// slow to apply and may diverge between nodes (docs/SCALING.md,
// "Database"). Every table of a migrated database has one, and every
// table is InnoDB (the only engine Galera replicates).
func TestEveryTableHasAPrimaryKey(t *testing.T) {
	d, _ := dbtest.New(t, "pk")
	ctx := context.Background()
	var rows []struct {
		Table  string `db:"TABLE_NAME"`
		Engine string `db:"ENGINE"`
		HasPK  int    `db:"has_pk"`
	}
	if err := d.SelectContext(ctx, &rows, `
		SELECT t.TABLE_NAME, t.ENGINE,
			EXISTS (SELECT 1 FROM information_schema.TABLE_CONSTRAINTS c
				WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME AND c.CONSTRAINT_TYPE = 'PRIMARY KEY') AS has_pk
		FROM information_schema.TABLES t
		WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE'`); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("only %d tables: not a migrated database?", len(rows))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Table] = true
		if r.HasPK != 1 {
			t.Errorf("table %s has no primary key (Galera needs one on every table)", r.Table)
		}
		if !strings.EqualFold(r.Engine, "InnoDB") {
			t.Errorf("table %s uses engine %s; Galera replicates InnoDB only", r.Table, r.Engine)
		}
	}
	for _, must := range []string{"goose_db_version", "migrate_lock", "deliveries", "leads"} {
		if !seen[must] {
			t.Errorf("table %s missing from the walk", must)
		}
	}
}

func TestAddrs(t *testing.T) {
	for _, c := range []struct {
		in, first string
		addrs     []string
	}{
		{"root@tcp(127.0.0.1:3306)/x?parseTime=true", "root@tcp(127.0.0.1:3306)/x?parseTime=true", []string{"127.0.0.1:3306"}},
		{"u:p@tcp(a:1, b:2,c:3)/x", "u:p@tcp(a:1)/x", []string{"a:1", "b:2", "c:3"}},
		{"u@unix(/run/s.sock)/x", "u@unix(/run/s.sock)/x", nil},
	} {
		first, addrs := db.Addrs(c.in)
		if first != c.first || strings.Join(addrs, "|") != strings.Join(c.addrs, "|") {
			t.Errorf("Addrs(%q) = %q, %q; want %q, %q", c.in, first, addrs, c.first, c.addrs)
		}
	}
}

// nodeInFront makes a fresh database (dropped when the test ends) and
// returns a function that lists another node before its one address in
// its DSN. It skips the test when the test DSN is not one TCP address.
func nodeInFront(t *testing.T, name string) func(node string) string {
	t.Helper()
	dsn := dbtest.DSN(t, name)
	t.Cleanup(func() { _ = db.DropDatabase(context.Background(), dsn) })
	first, addrs := db.Addrs(dsn)
	if len(addrs) != 1 {
		t.Skipf("test DSN %q is not a single TCP address", dsn)
	}
	return func(node string) string {
		return strings.Replace(first, "tcp("+addrs[0]+")", "tcp("+node+","+addrs[0]+")", 1)
	}
}

// A DSN listing several addresses connects through the first that
// answers: a dead node in front of a live one costs nothing but a
// refused connection.
func TestOpenFailsOverToTheNextAddress(t *testing.T) {
	withFront := nodeInFront(t, "failover")
	// Port 1 on loopback refuses at once.
	multi := withFront("127.0.0.1:1")
	d, err := db.Open(context.Background(), multi)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := 0; i < 5; i++ {
		var one int
		if err := d.Get(&one, "SELECT 1"); err != nil || one != 1 {
			t.Fatalf("query through the second address: %v", err)
		}
	}
}

// A node that accepts TCP connections but does not answer them (a
// mariadbd starting again after a kill, before it serves) costs a new
// connection at most the per-node connect bound, not the driver's read
// timeout: the next address serves it.
func TestOpenSkipsANodeThatAcceptsButDoesNotAnswer(t *testing.T) {
	withFront := nodeInFront(t, "failover_silent")
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	multi := withFront(silent.Addr().String())
	start := time.Now()
	d, err := db.Open(context.Background(), multi)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var one int
	if err := d.Get(&one, "SELECT 1"); err != nil || one != 1 {
		t.Fatalf("query through the second address: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("opening past a silent node took %s", took)
	}
}

func TestReadyOnAPlainServer(t *testing.T) {
	d, _ := dbtest.New(t, "ready")
	if err := db.Ready(context.Background(), d); err != nil {
		t.Fatalf("a plain MariaDB is ready: %v", err)
	}
}

// A node that is joining or has lost quorum (1047) is retried and, when
// that does not help, a 503, never a 500.
func TestWsrepNotReadyIsRetryableAndUnavailable(t *testing.T) {
	err := fmt.Errorf("list: %w", &mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"})
	if !db.Retryable(err) {
		t.Error("1047 is not retryable")
	}
	if !apperr.IsUnavailable(err) {
		t.Error("1047 is not unavailable")
	}
	if got := db.MapErr(err, "nf", "dup"); !apperr.Is(got, apperr.Unavailable) {
		t.Errorf("MapErr(1047) = %v, want Unavailable", got)
	}
}

// Without a replica, or with one that does not replicate (the test
// server is no replica), reads run on the primary.
func TestReadsWithoutAUsableReplica(t *testing.T) {
	d, dsn := dbtest.New(t, "reads")
	ctx := context.Background()
	var got *sqlx.DB
	if err := db.NewReads(d, nil, 10*time.Second).Run(ctx, func(x *sqlx.DB) error { got = x; return nil }); err != nil || got != d {
		t.Fatalf("no replica: ran on %p (err %v), want the primary %p", got, err, d)
	}
	notReplicating, err := db.OpenReplica(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer notReplicating.Close()
	r := db.NewReads(d, notReplicating, 10*time.Second)
	if r.OnReplica(ctx) {
		t.Fatal("a server that does not replicate was taken for a usable replica")
	}
	if err := r.Run(ctx, func(x *sqlx.DB) error { got = x; return nil }); err != nil || got != d {
		t.Fatalf("not replicating: ran on %p (err %v), want the primary", got, err)
	}
	// A replica that cannot be reached at all.
	down, err := db.OpenReplica("root@tcp(127.0.0.1:1)/x")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if db.NewReads(d, down, 10*time.Second).OnReplica(ctx) {
		t.Fatal("an unreachable replica was taken for usable")
	}
}

// A process that died holding the migration lease blocks the others only
// until the lease expires; a live holder renews it.
func TestMigrationLeaseOfADeadHolderExpires(t *testing.T) {
	d, _ := dbtest.New(t, "lease")
	ctx := context.Background()
	if _, err := d.Exec(`UPDATE migrate_lock SET holder = 'dead-process', expires_at = UTC_TIMESTAMP(3) + INTERVAL 2 SECOND WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := db.Migrate(ctx, d, nil); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 1500*time.Millisecond || waited > 10*time.Second {
		t.Fatalf("migrate waited %s for a lease expiring in 2 s", waited)
	}
	var holder string
	if err := d.Get(&holder, `SELECT holder FROM migrate_lock WHERE id = 1`); err != nil || holder != "" {
		t.Fatalf("lease left held by %q (%v)", holder, err)
	}
}
