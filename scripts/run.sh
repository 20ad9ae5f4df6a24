#!/usr/bin/env bash
# Quick start: brings up MariaDB and Redis if needed, then runs Leadpipe
# with a demo tenant on http://localhost:8080 (worker in process).
# The server is built into bin/ and reused: go build relinks it only when
# a source changed, so a second start skips the build. -trimpath keeps the
# checkout's folder out of the build cache's keys, so another clone of a
# commit built before (or a pull that changed a few packages) compiles
# only what changed (docs/BENCHMARKS.md, "Start-up").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
go build -trimpath -o bin/server ./cmd/server
exec bin/server demo "$@"
