#!/usr/bin/env bash
# Side-by-side query timing: tracesql against DuckDB on the same Parquet files, one run,
# printing ratios. Creates its own Python venv with duckdb from PyPI.
#
#   scripts/bench-query.sh [KERNELS]     (default 10000000 kernels, ~25 M events)
set -euo pipefail
cd "$(dirname "$0")/.."
kernels="${1:-10000000}"
venv="${TRACESQL_BENCH_VENV:-$HOME/.cache/tracesql-bench-venv}"
out="${TRACESQL_BENCH_DIR:-$PWD/bench-out}"

source scripts/bench-build.sh # $bin, the profile named on stderr
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet duckdb
fi
exec "$venv/bin/python" scripts/bench_query.py --bin "$bin" --out "$out" --kernels "$kernels"
