#!/usr/bin/env bash
# The critical path's speed, measured in one run: tracesql (import + critical_path_summary)
# against TraceInsight 0.6.1's critical_path_analysis (load included; goal >= 50x faster) on
# real traces with steps and on a synthetic one-process trace of EVENTS / 10 events, and alone
# on a synthetic window of EVENTS events (goal <= 2 s at 1 M).
# See scripts/bench_critical_path.py.
#
#   scripts/bench-critical-path.sh [EVENTS] [ROUNDS]      # TRACESQL_BIN=... skips the build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
events="${1:-1000000}"
rounds="${2:-3}"
source "$root/scripts/hta-env.sh"
out="${TRACESQL_BENCH_DIR:-$root/bench-out}/critical-path"
mkdir -p "$out"
exec python3 "$root/scripts/bench_critical_path.py" "$TRACESQL_BIN" "$root/../shared/data/kineto" \
    "$out" "$events" "$rounds" "$traceinsight_venv/bin/python"
