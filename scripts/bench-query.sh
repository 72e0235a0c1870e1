#!/usr/bin/env bash
# Side-by-side query timing: tracesql against DuckDB on the same Parquet files, one run,
# printing ratios, and tracesql on a copy of the window without its row order claim (what
# the known order buys, docs/engine.md). Creates its own Python venv with duckdb and pyarrow.
#
#   scripts/bench-query.sh [KERNELS] [ROUNDS] [--parts suite,containment] [--baseline BIN]
#                          [--scale] [--no-duckdb]
#   (default 10000000 kernels, ~31 M events; 5 rounds). The containment questions get an
#   in-process column when the venv has the `tracesql` module (scripts/bench-python.sh's wheel:
#   TRACESQL_BENCH_VENV=~/.cache/tracesql-bench-python), and `--baseline BIN` times another build on every question.
#   `--scale` runs on KERNELS and on 10x KERNELS and prints what 10x the rows costs each
#   question; `--no-duckdb` leaves DuckDB out (its containment joins take minutes at 1 M).
set -euo pipefail
cd "$(dirname "$0")/.."
kernels="${1:-10000000}"
rounds="${2:-5}"
venv="${TRACESQL_BENCH_VENV:-$HOME/.cache/tracesql-bench-venv}"
out="${TRACESQL_BENCH_DIR:-$PWD/bench-out}"

source scripts/bench-build.sh # $bin, the profile named on stderr
if ! "$venv/bin/python" -c "import duckdb, pyarrow" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet duckdb pyarrow
fi
exec "$venv/bin/python" scripts/bench_query.py --bin "$bin" --out "$out" --kernels "$kernels" \
  --rounds "$rounds" "${@:3}"
