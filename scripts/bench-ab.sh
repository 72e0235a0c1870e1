#!/usr/bin/env bash
# A/B of two tracesql builds on the bench suite's tasks, interleaved (A, B, A, B, ...) so
# that the machine's drift falls on both alike: exports to Chrome JSON and .pftrace, a query,
# every report, over one synthetic window. Prints per task the wall time and peak RSS of each
# build as median [min-max] over the rounds, and B/A.
#
#   scripts/bench-ab.sh A B [EVENTS] [ROUNDS]      (default 1000000 events, 5 rounds)
#
# A and B are each a binary's path or a Cargo profile (`release`, `dist`), built first as the
# bench scripts build them (scripts/bench-build.sh). Example, what fat LTO buys:
#   scripts/bench-ab.sh release dist
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[[ $# -ge 2 ]] || { sed -n 2,11p "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
events="${3:-1000000}"
rounds="${4:-5}"
out="${TRACESQL_BENCH_DIR:-$root/bench-out}"
mkdir -p "$out"

# A profile name becomes its binary (copied: building the other profile may replace it).
binary_of() {
  if [[ -x "$1" ]]; then
    echo "$1"
    return
  fi
  local TRACESQL_BENCH_PROFILE=$1 bench_cargo_args=()
  source scripts/bench-build.sh
  cp "$bin" "$out/ab-$1"
  echo "$out/ab-$1"
}
bin_a=$(binary_of "$1")
bin_b=$(binary_of "$2")
echo "A: $1 ($bin_a)  B: $2 ($bin_b)  $events events, $rounds rounds" >&2

window="$out/s$events"
[[ -d "$window" ]] || "$bin_a" synth --out "$window" --events "$events" --seed 1 >/dev/null 2>&1

TOP_KERNELS="select name, count(*) as n, sum(end_ns - start_ns) as total_ns from kernel
             group by name order by total_ns desc limit 20"
tasks=(export-json export-pftrace query reports)
# The command of TASK run by BIN, in $cmd; what it writes is removed first (outside the time).
task_command() { # BIN TASK
  case $2 in
    export-json) cmd=("$1" export --window "$window" --output "$out/ab.json.gz") ;;
    export-pftrace) cmd=("$1" export --window "$window" --output "$out/ab.pftrace") ;;
    query) cmd=("$1" query --window "$window" --format csv -o "$out/ab.csv" "$TOP_KERNELS") ;;
    reports) cmd=("$1" report all --window "$window" --format csv -o "$out/ab-reports") ;;
  esac
  rm -rf "$out/ab.json.gz" "$out/ab.pftrace" "$out/ab.csv" "$out/ab-reports"
}

results="$out/ab-times.txt" # task side seconds KB
: >"$results"
for ((r = 1; r <= rounds; r++)); do
  for task in "${tasks[@]}"; do
    for side in A B; do
      b=$bin_a
      [[ $side == B ]] && b=$bin_b
      task_command "$b" "$task"
      /usr/bin/time -f "%e %M" -o "$out/ab-time.txt" "${cmd[@]}" >/dev/null 2>&1 ||
        { echo "bench-ab: $side failed: ${cmd[*]}" >&2; exit 1; }
      echo "$task $side $(cat "$out/ab-time.txt")" >>"$results"
    done
  done
  echo "round $r/$rounds done" >&2
done

python3 - "$results" "$1" "$2" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print(f"A = {sys.argv[2]}, B = {sys.argv[3]}: wall s, median [min-max]; peak RSS MB, median")
print(f"{'task':16} {'A s':>22} {'B s':>22} {'B/A':>5}"
      f" {'A MB':>6} {'B MB':>6}")
for task in dict.fromkeys(r[0] for r in rows):
    def of(side, i):
        return [float(r[i]) for r in rows if r[0] == task and r[1] == side]
    def shown(v):
        return f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
    a, b = of("A", 2), of("B", 2)
    mb = lambda side: statistics.median(of(side, 3)) / 1024
    print(f"{task:16} {shown(a):>22} {shown(b):>22} {statistics.median(b) / statistics.median(a):5.2f}"
          f" {mb('A'):6.0f} {mb('B'):6.0f}")
EOF
