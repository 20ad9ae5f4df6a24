//go:build pprof

package main

// Built with -tags pprof (benchingest -e2e -profile): the profiler on
// LEADPIPE_PPROF_ADDR.
import _ "leadpipe/internal/pprofserve"
