#!/usr/bin/env bash
# Merged and split exports, in one run: a merged export of N synthetic windows (rank=R/) against
# the N single exports one after another (the ratio; 4 and 8 ranks), peak RSS of the merged
# export, and a split export (--max-size) against the unsplit one, in both formats.
#
#   scripts/bench-merge.sh [EVENTS_PER_WINDOW] [RANKS...]     (default 1000000, ranks 4 8)
#
# A build of its own (scripts/bench-build.sh: the profile; TRACESQL_MERGE_RELEASE_TARGET,
# default ~/.cache/tracesql-target-merge-rel), without the cluster feature.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export TRACESQL_RELEASE_TARGET="${TRACESQL_MERGE_RELEASE_TARGET:-$HOME/.cache/tracesql-target-merge-rel}"
events="${1:-1000000}"
shift || true
ranks=("${@:-4 8}")
read -r -a ranks <<<"${ranks[*]}"
out="${TRACESQL_BENCH_DIR:-$root/bench-out}/merge"
mkdir -p "$out"
bench_cargo_args=(--no-default-features)
source scripts/bench-build.sh # $bin, the profile named on stderr

max=0
for n in "${ranks[@]}"; do ((n > max)) && max=$n; done
archive="$out/a$events"
for ((r = 0; r < max; r++)); do
  w="$archive/rank=$r/window_id=000001"
  [[ -d "$w" ]] || "$bin" synth --out "$w" --events "$events" --seed $((r + 1)) >/dev/null 2>&1
done

# "SECONDS MB" of a command (wall, peak RSS).
measure() {
  rm -f "${@: -1}"
  /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >/dev/null 2>&1
  awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$out/time.txt"
}

for ext in json.gz pftrace; do
  for n in "${ranks[@]}"; do
    sub="$out/r$n"
    rm -rf "$sub" && mkdir -p "$sub"
    for ((r = 0; r < n; r++)); do ln -s "$archive/rank=$r" "$sub/rank=$r"; done
    singles=0
    for ((r = 0; r < n; r++)); do
      read -r s _ < <(measure "$bin" export --window "$archive/rank=$r/window_id=000001" --output "$out/single.$ext")
      singles=$(echo "$singles + $s" | bc -l)
    done
    read -r merged_s merged_mb < <(measure "$bin" export --window "$sub" --output "$out/merged.$ext")
    printf '%s %d x %d events: merged %.2f s (peak %s MB), %d single exports %.2f s, ratio %.2f\n' \
      "$ext" "$n" "$events" "$merged_s" "$merged_mb" "$n" "$singles" "$(echo "$merged_s / $singles" | bc -l)"
  done
done

w="$archive/rank=0/window_id=000001"
for ext in json.gz pftrace; do
  read -r whole_s whole_mb < <(measure "$bin" export --window "$w" --output "$out/whole.$ext")
  read -r split_s split_mb < <(measure "$bin" export --window "$w" --output "$out/split.$ext" --max-size 100MB)
  printf '%s split --max-size 100MB: %.2f s (peak %s MB) vs unsplit %.2f s (peak %s MB): overhead %.0f%%\n' \
    "$ext" "$split_s" "$split_mb" "$whole_s" "$whole_mb" "$(echo "($split_s / $whole_s - 1) * 100" | bc -l)"
done
