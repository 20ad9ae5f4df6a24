package db_test

import (
	"context"
	"testing"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
)

// OneTrip runs its statements as one transaction: the results of each,
// nothing of a failed one left behind (its connection is discarded, so
// the server rolls back), and a clear error from a pool that does not
// take several statements per query.
func TestOneTrip(t *testing.T) {
	ctx := context.Background()
	d, dsn := dbtest.New(t, "db_onetrip")
	one, err := db.OpenOneTrip(ctx, dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := d.Exec(`CREATE TABLE onetrip (tenant_id CHAR(26) NOT NULL, id INT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (tenant_id, id))`); err != nil {
		t.Fatal(err)
	}
	const ten = "01HTENANT0000000000000000A"
	const ins = `INSERT INTO onetrip (tenant_id, id, n) VALUES (?, ?, ?)`
	const bump = `UPDATE onetrip SET n = LAST_INSERT_ID(n + ?) WHERE tenant_id = ? AND id = ?`
	affected, ids, err := db.OneTrip(ctx, one, []string{ins, bump, bump}, ten, 1, 10, 5, ten, 1, 7, ten, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(affected) != 3 || affected[0] != 1 || affected[1] != 1 || affected[2] != 0 || ids[1] != 15 {
		t.Fatalf("affected %v, insert ids %v", affected, ids)
	}

	// The second statement fails (duplicate key): the first is not kept.
	if _, _, err := db.OneTrip(ctx, one, []string{ins, ins}, ten, 2, 1, ten, 1, 1); err == nil || !db.IsDuplicate(err) {
		t.Fatalf("want a duplicate-key error, got %v", err)
	}
	for i := 0; i < 3; i++ { // every connection of the pool is clean again
		if _, _, err := db.OneTrip(ctx, one, []string{bump}, 1, ten, 1); err != nil {
			t.Fatal(err)
		}
	}
	var rows, n int64
	if err := d.Get(&rows, `SELECT COUNT(*) FROM onetrip WHERE tenant_id = ?`, ten); err != nil || rows != 1 {
		t.Fatalf("%d rows (%v), want 1: the failed transaction left its first row", rows, err)
	}
	if err := d.Get(&n, `SELECT n FROM onetrip WHERE tenant_id = ? AND id = 1`, ten); err != nil || n != 18 {
		t.Fatalf("n %d (%v), want 18", n, err)
	}

	// Open's pool refuses several statements per query: an error, no row.
	if _, _, err := db.OneTrip(ctx, d, []string{ins}, ten, 3, 1); err == nil {
		t.Fatal("a pool without multiStatements ran OneTrip")
	}
	if _, _, err := db.OneTrip(ctx, one, []string{"SELECT 1; DROP TABLE onetrip"}); err == nil {
		t.Fatal("a statement with ';' was sent")
	}
	if err := d.Get(&rows, `SELECT COUNT(*) FROM onetrip WHERE tenant_id = ?`, ten); err != nil || rows != 1 {
		t.Fatalf("%d rows (%v), want 1", rows, err)
	}
}
