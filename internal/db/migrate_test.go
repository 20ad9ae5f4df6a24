package db_test

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	"leadpipe/internal/db"
	"leadpipe/internal/dbtest"
)

func schema(t *testing.T, dsn string) []string {
	t.Helper()
	d, err := db.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var cols []string
	err = d.SelectContext(context.Background(), &cols, `
		SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME, ':', COLUMN_TYPE)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()`)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(cols)
	return cols
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	ctx := context.Background()
	// Reference: one clean run.
	_, refDSN := dbtest.New(t, "mig_ref")
	want := schema(t, refDSN)
	if len(want) < 20 {
		t.Fatalf("schema too small: %d columns", len(want))
	}

	// Same database migrated again: no change, no error.
	d, err := db.Open(ctx, refDSN)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, d, nil); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	d.Close()
	if got := schema(t, refDSN); !slices.Equal(got, want) {
		t.Fatalf("schema changed after a second run")
	}

	// Four "replicas" migrating a fresh database at once.
	dsn := dbtest.DSN(t, "mig_par")
	t.Cleanup(func() { _ = db.DropDatabase(context.Background(), dsn) })
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := db.Open(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer d.Close()
			errs <- db.Migrate(ctx, d, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	if got := schema(t, dsn); !slices.Equal(got, want) {
		t.Fatalf("concurrent schema differs from reference")
	}
	// Every migration recorded exactly once.
	d2, _ := db.Open(ctx, dsn)
	defer d2.Close()
	var dups int
	if err := d2.GetContext(ctx, &dups, `SELECT COUNT(*) FROM (SELECT version_id FROM goose_db_version GROUP BY version_id HAVING COUNT(*) > 1) x`); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Fatalf("%d migrations recorded twice", dups)
	}
}
