#!/usr/bin/env bash
# The paired load-generator gate: builds a base commit (in a git worktree) and this checkout,
# runs the same load-generator command on both, and judges this checkout against the base
# (`tickwheel-loadgen paired`; see docs/ci-gate.md). Exit 1 on a regression, 0 otherwise, 2 on
# bad input.
#
#   scripts/paired-gate.sh [BASE_REV] [-- COMMAND...]
#
# COST (default simulated) picks the measure:
# - simulated: each build runs COMMAND once under valgrind's cache simulator (the figures
#   repeat exactly); an implementation and call kind whose estimated cycles per call grew by
#   more than TOLERANCE (default 0.01) is a regression. Needs valgrind. COMMAND defaults to
#   `compare` (12 s of the default workload, each implementation once).
# - wall: PAIRS (default 5) pairs of timed runs, interleaved; a median ops/s ratio below
#   1 − TOLERANCE (default: paired's, measured by scripts/paired-study.sh) is a regression.
#   COMMAND defaults to `compare --duration 5s --repeat 3`.
#
# BASE_REV defaults to origin/main (or HEAD when there is no such ref). OUT (default
# target/paired-gate) is where the reports go.
set -euo pipefail
cd "$(dirname "$0")/.."

cost=${COST:-simulated}
base_rev=origin/main
git rev-parse --verify --quiet origin/main >/dev/null || base_rev=HEAD
if [ $# -gt 0 ] && [ "$1" != "--" ]; then base_rev=$1; shift; fi
[ "${1:-}" = "--" ] && shift
command=("$@")
case $cost in
  simulated) [ ${#command[@]} -eq 0 ] && command=(compare) ;;
  wall) [ ${#command[@]} -eq 0 ] && command=(compare --duration 5s --repeat 3) ;;
  *) echo "paired-gate: COST must be simulated or wall, got $cost" >&2; exit 2 ;;
esac

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

options=(--cost "$cost" --out "${OUT:-target/paired-gate}")
[ -n "${TOLERANCE:-}" ] && options+=(--tolerance "$TOLERANCE")
if [ "$cost" = wall ]; then
  options+=(--pairs "${PAIRS:-5}")
  echo "== paired gate: ${PAIRS:-5} pairs of: ${command[*]}"
else
  echo "== paired gate: each build once under valgrind: ${command[*]}"
fi
"$head_bin" paired --base target/paired-base-target/release/tickwheel-loadgen "${options[@]}" \
  -- "${command[@]}"
