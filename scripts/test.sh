#!/usr/bin/env bash
# README's test command: every test in the workspace, in release mode so the model test can run
# tens of thousands of generated sequences per implementation within CI's budget.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --release "$@"
