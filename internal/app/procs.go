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
// delivery (CPU per lead at 3,300 deliveries/s on 2 cores: server 150 µs,
// worker 70 µs, MariaDB 260 µs), and in every deployment we ship (the
// README's run command, docker-compose) they share the machine with it.
// With one P per CPU each Go process keeps threads spinning for work and
// wakes them on every core; with half, on the 2-core machine, the server
// spent 13 % and the worker 13 % less CPU per lead at the same load and
// the acknowledgement's p99 fell (docs/BENCHMARKS.md, 2026-12-02).
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
