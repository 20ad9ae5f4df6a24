package app_test

import (
	"runtime"
	"testing"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
)

// LEADPIPE_PROCS: shared halves Go's default (at least 1), all keeps it, a
// number is taken as it is, and a GOMAXPROCS variable wins over all three.
// Calling it again starts from Go's default, not from the last setting.
func TestSetProcs(t *testing.T) {
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.SetDefaultGOMAXPROCS() })
	noEnv := func(string) string { return "" }
	for _, c := range []struct {
		name  string
		procs int
		want  int
	}{
		{"shared", config.ProcsShared, max(1, def/2)},
		{"shared again", config.ProcsShared, max(1, def/2)},
		{"all", config.ProcsAll, def},
		{"3", 3, 3},
	} {
		if got := app.SetProcs(&config.Config{Procs: c.procs}, noEnv); got != c.want || runtime.GOMAXPROCS(0) != c.want {
			t.Errorf("%s: SetProcs = %d, GOMAXPROCS %d, want %d (Go's default %d)", c.name, got, runtime.GOMAXPROCS(0), c.want, def)
		}
	}
	runtime.GOMAXPROCS(5) // as Go applies GOMAXPROCS=5 at start
	withEnv := func(k string) string {
		if k == "GOMAXPROCS" {
			return "5"
		}
		return ""
	}
	if got := app.SetProcs(&config.Config{Procs: config.ProcsShared}, withEnv); got != 5 {
		t.Errorf("with GOMAXPROCS=5 set: %d", got)
	}
}
