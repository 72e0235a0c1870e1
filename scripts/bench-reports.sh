#!/usr/bin/env bash
# Report speed, measured in one run:
#  1. tracesql (import kineto + the five HTA-equivalent reports) against HTA 0.5.0 (load + the
#     same five analyses) on the largest real trace of ../shared/data/kineto and on the DLRM
#     ranks 0-3 as one archive: wall time and peak RSS, with the ratios (goal >= 20x faster,
#     RSS <= 1/4 of HTA's);
#  2. every report on synthetic windows of 1 M and 10 M events: time at 10 M over time at 1 M
#     (goal <= 12, i.e. linear scaling).
#
#   scripts/bench-reports.sh [SMALL_EVENTS] [LARGE_EVENTS]   # TRACESQL_BIN=... skips the build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
small="${1:-1000000}"
large="${2:-10000000}"
source "$root/scripts/hta-env.sh"
out="${TRACESQL_BENCH_DIR:-$root/bench-out}/reports"
mkdir -p "$out"
exec "$venv/bin/python" "$root/scripts/bench_reports.py" "$TRACESQL_BIN" "$root/../shared/data/kineto" "$out" "$small" "$large"
