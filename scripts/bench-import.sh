#!/usr/bin/env bash
# Kineto import speed and memory: imports a trace (default: the largest in ../shared/data/kineto)
# several times and prints CPU time per MB of uncompressed JSON (MB/s per core), wall time and
# peak RSS against the JSON size. The trace is gunzipped first, so the numbers are the
# import's own.
#
#   scripts/bench-import.sh [TRACE.json[.gz]] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
trace="${1:-$(ls -S "$root"/../shared/data/kineto/*.json* | head -1)}"
runs="${2:-10}"
out="${TRACESQL_BENCH_DIR:-$root/bench-out}"
mkdir -p "$out"

source scripts/bench-build.sh # $bin, the profile named on stderr
json="$out/import-input.json"
if [[ "$trace" == *.gz ]]; then gunzip -c "$trace" >"$json"; else cp "$trace" "$json"; fi

python3 - "$bin" "$json" "$out/import-window" "$runs" "$trace" <<'PY'
import os, resource, shutil, subprocess, sys, time
binary, json, window, runs, trace = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
mb = os.path.getsize(json) / 1e6
best_cpu = best_wall = float("inf")
for _ in range(runs):
    shutil.rmtree(window, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([binary, "import", "kineto", json, "--output", window],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"trace: {trace} ({mb:.1f} MB of JSON), best of {runs} runs")
print(f"import CPU time: {best_cpu * 1000:.0f} ms -> {mb / best_cpu:.0f} MB/s per core (goal >= 200)")
print(f"import wall time: {best_wall * 1000:.0f} ms -> {mb / best_wall:.0f} MB/s")
print(f"peak RSS: {peak_mb:.1f} MB = {peak_mb / mb:.2f} x the JSON size (goal <= 2)")
PY
