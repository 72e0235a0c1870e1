#!/usr/bin/env bash
# Parallel speed-up of `tracesql convert`: the same archive of synthetic windows converted
# with -j 1 and with -j N (default: the number of cores), printing both times and the ratio.
#
#   scripts/bench-convert.sh [WINDOWS] [EVENTS_PER_WINDOW] [FORMAT]   (default 8 200000 chrome)
set -euo pipefail
cd "$(dirname "$0")/.."
windows="${1:-8}"
events="${2:-200000}"
format="${3:-chrome}"
jobs="${JOBS:-$(nproc)}"
out="${TRACESQL_BENCH_DIR:-$PWD/bench-out}/convert-$windows-$events"

source scripts/bench-build.sh # $bin, the profile named on stderr
for i in $(seq 1 "$windows"); do
  w="$out/archive/window_id=$(printf %06d "$i")"
  [ -d "$w" ] || "$bin" synth --out "$w" --events "$events" --seed "$i" >/dev/null 2>&1
done

# Wall seconds of one forced conversion with -j $1.
run() {
  local start end
  start=$(date +%s.%N)
  "$bin" convert "$out/archive" --output "$out/traces" --format "$format" -j "$1" --force --quiet
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
t1=$(run 1)
tn=$(run "$jobs")
printf '%d windows x %d events, %s: -j 1 %.2f s, -j %d %.2f s, speed-up %.2fx\n' \
  "$windows" "$events" "$format" "$t1" "$jobs" "$tn" "$(echo "$t1 / $tn" | bc -l)"
