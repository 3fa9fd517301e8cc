#!/usr/bin/env bash
# Callgrind counts per operation of one implementation in one or two builds of the profile
# binary (benches/src/bin/profile.rs): instructions, L1-data misses and last-level misses per
# operation, steady state as the difference between two iteration counts, so the setup
# (building the structure) cancels out. Deterministic: the machine's load does not move it.
#
#   scripts/callgrind-ab.sh IMPLEMENTATION NEW_PROFILE [OLD_PROFILE] [SIZES...]
#
# e.g. scripts/callgrind-ab.sh tw-hierarchical target/release/profile old/profile 100000 1000000
# Needs valgrind (`apt-get install valgrind`).
set -euo pipefail
impl=$1; new=$2; old=${3:-}; shift 2; [ -n "$old" ] && shift
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
count() { # binary workload n iterations -> "ops Ir D1 LL"
  local out
  out=$(valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file=/dev/null "$1" "$2" "$impl" "$3" "$4" 2>&1)
  local ops ir d1 ll
  ops=$(grep -o '[0-9]* operations' <<<"$out" | head -1 | cut -d' ' -f1)
  ir=$(grep -E 'I +refs:' <<<"$out" | tr -d ',' | awk '{print $4}')
  d1=$(grep -E 'D1 +misses:' <<<"$out" | tr -d ',' | awk '{print $4}')
  ll=$(grep -E 'LLd +misses:' <<<"$out" | tr -d ',' | awk '{print $4}')
  echo "$ops $ir $d1 $ll"
}
per_op() { # binary workload n -> "ir d1 ll" per operation
  read -r lo hi <<<"$(iters "$2")"
  read -r o1 i1 d1 l1 <<<"$(count "$1" "$2" "$3" "$lo")"
  read -r o2 i2 d2 l2 <<<"$(count "$1" "$2" "$3" "$hi")"
  awk -v o=$((o2 - o1)) -v i=$((i2 - i1)) -v d=$((d2 - d1)) -v l=$((l2 - l1)) \
    'BEGIN { printf "%.1f %.2f %.2f", i / o, d / o, l / o }'
}
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
