#!/usr/bin/env bash
# nsys import speed and memory: builds a synthetic report of KERNELS kernels and as many
# runtime calls (default 1,000,000 each; scripts/bench_import_nsys.py, Python's sqlite3), then
# times `tracesql import nsys` on it (release build) against reading the same tables' same
# columns with Python's sqlite3 into pyarrow, best of RUNS runs each, and prints rows/s
# (kernels + runtime calls per second of wall time), their ratio, and peak RSS against the
# report's size (/usr/bin/time -v).
#
#   scripts/bench-import-nsys.sh [KERNELS] [RUNS]
#
# TRACESQL_BIN=PATH times that binary instead of building one. pyarrow comes from
# $BENCH_PYTHON, else the venv tests/it/python_writer.rs makes under the target dir, else a
# venv made here ($target/tmp/tracesql-bench-venv).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
kernels=${1:-1000000}
runs=${2:-3}
target=${CARGO_TARGET_DIR:-$root/target}
out="${TRACESQL_BENCH_DIR:-$target/bench-import-nsys}"
mkdir -p "$out"

source scripts/bench-build.sh # $bin, the profile named on stderr

python=${BENCH_PYTHON:-}
for venv in "$target/tmp/tracesql-window-venv" "$target/tmp/tracesql-bench-venv"; do
  if [[ -z "$python" && -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import pyarrow" 2>/dev/null; then
    python=$venv/bin/python
  fi
done
if [[ -z "$python" ]]; then
  python3 -m venv "$target/tmp/tracesql-bench-venv"
  "$target/tmp/tracesql-bench-venv/bin/pip" install -q pyarrow
  python=$target/tmp/tracesql-bench-venv/bin/python
fi

report="$out/synthetic-$kernels.sqlite"
if [[ ! -f "$report" ]]; then
  echo "building $report ..."
  "$python" scripts/bench_import_nsys.py make "$report" "$kernels"
fi
size=$(stat -c %s "$report")
rows=$((2 * kernels))

best_ours=999999 best_py=999999 rss_ours=0 rss_py=0
for _ in $(seq "$runs"); do
  rm -rf "$out/window"
  /usr/bin/time -v -o "$out/time.txt" "$bin" import nsys "$report" --output "$out/window" >/dev/null 2>"$out/import.err" \
    || { cat "$out/import.err"; exit 1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$out/time.txt")
  rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$out/time.txt")
  best_ours=$(python3 -c "print(min($best_ours, $wall))")
  rss_ours=$((rss > rss_ours ? rss : rss_ours))

  /usr/bin/time -v -o "$out/time-py.txt" "$python" scripts/bench_import_nsys.py python "$report" >"$out/py.txt"
  read -r secs _ <"$out/py.txt"
  rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$out/time-py.txt")
  best_py=$(python3 -c "print(min($best_py, $secs))")
  rss_py=$((rss > rss_py ? rss : rss_py))
done

echo "where the time goes (one more run, --profile: wall and CPU per stage):"
rm -rf "$out/window"
"$bin" --profile import nsys "$report" --output "$out/window" 2>&1 >/dev/null | grep -i 'nsys' || true
python3 - "$kernels" "$rows" "$size" "$best_ours" "$best_py" "$rss_ours" "$rss_py" "$runs" <<'PY'
import sys
kernels, rows, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ours, py, rss_ours, rss_py, runs = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
mb = size / 1e6
print(f"report: {kernels:,} kernels + {kernels:,} runtime calls, {mb:.0f} MB of SQLite; best of {runs} runs")
print(f"tracesql import nsys (whole import, window written): {ours:.2f} s -> {rows / ours / 1e6:.2f} M rows/s (goal >= 2)")
print(f"python sqlite3 -> pyarrow (read only):               {py:.2f} s -> {rows / py / 1e6:.2f} M rows/s")
print(f"ratio: tracesql is {py / ours:.2f}x the speed of the Python read")
print(f"peak RSS: tracesql {rss_ours / 1024:.0f} MB = {rss_ours * 1024 / size:.2f} x the report (goal <= 2); "
      f"python {rss_py / 1024:.0f} MB = {rss_py * 1024 / size:.2f} x")
PY
