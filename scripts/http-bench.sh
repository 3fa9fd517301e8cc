#!/usr/bin/env bash
# hyper's HTTP/1 server (tickwheel-async's examples/http_server.rs) with its header read timeout
# on tickwheel-async's HyperTimer against hyper-util's TokioTimer, measured with wrk on
# loopback. Interleaved: HyperTimer, then TokioTimer, PAIRS times. Each run of a timer:
#   1. keep-alive load: wrk -t2 -c100 -d10s --latency (requests/s, latency p50/p99/p99.9);
#      1 s header timeout;
#   2. the same load beside slow clients: examples/slow_clients.rs opens 10,000 connections
#      over 5 s, each sending a request line and the first header bytes, then nothing, so the
#      1 s header timeout closes each; wrk runs for the 6 s they are there (same -t2 -c100);
#      every close is timed (lateness past the timeout, and any early one);
#   3. memory per idle slow connection: the server's VmRSS before and after 10,000 slow
#      connections are open, with a 60 s header timeout so they stay open;
#   4. idle CPU: the server's utime+stime over 10 s while 10,000 keep-alive connections sit
#      idle after one answered request each (60 s header timeout: each holds an armed timer).
# Every server and client is on 127.0.0.1; every phase ends by itself. The load average is
# logged at each phase: the machine may be shared.
# Usage: scripts/http-bench.sh [PAIRS]   (default 5)
# Output: HTTP_BENCH_OUT (default target/http-bench): runs.tsv (one line per timer run),
# summary.txt (medians over the pairs, the targets), each process's log.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs="${1:-5}"
out="${HTTP_BENCH_OUT:-target/http-bench}"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$out"
rm -f "$out"/*.log "$out/runs.tsv" "$out/summary.txt"

if ! command -v wrk >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq wrk
fi
cargo build --release -j 1 --quiet -p tickwheel-async --features hyper \
  --example http_server --example slow_clients
bin="$target/release/examples"
ulimit -n "$(ulimit -Hn)"

# wrk's own report stops at p99: this prints p99.9 too, as one line.
cat >"$out/latency.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d p999_us=%d\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
EOF

load() { cut -d' ' -f1 /proc/loadavg; }
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" "$2" | tail -1; }

# Whatever this script started and is still running is stopped when it ends, however it ends.
server=""
gen=""
cleanup() {
  for pid in $gen $server; do
    kill -INT "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

# start_server TIMER HEADER_TIMEOUT LOG: sets $server (pid) and $addr.
start_server() {
  : >"$3" # made here, before the server's shell gets to open it
  "$bin/http_server" --timer "$1" --header-timeout "$2" >"$3" 2>&1 &
  server=$!
  addr=""
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$3")
    [ -n "$addr" ] && return 0
    sleep 0.05
  done
  echo "the server did not start; its log:" >&2
  cat "$3" >&2
  exit 1
}

stop_server() {
  kill -INT "$server"
  wait "$server" || true
  server=""
}

# wait_line FILE TEXT SECONDS
wait_line() {
  for _ in $(seq 1 $(($3 * 20))); do
    grep -q "^$2" "$1" && return 0
    sleep 0.05
  done
  echo "no '$2' in $1 after $3 s" >&2
  exit 1
}

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

printf 'pair\ttimer\trps\tp50_us\tp99_us\tp999_us\twrk_errors\trps_slow\tp99_slow_us\tslow_closed\tslow_open\tearly_connect\tearly_first_byte\tlate_p50_ms\tlate_p99_ms\tlate_max_ms\tmem_bytes_per_conn\tidle_cpu_pct\tload\n' >"$out/runs.tsv"

run() { # PAIR TIMER
  local p=$1 t=$2 tag="$out/$2-$1" lat=""
  echo "pair $p, $t: keep-alive load (load $(load))"
  start_server "$t" 1s "$tag-server-keepalive.log"
  wrk -t2 -c100 -d10s --latency -s "$out/latency.lua" "http://$addr/" >"$tag-wrk.log"
  stop_server
  local rps p50 p99 p999 errs
  rps=$(awk -v r="$(field requests "$tag-wrk.log")" -v d="$(field duration_us "$tag-wrk.log")" \
    'BEGIN { printf "%.0f", r / (d / 1e6) }')
  p50=$(field p50_us "$tag-wrk.log")
  p99=$(field p99_us "$tag-wrk.log")
  p999=$(field p999_us "$tag-wrk.log")
  errs=$(field errors "$tag-wrk.log")

  echo "pair $p, $t: the same load beside 10,000 slow clients (load $(load))"
  start_server "$t" 1s "$tag-server-slow.log"
  "$bin/slow_clients" --addr "$addr" --connections 10000 --over 5s --mode slow \
    --timeout 1s --hold 30s >"$tag-slow.log" 2>&1 &
  gen=$!
  wrk -t2 -c100 -d6s --latency -s "$out/latency.lua" "http://$addr/" >"$tag-wrk-slow.log"
  wait "$gen"
  gen=""
  stop_server
  local rps_slow p99_slow
  rps_slow=$(awk -v r="$(field requests "$tag-wrk-slow.log")" \
    -v d="$(field duration_us "$tag-wrk-slow.log")" 'BEGIN { printf "%.0f", r / (d / 1e6) }')
  p99_slow=$(field p99_us "$tag-wrk-slow.log")

  echo "pair $p, $t: memory per idle slow connection (load $(load))"
  start_server "$t" 60s "$tag-server-mem.log"
  sleep 1
  local before after
  before=$(rss_kb "$server")
  "$bin/slow_clients" --addr "$addr" --connections 10000 --over 5s --mode slow \
    --timeout 60s --hold 30s >"$tag-mem.log" 2>&1 &
  gen=$!
  wait_line "$tag-mem.log" "all connected" 20
  sleep 2
  after=$(rss_kb "$server")
  kill -INT "$gen"
  wait "$gen" || true
  gen=""
  stop_server
  local mem
  mem=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.0f", (a - b) * 1024 / 10000 }')

  echo "pair $p, $t: CPU with 10,000 idle keep-alive connections (load $(load))"
  start_server "$t" 60s "$tag-server-idle.log"
  "$bin/slow_clients" --addr "$addr" --connections 10000 --over 5s --mode idle \
    --timeout 60s --hold 40s >"$tag-idle.log" 2>&1 &
  gen=$!
  wait_line "$tag-idle.log" "all open" 30
  sleep 1
  local c0 c1
  c0=$(cpu_ticks "$server")
  sleep 10
  c1=$(cpu_ticks "$server")
  kill -INT "$gen"
  wait "$gen" || true
  gen=""
  stop_server
  local cpu
  cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f", (b - a) / hz / 10 * 100 }')
  lat="$tag-slow.log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$p" "$t" "$rps" "$p50" "$p99" "$p999" "$errs" "$rps_slow" "$p99_slow" \
    "$(field closed "$lat")" "$(field open "$lat")" "$(field early_connect "$lat")" \
    "$(field early_first_byte "$lat")" "$(field late_p50_ms "$lat")" \
    "$(field late_p99_ms "$lat")" "$(field late_max_ms "$lat")" "$mem" "$cpu" "$(load)" \
    >>"$out/runs.tsv"
}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | \
  sed 's/^ //'), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"
for p in $(seq 1 "$pairs"); do
  run "$p" tickwheel
  run "$p" tokio
done

# Medians over the pairs, for each timer, and the median of each pair's tickwheel/tokio ratio.
awk -F'\t' '
function median(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR == 1 { for (i = 1; i <= NF; i++) col[i] = $i; next }
{ t = $2; p = $1; pairs[p] = 1; for (i = 3; i <= NF; i++) v[t, p, i] = $i }
END {
  np = 0; for (p in pairs) np++
  printf "%-22s %14s %14s %14s\n", "median of " np " pairs", "tickwheel", "tokio", "ratio (pairs)"
  for (i = 3; i <= 19; i++) {
    n = 0
    for (p in pairs) { n++; a[n] = v["tickwheel", p, i]; b[n] = v["tokio", p, i]
      r[n] = b[n] + 0 != 0 ? v["tickwheel", p, i] / v["tokio", p, i] : 0 }
    ma = median(a, n); mb = median(b, n); mr = median(r, n)
    printf "%-22s %14.2f %14.2f %14.3f\n", col[i], ma, mb, mr
  }
  n = 0
  for (p in pairs) { n++; s[n] = v["tickwheel", p, 8] / v["tickwheel", p, 3] }
  printf "%-22s %14.3f\n", "tickwheel rps_slow/rps", median(s, n)
}' "$out/runs.tsv" | tee "$out/summary.txt"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.txt"
echo "runs: $out/runs.tsv; logs: $out/"
