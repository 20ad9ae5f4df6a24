#!/usr/bin/env bash
# Runs every fuzzer of the repository for FUZZTIME each (default 60s), one
# after the other, with FUZZ_PARALLEL workers (default 1: the machine is
# shared), and exits non-zero when any found a failure. Go keeps a failing
# input in the package's testdata/fuzz/<Fuzzer>/, where it stays as a
# regression case (plain `go test` runs it). With --save-corpus, up to 20 of the inputs the
# run found interesting are copied from Go's cache into testdata/fuzz/ too.
#   scripts/fuzz.sh                      # all fuzzers, 60 s each
#   FUZZTIME=5m scripts/fuzz.sh FuzzCheckAddr FuzzJSONPath
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-60s}"
FUZZ_PARALLEL="${FUZZ_PARALLEL:-1}"
save=""
want=()
for a in "$@"; do
  if [ "$a" = "--save-corpus" ]; then save=1; else want+=("$a"); fi
done
cache="$(go env GOCACHE)/fuzz"
log="$(mktemp)"; trap 'rm -f "$log"' EXIT
failed=()
for pkg in $(go list ./...); do
  dir="$(go list -f '{{.Dir}}' "$pkg")"
  for fz in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$fz"; then continue; fi
    echo "fuzz: $pkg $fz for $FUZZTIME" >&2
    if ! go test -run '^$' -fuzz "^${fz}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZ_PARALLEL" "$pkg" > "$log" 2>&1; then
      failed+=("$pkg $fz"); echo "fuzz: FAILED: $pkg $fz" >&2; tail -n 30 "$log" >&2
    else
      { grep 'fuzz: elapsed' "$log" | tail -n 1; tail -n 1 "$log"; } >&2
    fi
    if [ -n "$save" ] && [ -d "$cache/$pkg/$fz" ]; then
      mkdir -p "$dir/testdata/fuzz/$fz"
      ls -t "$cache/$pkg/$fz" | head -n 20 | while read -r f; do cp "$cache/$pkg/$fz/$f" "$dir/testdata/fuzz/$fz/"; done
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failures in %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz: all passed" >&2
