#!/usr/bin/env bash
# Quick start: brings up MariaDB and Redis if needed, then runs Leadpipe
# with a demo tenant on http://localhost:8080 (worker in process).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
exec go run ./cmd/server demo "$@"
