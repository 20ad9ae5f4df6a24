package app

import (
	"runtime"

	"leadpipe/internal/config"
)

// SetProcs sets how many CPUs run this process's Go code at once
// (GOMAXPROCS) from LEADPIPE_PROCS, unless the GOMAXPROCS variable is set
// (then Go already applied it), and returns the value in effect.
//
// The default, shared, is half of the CPUs, at least one. The server and
// the worker are front ends to MySQL, which does most of the work of a
// delivery, and in every deployment we ship (scripts/run.sh,
// docker-compose) they share the machine with it. With one P per CPU each
// Go process keeps threads spinning for work and wakes them on every core;
// with half, each spends less CPU per lead and the acknowledgement's p99
// falls (docs/BENCHMARKS.md, "Settings and the numbers behind them").
func SetProcs(cfg *config.Config, getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	// Go's default: every CPU of the machine, or the container's CPU
	// limit (and kept up to date with it).
	runtime.SetDefaultGOMAXPROCS()
	switch n := cfg.Procs; {
	case n == config.ProcsShared:
		runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)/2))
	case n > 0:
		runtime.GOMAXPROCS(n)
	}
	return runtime.GOMAXPROCS(0)
}
