#!/usr/bin/env bash
# README's test command: every test in the workspace, in release mode so the model test can run
# its 10,000 generated sequences per implementation within CI's budget. Installs what the
# tests need first (scripts/install-test-tools.sh: a Java runtime and HdrHistogram's jar for
# the interop test, valgrind for the simulated cost), runs every test binary even when one
# fails, and ends with one summary line over every test binary and doc-test run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-tools.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The async crate's `stream` and `hyper` features are on so its Stream and HTTP server tests run too.
status=0
cargo test --workspace --release --no-fail-fast --features tickwheel-async/stream,tickwheel-async/hyper "$@" 2>&1 |
  tee "$log" || status=$?
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
