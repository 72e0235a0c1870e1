#!/usr/bin/env bash
# `tracesql diff` speed, measured in one run: against HTA's trace diff (load + compare_traces)
# on real pairs of ../shared/data/kineto (goal >= 20x faster, import included), and on two
# synthetic windows of EVENTS events (goal <= 2 s at 1 M). See scripts/bench_diff.py.
#
#   scripts/bench-diff.sh [EVENTS] [ROUNDS]      # TRACESQL_BIN=... skips the build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
events="${1:-1000000}"
rounds="${2:-3}"
source "$root/scripts/hta-env.sh"
out="${TRACESQL_BENCH_DIR:-$root/bench-out}/diff"
mkdir -p "$out"
exec "$venv/bin/python" "$root/scripts/bench_diff.py" "$TRACESQL_BIN" "$root/../shared/data/kineto" "$out" "$events" "$rounds"
