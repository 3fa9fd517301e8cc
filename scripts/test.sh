#!/usr/bin/env bash
# README's test command: every test in the workspace, in release mode so the model test can run
# its 10,000 generated sequences per implementation within CI's budget. Ends with one
# summary line over every test binary and doc-test run.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The async crate's `stream` feature is on so its Stream test runs too.
cargo test --workspace --release --features tickwheel-async/stream "$@" 2>&1 | tee "$log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
