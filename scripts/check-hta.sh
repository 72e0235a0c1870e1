#!/usr/bin/env bash
# Agreement with HolisticTraceAnalysis (HTA 0.5.0, PyPI): runs HTA's temporal breakdown, idle
# time breakdown, kernel-type breakdown, comm/comp overlap and kernel launch statistics on the
# real Kineto traces in ../shared/data/kineto (the DLRM ranks as one rank archive, every other
# trace alone), runs our reports on the same traces imported as windows, and prints every
# difference. Goal: shares within 0.1 percentage point, times within 1 µs per row.
#
#   scripts/check-hta.sh            # TRACESQL_BIN=path/to/tracesql to skip the release build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv="${TRACESQL_HTA_VENV:-$HOME/.cache/tracesql-hta-venv}"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
    echo "making the HTA virtualenv in $venv (HolisticTraceAnalysis==0.5.0)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet HolisticTraceAnalysis==0.5.0
fi
if [[ -z "${TRACESQL_BIN:-}" ]]; then
    export CARGO_TARGET_DIR="${TRACESQL_RELEASE_TARGET:-$HOME/.cache/tracesql-target-release}"
    cargo build --release --quiet
    TRACESQL_BIN="$CARGO_TARGET_DIR/release/tracesql"
fi
work="${TRACESQL_HTA_DIR:-$root/bench-out/hta}"
rm -rf "$work"
mkdir -p "$work"
exec "$venv/bin/python" "$root/scripts/check_hta.py" "$TRACESQL_BIN" "$root/../shared/data/kineto" "$work"
