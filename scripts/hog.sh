# CPU hogs for the load scripts, sourced: `start_hog N` starts N busy-looping `sh` threads, as
# another tenant's load would; `stop_hog` stops them. Each is also bounded by `timeout`
# (HOG_SECS, default 600 s), and the sourcing script's EXIT trap stops them, so none outlives
# it.
hog_pids=()
start_hog() {
  for _ in $(seq 1 "$1"); do
    timeout "${HOG_SECS:-600}" sh -c 'while :; do :; done' &
    hog_pids+=("$!")
  done
}
stop_hog() {
  for pid in ${hog_pids[@]+"${hog_pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  hog_pids=()
}
trap stop_hog EXIT
