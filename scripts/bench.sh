#!/usr/bin/env bash
# Runs the criterion suite (benches/benches/timers.rs) and the memory probe, then writes the
# comparison table to docs/bench-results.md (and prints it).
#
#   scripts/bench.sh           all sizes (10k, 100k, 1M), longer measurements, three rounds
#                              (about 45 min on 2 cores)
#   scripts/bench.sh --quick   100k and 1M only, short measurements, one round (under 10 min)
#
# Each workload × implementation runs in its own bench process under `timeout`, so one that
# hangs or crashes is listed as missing instead of stopping the rest. With three rounds the
# whole suite runs three times, the second with the implementations in reverse order, and the
# report keeps each cell's lowest median: on a shared machine other tenants' work only ever
# adds time, and a burst of it during one implementation's turn would otherwise decide a
# comparison (a single round once reported binaryheap-lazy's insert_cancel at 100k as 79.7 ns
# where repeated runs measured 23-29 ns).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
case "${1:-}" in
    --quick) mode=quick ;;
    "") ;;
    *) echo "usage: scripts/bench.sh [--quick]" >&2; exit 2 ;;
esac

if [[ $mode == quick ]]; then
    flags=(--warm-up-time 0.3 --measurement-time 1 --sample-size 10 --nresamples 1000)
    sizes='(100000|1000000)'
    limit=240
    rounds=1
else
    flags=(--warm-up-time 1 --measurement-time 3 --sample-size 10)
    sizes='(10000|100000|1000000)'
    limit=1200
    rounds=3
fi
command="scripts/bench.sh${1:+ $1} (criterion ${flags[*]}; $rounds round(s), lowest median kept; glibc malloc keeps freed memory)"
load_start=$(cut -d' ' -f1 /proc/loadavg)

# Build first, then run the binaries directly (no cargo lock held while measuring).
executable() { # prints the path of the executable target named $1 from cargo's JSON messages
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}
bench_bin=$(cargo bench -p tickwheel-benches --bench timers --no-run --message-format=json | executable timers)
memory_bin=$(cargo build --release -p tickwheel-benches --bin memory --message-format=json | executable memory)

target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
mkdir -p "$target_dir"
criterion_dir="$target_dir/bench-criterion"
rm -rf "$criterion_dir"
workloads=(insert insert_cancel churn_random churn_io reset_later expire poll_idle)
impls=(tw-hashed tw-hierarchical tw-heap tw-lazy-heap tokio-delayqueue timer-queue hhwt binaryheap-lazy btreemap)
failed=()
# The fresh-structure workloads (insert, insert_cancel, expire) allocate a multi-megabyte
# structure per iteration. Under glibc's defaults each such buffer is mmap'd and munmap'd, so
# every iteration faults its pages in again and half of those cells measured page faults
# (docs/bench-profile.md). A server reuses its timer's memory, so the suite keeps freed memory
# in the heap: the same setting for every implementation, peers included. The memory probe
# below runs with glibc's defaults, as a user's process would.
bench_env=(env GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296)
for round in $(seq "$rounds"); do
    export CRITERION_HOME="$criterion_dir/round-$round"
    order=("${impls[@]}")
    if ((round % 2 == 0)); then
        for ((k = 0; k < ${#impls[@]}; k++)); do order[k]=${impls[${#impls[@]} - 1 - k]}; done
    fi
    for w in "${workloads[@]}"; do
        for i in "${order[@]}"; do
            if ! timeout "$limit" "${bench_env[@]}" "$bench_bin" --bench "${flags[@]}" --noplot \
                "^$w/$i/$sizes\$"; then
                echo "bench.sh: round $round: $w/$i failed or timed out after ${limit}s" >&2
                failed+=("round $round: $w/$i")
            fi
        done
    done
done

mkdir -p docs
"$memory_bin" > "$target_dir/bench-memory.tsv" || failed+=(memory)
python3 benches/report.py "$criterion_dir" "$target_dir/bench-memory.tsv" docs/bench-results.md \
    "$command" "$load_start" "${failed[@]}"
