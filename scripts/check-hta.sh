#!/usr/bin/env bash
# Agreement with HolisticTraceAnalysis (HTA 0.5.0, PyPI): runs HTA's temporal breakdown, idle
# time breakdown, kernel-type breakdown, comm/comp overlap and kernel launch statistics on the
# real Kineto traces in ../shared/data/kineto (the DLRM ranks as one rank archive, every other
# trace alone), runs our reports on the same traces imported as windows, and prints every
# difference. Goal: shares within 0.1 percentage point, times within 1 µs per row. Then
# scripts/check-hta-diff.sh: `tracesql diff` against HTA's trace diff.
#
#   scripts/check-hta.sh            # TRACESQL_BIN=path/to/tracesql to skip the release build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source "$root/scripts/hta-env.sh"
work="${TRACESQL_HTA_DIR:-$root/bench-out/hta}"
rm -rf "$work"
mkdir -p "$work"
status=0
"$venv/bin/python" "$root/scripts/check_hta.py" "$TRACESQL_BIN" "$root/../shared/data/kineto" "$work" || status=$?
TRACESQL_BIN=$TRACESQL_BIN TRACESQL_HTA_DIR="$work/diff" "$root/scripts/check-hta-diff.sh" || status=$?
exit "$status"
