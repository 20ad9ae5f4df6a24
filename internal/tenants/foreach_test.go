package tenants_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"leadpipe/internal/dbtest"
	"leadpipe/internal/tenants"
)

// ForEach visits every tenant exactly once, in id order, across pages, and
// stops at the first error its function returns.
func TestForEachVisitsEveryTenantOnce(t *testing.T) {
	d, _ := dbtest.New(t, "tenants_foreach")
	ctx := context.Background()
	const n = 1234 // more than two pages
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("01HTENANT%017d", i)
		if _, err := d.ExecContext(ctx, `INSERT INTO tenants (id, slug, name, created_at) VALUES (?, ?, ?, ?)`,
			want[i], fmt.Sprintf("t-%d", i), "T", time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := tenants.ForEach(ctx, d, func(id string) error { got = append(got, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("visited %d tenants, want %d", len(got), n)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("visit %d: %s, want %s", i, got[i], want[i])
		}
	}

	stop := errors.New("stop")
	visits := 0
	err := tenants.ForEach(ctx, d, func(id string) error {
		visits++
		if visits == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || visits != 3 {
		t.Fatalf("after an error: %v, %d visits", err, visits)
	}
}
