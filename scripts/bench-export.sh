#!/usr/bin/env bash
# Export throughput against the reference exporter, in one run: the same synthetic window
# exported by the oracle (../shared/seed/oracle.py, or $SEED_DIR) and by tracesql, to Chrome
# JSON and to .pftrace, printing times, events/s and the ratios, plus peak RSS.
#
# It ends with the floor (scripts/bench_floor.py): the least time any exporter spends reading
# the window and writing the output, against the time each throughput goal allows.
#
#   scripts/bench-export.sh [EVENTS]     (default 1000000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
events="${1:-1000000}"
seed=${SEED_DIR:-$root/../shared/seed}
venv=${SEED_VENV:-$HOME/.cache/tracesql-oracle-venv}
python=${ORACLE_PYTHON:-$venv/bin/python}
[[ -x "$python" ]] || python=python3 # oracle.py re-runs itself in a fresh venv
out="${TRACESQL_BENCH_DIR:-$root/bench-out}"
window="$out/s$events"
mkdir -p "$out"

source scripts/bench-build.sh # $bin, the profile named on stderr
[[ -d "$window" ]] || "$bin" synth --out "$window" --events "$events" --seed 1 >/dev/null 2>&1

# Wall seconds and peak RSS (MB) of a command: "SECONDS MB". The output file of the last run
# is removed first, for every exporter alike: replacing a file of hundreds of MB makes the
# kernel free its pages inside the timed run (0.4 s for a 400 MB .json here).
measure() {
  rm -f "${@: -1}"
  /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >/dev/null 2>&1
  awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$out/time.txt"
}
read -r oracle_s oracle_mb < <(measure "$python" "$seed/oracle.py" --window-dir "$window" --out "$out/oracle.json")
read -r chrome_s chrome_mb < <(measure "$bin" export --window "$window" --output "$out/tracesql.json")
read -r gz_s gz_mb < <(measure "$bin" export --window "$window" --output "$out/tracesql.json.gz")
read -r pf_s pf_mb < <(measure "$bin" export --window "$window" --output "$out/tracesql.pftrace")
trace_events=$("$python" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['traceEvents']))" "$out/oracle.json")
cores=$(nproc)

echo "window: $window ($events synthetic events, $trace_events Chrome trace events); $cores cores"
printf '%-22s %8s %12s %12s %8s %8s\n' export seconds events/s "per core" RSS_MB "x oracle"
row() {
  printf '%-22s %8.2f %12.0f %12.0f %8s %8.1f\n' "$1" "$2" "$(echo "$trace_events / $2" | bc -l)" \
    "$(echo "$trace_events / $2 / $cores" | bc -l)" "$3" "$(echo "$oracle_s / $2" | bc -l)"
}
row "oracle (Python) .json" "$oracle_s" "$oracle_mb"
row "tracesql .json" "$chrome_s" "$chrome_mb"
row "tracesql .json.gz" "$gz_s" "$gz_mb"
row "tracesql .pftrace" "$pf_s" "$pf_mb"
echo "sizes: .json.gz $(stat -c %s "$out/tracesql.json.gz") B, .pftrace $(stat -c %s "$out/tracesql.pftrace") B"

# The floor: what any exporter spends on reading this window and writing the .json's bytes
# (scripts/bench_floor.py), against the time each throughput goal allows.
bench_venv="${TRACESQL_BENCH_VENV:-$HOME/.cache/tracesql-bench-venv}"
if ! "$bench_venv/bin/python" -c "import pyarrow, isal" 2>/dev/null; then
  python3 -m venv "$bench_venv"
  "$bench_venv/bin/pip" install --quiet pyarrow isal duckdb
fi
read -r floor_cpu floor_parquet floor_write < <("$bench_venv/bin/python" scripts/bench_floor.py \
  --window "$window" --bytes "$(stat -c %s "$out/tracesql.json")" --dir "$out")
floor=$(echo "$floor_cpu + $floor_parquet + $floor_write" | bc -l)
printf 'floor: %.2f s = gunzip the CPU trace %.2f + decode every Parquet column %.2f + write the .json bytes %.2f\n' \
  "$floor" "$floor_cpu" "$floor_parquet" "$floor_write"
printf 'time a goal allows: 30x the oracle %.2f s; 5 M events/s per core %.2f s; 10 M events/s per core %.2f s\n' \
  "$(echo "$oracle_s / 30" | bc -l)" "$(echo "$trace_events / 5000000 / $cores" | bc -l)" \
  "$(echo "$trace_events / 10000000 / $cores" | bc -l)"
