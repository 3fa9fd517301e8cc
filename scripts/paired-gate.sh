#!/usr/bin/env bash
# The paired load-generator gate: builds a base commit (in a git worktree) and this checkout,
# runs the same load-generator command on both, interleaved, and judges this checkout by its
# ops/s ratio to the base within each pair (`tickwheel-loadgen paired`; see docs/ci-gate.md).
# Exit 1 on a regression, 0 otherwise, 2 on bad input.
#
#   scripts/paired-gate.sh [BASE_REV] [-- COMMAND...]
#
# BASE_REV defaults to origin/main (or HEAD when there is no such ref); COMMAND defaults to
# `compare --duration 10s --repeat 3`. PAIRS (default 5), TOLERANCE (0.05) and OUT
# (target/paired-gate) are read from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

base_rev=origin/main
git rev-parse --verify --quiet origin/main >/dev/null || base_rev=HEAD
if [ $# -gt 0 ] && [ "$1" != "--" ]; then base_rev=$1; shift; fi
[ "${1:-}" = "--" ] && shift
command=("$@")
[ ${#command[@]} -eq 0 ] && command=(compare --duration 10s --repeat 3)

base_dir=target/paired-base
git rev-parse --verify --quiet "$base_rev^{commit}" >/dev/null || {
  echo "paired-gate: no commit $base_rev" >&2
  exit 2
}
git worktree remove --force "$base_dir" >/dev/null 2>&1 || rm -rf "$base_dir"
git worktree prune
git worktree add --detach "$base_dir" "$base_rev" >/dev/null
trap 'git worktree remove --force "$base_dir" >/dev/null 2>&1 || true' EXIT

echo "== paired gate: building the base ($(git rev-parse --short "$base_rev")) and this checkout"
cargo build --release --quiet -p tickwheel-loadgen --manifest-path "$base_dir/Cargo.toml" \
  --target-dir target/paired-base-target
cargo build --release --quiet -p tickwheel-loadgen
head_bin="${CARGO_TARGET_DIR:-target}/release/tickwheel-loadgen"

echo "== paired gate: ${PAIRS:-5} pairs of: ${command[*]}"
"$head_bin" paired --base target/paired-base-target/release/tickwheel-loadgen \
  --pairs "${PAIRS:-5}" --tolerance "${TOLERANCE:-0.05}" --out "${OUT:-target/paired-gate}" \
  -- "${command[@]}"
