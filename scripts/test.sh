#!/usr/bin/env bash
# The whole test suite: starts what the tests need (MariaDB, Redis,
# Chromium for the browser tests), checks formatting, vet and generated
# templ files, then runs every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/lib/chromium/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "test: installing chromium for the browser tests" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "test: chromium is missing: install it (apt-get install chromium) for the browser tests" >&2
    exit 1
  fi
fi

echo "test: templ generate (generated files must be committed)" >&2
go tool templ generate -path . >/dev/null
if [ -n "$(git status --porcelain -- '*_templ.go' 2>/dev/null)" ]; then
  git status --porcelain -- '*_templ.go' >&2
  echo "test: generated templ files are out of date: run 'go tool templ generate' and commit them" >&2
  exit 1
fi
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "test: gofmt needed on:" >&2; echo "$unformatted" >&2; exit 1
fi
go vet ./...
# A short private TMPDIR under /tmp, whatever the caller's TMPDIR: Chromium
# refuses a user-data-dir whose socket path grows past 107 bytes.
export TMPDIR="$(mktemp -d /tmp/lpt.XXXXXX)"
# Chromium was installed above: a browser test must not skip quietly.
export LEADPIPE_REQUIRE_CHROMIUM=1
exec go test -race -count=1 -timeout 30m "$@" ./...
