package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"leadpipe/internal/jobs"
)

// A second installation on the same Redis database is refused with a
// message naming the first; processes of one installation share the claim
// (all of them at once); a released claim frees the database.
func TestSecondInstallationOnOneRedisDatabaseIsRefused(t *testing.T) {
	rc := testRedis(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	var wg sync.WaitGroup
	claims := make([]*jobs.InstallationClaim, 8)
	errs := make([]error, 8)
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claims[i], errs[i] = jobs.ClaimRedis(ctx, rc, "INSTALL-A", "database a on db:3306", log)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d of installation A: %v", i, err)
		}
	}

	_, err := jobs.ClaimRedis(ctx, rc, "INSTALL-B", "database b on db:3306", log)
	if !errors.Is(err, jobs.ErrRedisTaken) || !strings.Contains(err.Error(), "database a on db:3306") {
		t.Fatalf("installation B: got %v, want ErrRedisTaken naming database a", err)
	}

	// When A stops, its claim is given up at once (the others' refresh would
	// take it back within 10 s while any A process still ran).
	for _, c := range claims {
		c.Release(ctx)
	}
	b, err := jobs.ClaimRedis(ctx, rc, "INSTALL-B", "database b on db:3306", log)
	if err != nil {
		t.Fatalf("installation B after A released: %v", err)
	}
	defer b.Release(ctx)
	if _, err := jobs.ClaimRedis(ctx, rc, "INSTALL-A", "database a on db:3306", log); !errors.Is(err, jobs.ErrRedisTaken) {
		t.Fatalf("installation A after B took the database: %v", err)
	}
}
