#!/usr/bin/env bash
# Counts the pairs of repeated code in internal/ with the `duplicates`
# command (six or more lines alike), twice for each revision given
# (default: HEAD): as the command reads the tree, and with Go's
# parenthesised import blocks blanked first. The command passes over
# import lines, but it does not know that the quoted paths inside a Go
# `import ( … )` block are import lines, so two files that import the same
# six packages count as a pair. Blanking keeps every other line where it
# is, so the pairs it lists still point at the right lines.
#
#   scripts/repeated-code.sh 58f0503 HEAD      # before and after
#   LIST=1 scripts/repeated-code.sh            # also list the pairs left
set -euo pipefail
cd "$(dirname "$0")/.."
command -v duplicates >/dev/null || { echo "repeated-code: the duplicates command is not on PATH" >&2; exit 1; }
[ $# -gt 0 ] || set -- HEAD
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for rev in "$@"; do
  tree="$work/$rev"
  mkdir -p "$tree"
  git archive "$rev" internal | tar -x -C "$tree"
  raw="$(duplicates --repo "$tree/internal" --seconds 120 | head -n 1)"
  find "$tree" -name '*.go' -print0 | while IFS= read -r -d '' f; do
    awk '/^import \($/ { blank = 1 } { if (blank) print ""; else print } blank && /^\)$/ { blank = 0 }' "$f" > "$f.tmp"
    mv "$f.tmp" "$f"
  done
  code="$(duplicates --repo "$tree/internal" --seconds 120 --most 200 | sed "s#$tree/internal/##g")"
  printf '%s\n  as read:              %s\n  import blocks blanked: %s\n' "$rev" "${raw%% (*}" "$(head -n 1 <<<"$code" | sed 's/ (.*//')"
  if [ "${LIST:-}" = 1 ]; then tail -n +2 <<<"$code"; fi
done
