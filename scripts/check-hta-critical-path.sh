#!/usr/bin/env bash
# Agreement of `tracesql report critical_path_summary` with HTA's lightweight critical path
# (TraceInsight 0.6.1, HTA's current release; HTA 0.5.0's fails on current pandas): per step
# or annotation instance, the path's length within 1 µs and each bound_by share within 0.1
# percentage point, on HTA's critical-path test traces, alexnet, the ROCm toy run, the DLRM
# ranks and HTA's CUDA-graph trace, and on N synthetic one-process traces (default 4;
# scripts/check_hta_critical_path.py says what is compared).
#
#   scripts/check-hta-critical-path.sh [N]    # TRACESQL_BIN=path/to/tracesql to skip the build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source "$root/scripts/hta-env.sh"
work="${TRACESQL_HTA_DIR:-$root/bench-out/hta-critical-path}"
rm -rf "$work"
mkdir -p "$work"
"$traceinsight_venv/bin/python" "$root/scripts/check_hta_critical_path.py" "$TRACESQL_BIN" \
    "$root/../shared/data/kineto" "$work" --synthetic "${1:-4}"
