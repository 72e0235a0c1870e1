#!/usr/bin/env bash
# tracesql from Python against its peers, in one run (scripts/bench_python.py): the query
# suite against DuckDB and datafusion-python 55, the hand-off to pyarrow, and import + four
# analyses against HTA; first the wheel's build time and size.
#   scripts/bench-python.sh [EVENTS] [ROUNDS] [PARTS]
# (defaults 5000000 events, 5 rounds, PARTS queries,handoff,hta)
# The wheel is built with the bench profile (TRACESQL_BENCH_PROFILE: release, or dist for
# what ships) in the release target dir, into its own venv ($TRACESQL_BENCH_VENV).
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-5000000}"
rounds="${2:-5}"
parts="${3:-queries,handoff,hta}"
# HTA's venv (made once) in $venv; TRACESQL_BIN set: no CLI build needed here.
TRACESQL_BIN=unused source scripts/hta-env.sh 2>/dev/null
hta_python="$venv/bin/python"

profile="${TRACESQL_BENCH_PROFILE:-release}"
export CARGO_TARGET_DIR="${TRACESQL_RELEASE_TARGET:-$HOME/.cache/tracesql-target-release}"
venv="${TRACESQL_BENCH_VENV:-$HOME/.cache/tracesql-bench-python}"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "maturin>=1.9,<2" duckdb "datafusion==55.*" pyarrow

rm -rf "$venv/wheels"
start=$(date +%s)
"$venv/bin/maturin" build --quiet --profile "$profile" -m python/Cargo.toml \
    --interpreter "$venv/bin/python" --out "$venv/wheels"
wheel="$(ls "$venv"/wheels/tracesql-*.whl)"
echo "wheel: $(basename "$wheel"), $(du -h "$wheel" | cut -f1), built with profile $profile in $(( $(date +%s) - start )) s (incremental: earlier builds in $CARGO_TARGET_DIR count)"
"$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"
# HTA's venv gets the wheel too: both sides of the analyses run in one Python process
"$hta_python" -m pip install -q --force-reinstall --no-deps "$wheel"
"$hta_python" -m pip install -q "pyarrow>=15"

work="${TRACESQL_BENCH_DIR:-$HOME/.cache/tracesql-bench}"
mkdir -p "$work"
cd "$work"
"$venv/bin/python" "$OLDPWD/scripts/bench_python.py" "$work" "$OLDPWD/../shared/data/kineto" \
    --events "$events" --rounds "$rounds" --hta-python "$hta_python" --parts "$parts"
