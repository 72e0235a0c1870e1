#!/usr/bin/env bash
# Same answers from two tracesql builds: each report run by build A and by build B on many
# windows, with several parameter sets, its CSV output and exit code compared byte for byte.
# For a change that must not change what a report says (a faster plan, an engine function).
# The report name `diff` runs `tracesql diff` instead: each window against the next one (and
# the last against itself), every --by view.
#
#   scripts/check-ab.sh A B [REPORT ...]      (default: critical_path critical_path_summary)
#
# A and B are binaries. The windows (made once by A, under $TRACESQL_BENCH_DIR or bench-out/):
# 9 synthetic with steps (seeds 1-8, 20-160 k events, and one without graphs and syncs),
# every Kineto trace of ../shared/data imported alone, the 4 DLRM ranks as one archive, and
# the Nsight report. The critical path's reports run with 5 parameter sets (defaults, no
# inferred syncs, two what-ifs, every annotation as a range), the others with their defaults.
# Prints each run that differs and a count; exits 1 if any differs.
#
# Example: scripts/check-ab.sh /tmp/tracesql-main target/release/tracesql critical_path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 && -x "$1" && -x "$2" ]] || { sed -n 2,15p "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
bin_a=$1 bin_b=$2
shift 2
reports=("$@")
[[ ${#reports[@]} -gt 0 ]] || reports=(critical_path critical_path_summary)
data="$root/../shared/data"
windows="${TRACESQL_BENCH_DIR:-$root/bench-out}/ab-windows"
mkdir -p "$windows"

# Each window is made once; a half-made one (interrupted) is made again.
make_window() {
  local name=$1
  shift
  [[ -e "$windows/.done-$name" ]] && return
  rm -rf "${windows:?}/$name"
  "$bin_a" "$@" >/dev/null 2>&1 || { echo "could not make window $name: $*" >&2; exit 1; }
  touch "$windows/.done-$name"
}
for seed in 1 2 3 4 5 6 7 8; do
  make_window "syn$seed" synth --out "$windows/syn$seed" --events $((seed * 20000)) --seed "$seed" --steps
done
make_window synng synth --out "$windows/synng" --events 50000 --seed 9 --steps --without graphs,syncs
n=0
while IFS= read -r trace; do
  n=$((n + 1))
  make_window "k$n" import kineto "$trace" --output "$windows/k$n"
done < <(find "$data/kineto" -name '*.json*' | sort)
make_window dlrm import kineto "$data"/kineto/param_dlrm_8rank/*.json.gz --output "$windows/dlrm"
make_window nsys import nsys "$data"/nsys/*.sqlite --output "$windows/nsys"

param_sets() {
  case $1 in
    critical_path*)
      printf '%s\n' "" "infer_syncs=0" "speedup=gpu_compute=0.5" \
        "speedup=%gemm%=0.8;cpu=0.9;launch_overhead=0" "annotation=%" ;;
    diff) printf -- '--by %s\n' summary step kernel op annotation stream gpu-op ;;
    *) echo "" ;;
  esac
}

# The next window after $1 in the list (the last: itself), for `diff`.
next_window() {
  local all=("$windows"/*/) i
  for i in "${!all[@]}"; do
    [[ "${all[$i]%/}" == "$1" ]] && { local next=${all[$((i + 1))]:-${all[$i]}}; echo "${next%/}"; }
  done
}

# One run: stdout, stderr and the exit code, as one text.
run() {
  local bin=$1 window=$2 report=$3 params=$4
  local args=(report "$report" -w "$window" --format csv)
  [[ -n "$params" ]] && args+=(--param "$params")
  [[ "$report" == diff ]] && args=(diff "$window" "$(next_window "$window")" --format csv $params)
  local code=0 out
  out=$("$bin" "${args[@]}" 2>&1) || code=$?
  printf '%s\nexit %s\n' "$out" "$code"
}

runs=0 differ=0
for window in "$windows"/*/; do
  window=${window%/}
  for report in "${reports[@]}"; do
    while IFS= read -r params; do
      runs=$((runs + 1))
      if ! cmp -s <(run "$bin_a" "$window" "$report" "$params") \
                  <(run "$bin_b" "$window" "$report" "$params"); then
        differ=$((differ + 1))
        echo "differs: $(basename "$window") $report ${params:-(defaults)}"
      fi
    done < <(param_sets "$report")
  done
done
echo "$runs runs ($(ls -d "$windows"/*/ | wc -l) windows), $differ differ"
[[ $differ -eq 0 ]]
