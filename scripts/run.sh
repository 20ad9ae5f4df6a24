#!/usr/bin/env bash
# Quick start: brings up MariaDB and Redis if needed, then runs Leadpipe
# with a demo tenant on http://localhost:8080 (worker in process).
# The server is built into bin/ while the services come up, and reused:
# - go build relinks it only when a source changed, so a second start in
#   the same checkout skips the build;
# - a clean checkout of a commit built before (a fresh clone, a checkout
#   back) copies that build from ~/.cache/leadpipe instead of linking
#   again (the key is the commit's tree, the Go version and its settings);
# - -trimpath keeps the checkout's folder out of the build cache's keys,
#   so another clone of a commit built before (or a pull that changed a
#   few packages) compiles only what changed.
# docs/BENCHMARKS.md, "Start-up", has the times.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/services.sh &
services=$!

mkdir -p bin
cache=""
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ -z "$(git status --porcelain --untracked-files=normal 2>/dev/null)" ]; then
  key="$(git rev-parse 'HEAD^{tree}')-$(go env GOVERSION GOOS GOARCH GOFLAGS CGO_ENABLED | tr '\n' '_' | tr -c 'A-Za-z0-9._-' '_')"
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/leadpipe/server-$key"
fi
if [ -n "$cache" ] && [ -x "$cache" ] && [ ! -e bin/server ]; then
  cp "$cache" bin/server
else
  go build -trimpath -o bin/server ./cmd/server
  if [ -n "$cache" ] && [ ! -e "$cache" ]; then
    mkdir -p "$(dirname "$cache")"
    cp bin/server "$cache.tmp.$$" && mv -f "$cache.tmp.$$" "$cache"
    # Keep the three newest builds.
    ls -t "$(dirname "$cache")"/server-* 2>/dev/null | tail -n +4 | xargs -r rm -f
  fi
fi

wait "$services"
exec bin/server demo "$@"
