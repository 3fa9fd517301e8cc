#!/usr/bin/env bash
# Callgrind counts per operation of one implementation in one or two builds of the profile
# binary (benches/src/bin/profile.rs): instructions, L1-data misses and last-level misses per
# operation, steady state as the difference between two iteration counts, so the setup
# (building the structure) cancels out. Deterministic: the machine's load does not move it,
# and the simulated caches are fixed as the load generator's `--cost simulated` fixes them
# (32 KiB 8-way L1s, an 8 MiB 16-way last level), not taken from the host.
#
#   scripts/callgrind-ab.sh IMPLEMENTATION NEW_PROFILE [OLD_PROFILE] [SIZES...]
#
# e.g. scripts/callgrind-ab.sh tw-hierarchical target/release/profile old/profile 100000 1000000
#
#   scripts/callgrind-ab.sh --table PROFILE [SIZES...]
#
# instead prints, for every implementation the benchmarks drive (tickwheel's four and the peer
# adapters) and every workload, the simulated cost per operation as the load generator's
# `--cost simulated` states it: estimated cycles = Ir + 10 × L1 misses + 100 × LL misses
# (instruction and data misses both). Two runs at a time; about 30 minutes on 2 cores for 100k
# and 1M.
# Needs valgrind (`apt-get install valgrind`).
set -euo pipefail
workloads=(insert insert_cancel churn_random churn_io reset_later expire poll_idle)
implementations=(tw-hashed tw-hierarchical tw-heap tw-lazy-heap tokio-delayqueue timer-queue hhwt
  binaryheap-lazy btreemap)
table=
if [ "${1:-}" = --table ]; then table=1; shift; fi
impl=
if [ -z "$table" ]; then impl=$1; shift; fi
new=$1; old=${2:-}; shift; [ -z "$table" ] && [ -n "$old" ] && shift
[ -n "$table" ] && old=
sizes=("${@:-100000 1000000}")
[ $# -eq 0 ] && sizes=(100000 1000000)
# Iterations (low, high) per workload: the fresh-structure workloads run N operations an
# iteration, the steady-state ones one step.
iters() {
  case $1 in
    insert|insert_cancel|expire) echo "1 2" ;;
    *) echo "100000 200000" ;;
  esac
}
count() { # binary workload n iterations [implementation] -> "ops Ir D1 LL I1 LLi"
  local out
  out=$(valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 \
    --LL=8388608,16,64 --callgrind-out-file=/dev/null "$1" "$2" "${5:-$impl}" "$3" "$4" 2>&1)
  local ops ir d1 ll i1 lli
  ops=$(grep -o '[0-9]* operations' <<<"$out" | head -1 | cut -d' ' -f1)
  ir=$(grep -E 'I +refs:' <<<"$out" | tr -d ',' | awk '{print $4}')
  d1=$(grep -E 'D1 +misses:' <<<"$out" | tr -d ',' | awk '{print $4}')
  ll=$(grep -E 'LLd +misses:' <<<"$out" | tr -d ',' | awk '{print $4}')
  i1=$(grep -E 'I1 +misses:' <<<"$out" | tr -d ',' | awk '{print $4}')
  lli=$(grep -E 'LLi +misses:' <<<"$out" | tr -d ',' | awk '{print $4}')
  echo "$ops $ir $d1 $ll $i1 $lli"
}
per_op() { # binary workload n [implementation] -> "ir d1 ll cycles" per operation
  read -r lo hi <<<"$(iters "$2")"
  read -r o1 i1 d1 l1 a1 b1 <<<"$(count "$1" "$2" "$3" "$lo" "${4:-}")"
  read -r o2 i2 d2 l2 a2 b2 <<<"$(count "$1" "$2" "$3" "$hi" "${4:-}")"
  awk -v o=$((o2 - o1)) -v i=$((i2 - i1)) -v d=$((d2 - d1)) -v l=$((l2 - l1)) \
    -v a=$((a2 - a1)) -v b=$((b2 - b1)) \
    'BEGIN { printf "%.1f %.2f %.2f %.1f", i / o, d / o, l / o, (i + 10 * (d + a) + 100 * (l + b)) / o }'
}
if [ -n "$table" ]; then
  export -f count per_op iters
  export impl=
  jobs=$(for w in "${workloads[@]}"; do for n in "${sizes[@]}"; do for i in "${implementations[@]}"; do
    echo "$w $n $i"; done; done; done)
  # One line per cell: workload size implementation Ir D1 LL cycles.
  cells=$(xargs -P 2 -L 1 bash -c 'echo "$0 $1 $2 $(per_op "'"$new"'" "$0" "$1" "$2")"' <<<"$jobs")
  for w in "${workloads[@]}"; do
    echo
    echo "### $w"
    echo
    printf '| implementation |'; for n in "${sizes[@]}"; do printf ' %s |' "$n"; done; echo
    printf '|---|'; for _ in "${sizes[@]}"; do printf -- '---:|'; done; echo
    for i in "${implementations[@]}"; do
      printf '| %s |' "$i"
      for n in "${sizes[@]}"; do
        awk -v w="$w" -v n="$n" -v i="$i" '$1 == w && $2 == n && $3 == i { printf " %s |", $7 }' <<<"$cells"
      done
      echo
    done
  done
  exit 0
fi
printf '%-14s %8s %10s %8s %8s' workload n Ir/op D1/op LL/op
[ -n "$old" ] && printf ' %10s %8s %8s %8s %8s' old_Ir old_D1 Ir_ratio D1_ratio LL_ratio
echo
for n in "${sizes[@]}"; do
  for w in insert insert_cancel churn_random churn_io reset_later expire poll_idle; do
    read -r ni nd nl <<<"$(per_op "$new" "$w" "$n")"
    printf '%-14s %8s %10s %8s %8s' "$w" "$n" "$ni" "$nd" "$nl"
    if [ -n "$old" ]; then
      read -r oi od ol <<<"$(per_op "$old" "$w" "$n")"
      awk -v ni="$ni" -v nd="$nd" -v nl="$nl" -v oi="$oi" -v od="$od" -v ol="$ol" \
        'BEGIN { printf " %10s %8s %8.2f %8.2f %8s", oi, od, ni / oi, (od > 0 ? nd / od : 0), (ol > 0 ? sprintf("%.2f", nl / ol) : "-") }'
    fi
    echo
  done
done
