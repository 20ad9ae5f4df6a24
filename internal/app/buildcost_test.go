package app_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackagesDoNotRecompileTheRedisClient: go-redis v9.23 gave its client
// a weak.Pointer[Client] field, and since then every package whose code
// sees Asynq's types (20 of ours) compiled the client's 1,473 promoted
// methods again as wrappers of the generic's shape type: two thirds of
// what our packages cost to compile, and 35 s of a fresh clone's first
// start (docs/BENCHMARKS.md, "Start-up"). This builds one small package
// that imports Asynq and counts those wrappers in its object file, so a
// `go get -u` that brings them back fails here.
func TestPackagesDoNotRecompileTheRedisClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package with the go command")
	}
	archive := filepath.Join(t.TempDir(), "idempotency.a")
	build := exec.Command("go", "build", "-trimpath", "-o", archive, "leadpipe/internal/idempotency")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "tool", "nm", "-type", archive).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, " T ") && strings.Contains(line, "go-redis/v9.baseClient") {
			n++
		}
	}
	if n > 0 {
		t.Fatalf("internal/idempotency compiles %d functions of go-redis's client (wrappers of a generic's shape type): "+
			"the go-redis version in go.mod brings them into every package that sees Asynq's types; keep the version go.mod names", n)
	}
}
