#!/usr/bin/env bash
# Agreement of `tracesql diff` with HTA's trace diff (TraceDiff.compare_traces), under HTA
# 0.5.0 and under TraceInsight 0.6.1 (HTA's current release): per paired step, the count and
# total time of each GPU op name, on HTA's trace-diff pair and DLRM rank pairs from
# ../shared/data/kineto. Prints every difference; exits 1 on one.
#
#   scripts/check-hta-diff.sh        # TRACESQL_BIN=path/to/tracesql to skip the release build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source "$root/scripts/hta-env.sh"
work="${TRACESQL_HTA_DIR:-$root/bench-out/hta-diff}"
rm -rf "$work"
mkdir -p "$work"
status=0
for python in "$venv/bin/python" "$traceinsight_venv/bin/python"; do
    echo "== $("$python" -m pip list 2>/dev/null | grep -iE '^(holistictraceanalysis|traceinsight) ')"
    "$python" "$root/scripts/check_hta_diff.py" "$TRACESQL_BIN" "$root/../shared/data/kineto" "$work" || status=1
done
exit $status
