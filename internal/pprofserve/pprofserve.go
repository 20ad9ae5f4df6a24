// Package pprofserve serves net/http/pprof on LEADPIPE_PPROF_ADDR. Only
// binaries built with the pprof tag import it (cmd/server and cmd/worker's
// pprof.go), so a deployed build never carries the profiler; benchingest
// -e2e -profile builds with the tag to profile both processes under load.
package pprofserve

import (
	"fmt"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

func init() {
	addr := os.Getenv("LEADPIPE_PPROF_ADDR")
	if addr == "" {
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			fmt.Fprintln(os.Stderr, "pprof:", err)
		}
	}()
}
