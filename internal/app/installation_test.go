package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"leadpipe/internal/app"
	"leadpipe/internal/apptest"
	"leadpipe/internal/dbtest"
	"leadpipe/internal/jobs"
)

// Two installations (two MySQL databases) on one Redis database would take
// each other's batch tasks; the second one's start is refused, naming the
// first. A second process of the same installation starts.
func TestSecondInstallationOnTheSameRedisDatabaseDoesNotStart(t *testing.T) {
	first := apptest.New(t, "inst_first", apptest.Options{RedisDB: apptest.RedisApp})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()

	_, otherDSN := dbtest.New(t, "inst_other")
	_, err := app.Open(ctx, apptest.Config(t, otherDSN, apptest.Options{RedisDB: apptest.RedisApp}), log)
	if !errors.Is(err, jobs.ErrRedisTaken) {
		t.Fatalf("second installation: got %v, want ErrRedisTaken", err)
	}
	if !strings.Contains(err.Error(), "lptest_inst_first_") {
		t.Fatalf("the error should name the other installation's database: %v", err)
	}

	replica, err := app.Open(ctx, apptest.Config(t, first.DSN, apptest.Options{RedisDB: apptest.RedisApp}), log)
	if err != nil {
		t.Fatalf("a second process of the same installation: %v", err)
	}
	replica.Close()
}
