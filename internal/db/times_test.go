package db_test

import (
	"context"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
)

// A time with nanoseconds (any time.Now()) bounds an index range like any
// other: the connection sends it to the microsecond. Sent with nine
// fraction digits, MariaDB used only the index's first column and read
// every row of the tenant (the 30-day report took 2.9 s instead of 59 ms).
func TestTimesBoundIndexRanges(t *testing.T) {
	ctx := context.Background()
	d, _ := dbtest.New(t, "db_times")
	if _, err := d.ExecContext(ctx, `CREATE TABLE times (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, tenant_id CHAR(26) NOT NULL,
		created_at DATETIME(6) NOT NULL, KEY ix (tenant_id, created_at))`); err != nil {
		t.Fatal(err)
	}
	const ten = "01HTENANT0000000000000000A"
	if _, err := d.ExecContext(ctx, `INSERT INTO times (tenant_id, created_at)
		SELECT ?, '2026-01-01' + INTERVAL seq MINUTE FROM seq_1_to_5000`, ten); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `ANALYZE TABLE times`); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	var plan struct {
		ID           int     `db:"id"`
		SelectType   string  `db:"select_type"`
		Table        string  `db:"table"`
		Type         string  `db:"type"`
		PossibleKeys *string `db:"possible_keys"`
		Key          *string `db:"key"`
		KeyLen       *string `db:"key_len"`
		Ref          *string `db:"ref"`
		Rows         int64   `db:"rows"`
		Extra        *string `db:"Extra"`
	}
	if err := d.GetContext(ctx, &plan, `EXPLAIN SELECT COUNT(*) FROM times FORCE INDEX (ix) WHERE tenant_id = ? AND created_at >= ? AND created_at < ?`,
		ten, from, from.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if plan.Type != "range" || plan.Rows > 200 {
		t.Fatalf("a range of times read as type %q, %d rows: want a range of about 60", plan.Type, plan.Rows)
	}
	// Stored to the microsecond, as MariaDB itself cuts a longer fraction.
	if _, err := d.ExecContext(ctx, `INSERT INTO times (tenant_id, created_at) VALUES ('b', ?)`, from); err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := d.GetContext(ctx, &got, `SELECT created_at FROM times WHERE tenant_id = 'b'`); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(from.Truncate(time.Microsecond)) {
		t.Fatalf("stored %v, want %v", got, from.Truncate(time.Microsecond))
	}
}
